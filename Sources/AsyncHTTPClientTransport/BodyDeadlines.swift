#if AsyncHTTPClient
    import AuthenticatedRequests
    import NIOCore

    /// The deadlines of the response bodies a client is still collecting, with one event-loop
    /// timer for all of them: the earliest. One per client, on the client's event loops: a client
    /// shut down takes its timers with it, and only its own requests, which fail with it.
    ///
    /// A body that is not complete when its head arrives is common under load (the event loop
    /// hands the head over before it has read the rest). A timer of its own per such body would
    /// wake an event loop twice (scheduled from outside it, then cancelled); here adding and
    /// removing a deadline takes a lock, and a timer is scheduled only when a deadline comes
    /// earlier than every armed one: with one timeout for every request, about once per timeout.
    final class BodyDeadlines: Sendable {
        private struct State {
            var nextID = 0
            var pending: [Int: (deadline: NIODeadline, expire: @Sendable () -> Void)] = [:]
            /// The earliest armed timer's time; `nil` when none is armed.
            var armed: NIODeadline?
            /// How many timers were armed so far.
            var timersArmed = 0
        }

        private let state = Locked(State())
        private let eventLoops: any EventLoopGroup

        /// Deadlines whose timers run on `eventLoops`.
        init(on eventLoops: any EventLoopGroup) {
            self.eventLoops = eventLoops
        }

        /// How many deadlines are pending (for tests).
        var count: Int { state.withLock { $0.pending.count } }
        /// How many timers were armed so far (for tests).
        var timersArmed: Int { state.withLock { $0.timersArmed } }

        /// Calls `expire` at `deadline` (on one of the event loops) unless ``remove(_:)`` is called
        /// first with the returned identifier.
        func add(_ deadline: NIODeadline, expire: @escaping @Sendable () -> Void) -> Int {
            let (id, arm) = state.withLock { state in
                let id = state.nextID
                state.nextID &+= 1
                state.pending[id] = (deadline, expire)
                guard state.armed.map({ deadline < $0 }) ?? true else { return (id, false) }
                state.armed = deadline
                state.timersArmed += 1
                return (id, true)
            }
            if arm { self.arm(at: deadline) }
            return id
        }

        /// Forgets the deadline `id`: its body is complete, or failed.
        func remove(_ id: Int) {
            _ = state.withLock { $0.pending.removeValue(forKey: id) }
        }

        private func arm(at time: NIODeadline) {
            eventLoops.any().scheduleTask(deadline: time) {
                self.fire(at: time)
            }
        }

        /// A timer armed for `time` went off: the deadlines that are due expire, and a timer is
        /// armed for the next one unless an earlier timer is armed already.
        private func fire(at time: NIODeadline) {
            let (due, next) = state.withLock { state -> ([@Sendable () -> Void], NIODeadline?) in
                if state.armed == time { state.armed = nil }
                var due: [@Sendable () -> Void] = []
                var next: NIODeadline?
                for (id, entry) in state.pending {
                    if entry.deadline <= time {
                        due.append(entry.expire)
                        state.pending[id] = nil
                    } else if next.map({ entry.deadline < $0 }) ?? true {
                        next = entry.deadline
                    }
                }
                guard let next, state.armed.map({ next < $0 }) ?? true else { return (due, nil) }
                state.armed = next
                state.timersArmed += 1
                return (due, next)
            }
            for expire in due { expire() }
            if let next { arm(at: next) }
        }
    }
#endif
