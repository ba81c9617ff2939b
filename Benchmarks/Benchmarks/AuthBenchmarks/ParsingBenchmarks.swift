// Issue 11: decoding a 1 MiB adversarial reply with the SDK's strict parser, against
// Foundation's JSONSerialization on the same bytes, in the same iteration.
import AuthenticatedRequests
import Benchmark
import Foundation
import RequestFixtures

/// Three 1 MiB replies an attacker might send: nesting as deep as the parser accepts (30 levels,
/// repeated), a very wide object, and long strings full of escapes and non-ASCII text.
enum AdversarialReplies {
    static let size = 1 << 20

    static func fill(_ prefix: String, _ member: (Int) -> String) -> Data {
        var text = prefix
        var index = 0
        while text.utf8.count < size - 4_096 {
            text += (index == 0 ? "" : ",") + member(index)
            index += 1
        }
        return Data((text + "}").utf8)
    }

    static let deep = fill(#"{"access_token":"at","#) { index in
        #""n\#(index)":"# + String(repeating: "[", count: 30) + "\(index)" + String(repeating: "]", count: 30)
    }
    static let wide = fill(#"{"access_token":"at","#) { index in #""field\#(index)":\#(index).5"# }
    static let strings = fill(#"{"access_token":"at","#) { index in
        #""s\#(index)":""# + String(repeating: #"caf\u00e9 \"q\" é\n\t"#, count: 400) + #"""#
    }
    static let all: [(name: String, data: Data)] = [
        ("deep nesting", deep), ("wide object", wide), ("long strings", strings),
    ]
}

func parsingBenchmarks() {
    let metrics = AdversarialReplies.all.flatMap { reply in
        [
            BenchmarkMetric.custom(
                "parse µs JSONValue: \(reply.name)", polarity: .prefersSmaller, useScalingFactor: false),
            BenchmarkMetric.custom(
                "parse µs JSONSerialization: \(reply.name)", polarity: .prefersSmaller, useScalingFactor: false),
            BenchmarkMetric.custom(
                "parse ratio x1000: \(reply.name)", polarity: .prefersSmaller, useScalingFactor: false),
        ]
    }
    let order = Locked(0)
    Benchmark(
        "Parsing: 1 MiB adversarial replies, interleaved",
        configuration: .init(
            metrics: [.wallClock, .throughput] + metrics, maxDuration: .seconds(10), maxIterations: 40)
    ) { benchmark in
        let sdkFirst = order.next() % 2 == 0
        for (index, reply) in AdversarialReplies.all.enumerated() {
            var micros = [0, 0]
            for variant in sdkFirst ? [0, 1] : [1, 0] {
                let begin = ContinuousClock.now
                if variant == 0 {
                    blackHole(try JSONValue(parsing: reply.data))
                } else {
                    blackHole(try JSONSerialization.jsonObject(with: reply.data))
                }
                micros[variant] = Int((ContinuousClock.now - begin) / .microseconds(1))
            }
            benchmark.measurement(metrics[index * 3], micros[0])
            benchmark.measurement(metrics[index * 3 + 1], micros[1])
            benchmark.measurement(metrics[index * 3 + 2], micros[0] * 1000 / max(micros[1], 1))
        }
    }
}
