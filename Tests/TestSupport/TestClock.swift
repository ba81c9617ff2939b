import AuthenticatedRequests
import Foundation

/// A clock that moves only when a test says so.
package final class TestClock: WallClock {
    private let date: Locked<Date>

    package init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        date = Locked(start)
    }

    package var now: Date { date.withLock { $0 } }

    package func advance(by seconds: TimeInterval) {
        date.withLock { $0 += seconds }
    }
}

/// A one-shot gate: `wait()` suspends until `open()`.
package actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package init() {}

    package func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    package func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}

/// Polls `condition`, yielding between checks, up to a bounded number of turns.
package func eventually(_ turns: Int = 10_000, _ condition: @Sendable () async -> Bool) async -> Bool {
    for _ in 0..<turns {
        if await condition() { return true }
        await Task.yield()
    }
    return await condition()
}
