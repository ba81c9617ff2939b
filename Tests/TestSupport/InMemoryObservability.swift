#if PostgreSQL || Metrics
    import InMemoryTracing
    import Metrics
    import MetricsTestKit
    import Tracing

    /// The test process's metrics and tracing backends: in memory, bootstrapped once (each
    /// system takes one bootstrap per process, and every suite runs in one process). Suites'
    /// stores and authenticators report into them together; a test reads only what names its own
    /// table or flow.
    package enum InMemoryObservability {
        package static let metrics: TestMetrics = {
            let metrics = TestMetrics()
            MetricsSystem.bootstrap(metrics)
            return metrics
        }()
        package static let tracer: InMemoryTracer = {
            let tracer = InMemoryTracer()
            InstrumentationSystem.bootstrap(tracer)
            return tracer
        }()
    }
#endif
