#if AsyncHTTPClient
    import AuthenticatedRequests
    import NIOCore
    import NIOEmbedded
    import Testing

    @testable import AsyncHTTPClientTransport

    /// One timer for every body still on its way, on an event loop whose time the test moves.
    @Suite struct BodyDeadlinesTests {
        let loop = EmbeddedEventLoop()

        /// `add`s a deadline `seconds` from the loop's now, recording its expiry in `expired`.
        func add(_ name: String, in seconds: Int64, to deadlines: BodyDeadlines, _ expired: Locked<[String]>) -> Int {
            deadlines.add(loop.now + .seconds(seconds)) { expired.withLock { $0.append(name) } }
        }

        @Test func eachDeadlineExpiresAtItsTimeAndNotBefore() {
            let deadlines = BodyDeadlines(on: loop)
            let expired = Locked<[String]>([])
            _ = add("ten", in: 10, to: deadlines, expired)
            _ = add("thirty", in: 30, to: deadlines, expired)
            _ = add("twenty", in: 20, to: deadlines, expired)
            loop.advanceTime(by: .seconds(9))
            #expect(expired.withLock { $0 }.isEmpty)
            loop.advanceTime(by: .seconds(1))
            #expect(expired.withLock { $0 } == ["ten"])
            loop.advanceTime(by: .seconds(10))
            #expect(expired.withLock { $0 } == ["ten", "twenty"])
            loop.advanceTime(by: .seconds(10))
            #expect(expired.withLock { $0 } == ["ten", "twenty", "thirty"])
            #expect(deadlines.count == 0)
        }

        @Test func aRemovedDeadlineNeverExpires() {
            let deadlines = BodyDeadlines(on: loop)
            let expired = Locked<[String]>([])
            let first = add("first", in: 5, to: deadlines, expired)
            _ = add("second", in: 8, to: deadlines, expired)
            deadlines.remove(first)
            loop.advanceTime(by: .seconds(60))
            #expect(expired.withLock { $0 } == ["second"])
            #expect(deadlines.count == 0)
        }

        @Test func anEarlierDeadlineAddedLaterGetsATimerOfItsOwn() {
            // The armed timer is for 60 s; a body with a 1 s deadline must not wait for it.
            let deadlines = BodyDeadlines(on: loop)
            let expired = Locked<[String]>([])
            _ = add("slow", in: 60, to: deadlines, expired)
            _ = add("quick", in: 1, to: deadlines, expired)
            #expect(deadlines.timersArmed == 2)
            loop.advanceTime(by: .seconds(1))
            #expect(expired.withLock { $0 } == ["quick"])
            loop.advanceTime(by: .seconds(59))
            #expect(expired.withLock { $0 } == ["quick", "slow"])
        }

        @Test func aDeadlineAddedAfterTheTimerWentOffIsStillKept() {
            // The timer of the first deadline is gone once it fired; a deadline added then arms anew.
            let deadlines = BodyDeadlines(on: loop)
            let expired = Locked<[String]>([])
            _ = add("first", in: 2, to: deadlines, expired)
            loop.advanceTime(by: .seconds(3))
            _ = add("second", in: 4, to: deadlines, expired)
            loop.advanceTime(by: .seconds(4))
            #expect(expired.withLock { $0 } == ["first", "second"])
        }

        @Test func oneTimerServesEveryLaterDeadline() {
            // A thousand bodies with the same timeout: the earliest's timer, then one per expiry
            // round, never one per body.
            let deadlines = BodyDeadlines(on: loop)
            let expired = Locked<[String]>([])
            let ids = (0..<1000).map { add("body \($0)", in: 60 + Int64($0 % 3), to: deadlines, expired) }
            for id in ids.dropLast() { deadlines.remove(id) }
            #expect(deadlines.timersArmed == 1)
            loop.advanceTime(by: .seconds(70))
            #expect(expired.withLock { $0 } == ["body 999"])
            #expect(deadlines.count == 0)
            #expect(deadlines.timersArmed == 1, "nothing was left to arm a timer for")
        }
    }
#endif
