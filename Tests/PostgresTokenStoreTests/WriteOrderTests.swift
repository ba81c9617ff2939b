#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import Testing

    @testable import PostgresTokenStore

    /// A write whose caller stopped waiting never lands over a later write of the entry (what
    /// `connectionsCutMidWriteLeaveNoTornOrLostEntry` saw once against a real database with
    /// connections cut), and a write that never finishes (a statement PostgresNIO left unanswered
    /// after its connection was closed) does not hold up the entry's later writes (what
    /// `aWriteStuckOnAKilledConnectionHoldsUpNoLaterWrite` saw: every later write timed out).
    /// Here `mayCommit()` stands for the transaction's `COMMIT`.
    @Suite struct WriteOrderTests {
        @Test func aWriteGivenUpOnBeforeItsCommitNeverLandsAndDoesNotHoldUpTheNext() async throws {
            let order = WriteOrder()
            let landed = Locked<[String]>([])
            let release = OneShot<Void>()
            let firstOutcome = OneShot<Void>()
            // The first write's statement is stuck; its caller gives up after 50 ms.
            await #expect(throws: Bounded.TimedOut.self) {
                try await order.run("entry", within: 0.05) { write in
                    do {
                        try await release.value()
                        try write.mayCommit()
                        landed.withLock { $0.append("first") }
                        firstOutcome.finish(with: .success(()))
                    } catch {
                        firstOutcome.finish(with: .failure(error))
                        throw error
                    }
                }
            }
            // The second write does not wait for the stuck one.
            try await order.run("entry", within: 30) { write in
                try write.mayCommit()
                landed.withLock { $0.append("second") }
            }
            #expect(landed.withLock { $0 } == ["second"])
            // The first one's statement answers at last: it may not commit.
            release.finish(with: .success(()))
            await #expect(throws: WriteOrder.Write.GivenUp.self) { try await firstOutcome.value() }
            #expect(landed.withLock { $0 } == ["second"])
        }

        @Test func aWriteWaitsForTheRunningPreviousWriteToAskToCommit() async throws {
            let order = WriteOrder()
            let landed = Locked<[String]>([])
            let release = OneShot<Void>()
            let first = Task {
                try await order.run("entry", within: 30) { write in
                    try await release.value()
                    try write.mayCommit()
                    landed.withLock { $0.append("first") }
                }
            }
            try await Task.sleep(nanoseconds: 20_000_000)
            let second = Task {
                try await order.run("entry", within: 30) { write in
                    try write.mayCommit()
                    landed.withLock { $0.append("second") }
                }
            }
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(landed.withLock { $0 }.isEmpty, "the second write did not overtake the first")
            release.finish(with: .success(()))
            try await first.value
            try await second.value
            #expect(landed.withLock { $0 } == ["first", "second"])
        }

        @Test func aWriteGivenUpAfterAskingToCommitStillLetsTheNextOneStart() async throws {
            let order = WriteOrder()
            let release = OneShot<Void>()
            // Its COMMIT never answers (its connection was closed): asking to commit, it held the
            // row until the server ended its transaction, so the next write may start.
            await #expect(throws: Bounded.TimedOut.self) {
                try await order.run("entry", within: 0.05) { write in
                    try write.mayCommit()
                    try await release.value()
                }
            }
            let second = Locked(false)
            try await order.run("entry", within: 30) { write in
                try write.mayCommit()
                second.withLock { $0 = true }
            }
            #expect(second.withLock { $0 })
            release.finish(with: .success(()))
        }

        @Test func writesOfOtherEntriesDoNotWait() async throws {
            let order = WriteOrder()
            let release = OneShot<Void>()
            let stuck = Task { try await order.run("a", within: 30) { _ in try await release.value() } }
            try await order.run("b", within: 5) { _ in }
            release.finish(with: .success(()))
            try await stuck.value
        }
    }
#endif
