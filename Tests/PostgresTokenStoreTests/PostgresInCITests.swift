import Foundation
import Testing

/// Guards against a silent skip: in CI (`CI` set) the PostgreSQL tests must be built (the
/// `PostgreSQL` trait) and have their servers (`Scripts/test` starts them).
@Test func postgresTestsRunInCI() {
    let environment = ProcessInfo.processInfo.environment
    guard environment["CI"] != nil else { return }
    #if PostgreSQL
        #expect(environment["AUTHREQ_TEST_POSTGRES"] != nil, "CI must run the PostgreSQL tests: use Scripts/test")
    #else
        Issue.record("CI must build the PostgreSQL tests: enable the PostgreSQL trait (Scripts/test does)")
    #endif
}
