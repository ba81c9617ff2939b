#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import Testing

    @testable import PostgresTokenStore

    /// A write whose caller stopped waiting still lands before any later write of the entry, so it
    /// can never overwrite a newer, acknowledged one (what `connectionsCutMidWriteLeaveNoTornOrLostEntry`
    /// saw once against a real database with connections cut).
    @Suite struct WriteOrderTests {
        @Test func aWriteGivenUpOnLandsBeforeTheNextOneNotAfterIt() async throws {
            let order = WriteOrder()
            let landed = Locked<[String]>([])
            let release = OneShot<Void>()
            // The first write's connection is stuck; its caller gives up after 50 ms.
            await #expect(throws: Bounded.TimedOut.self) {
                try await order.run("entry", within: 0.05) {
                    try await release.value()
                    landed.withLock { $0.append("first") }
                }
            }
            // The second write waits for the first, which is freed while it waits.
            let second = Task {
                try await order.run("entry", within: 30) { landed.withLock { $0.append("second") } }
            }
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(landed.withLock { $0 }.isEmpty, "the second write did not overtake the stuck first one")
            release.finish(with: .success(()))
            try await second.value
            #expect(landed.withLock { $0 } == ["first", "second"])
        }

        @Test func writesOfOtherEntriesDoNotWait() async throws {
            let order = WriteOrder()
            let release = OneShot<Void>()
            let stuck = Task { try await order.run("a", within: 30) { try await release.value() } }
            try await order.run("b", within: 5) {}
            release.finish(with: .success(()))
            try await stuck.value
        }
    }
#endif
