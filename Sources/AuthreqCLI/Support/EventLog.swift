import AuthenticatedRequests
import Foundation
import OAuthFlows

/// The `--verbose` printers of one command's authenticators: every event of every authenticator
/// the command made is printed, and ``flush()`` waits for the last one before the command exits
/// (a process that exits while its printer still has events buffered would drop the refresh it
/// just made from the log).
///
/// ``GlobalOptions/reporting(_:)`` sets ``current`` for the command's run and flushes it,
/// whether the command succeeded or failed.
final class EventLog: Sendable {
    /// The log of the command running in this task, if it prints events.
    @TaskLocal static var current: EventLog?

    private let printers = Locked<[(authenticator: OAuthAuthenticator, printer: Task<Void, Never>)]>([])

    /// Prints `authenticator`'s events from now on, one `authreq:` line each.
    func follow(_ authenticator: OAuthAuthenticator, printingTo console: Console) async {
        let events = await authenticator.events()
        let printer = Task {
            for await event in events { console.detail("\(event)") }
        }
        printers.withLock { $0.append((authenticator, printer)) }
    }

    /// Ends every authenticator's event stream and waits until all that was buffered is printed.
    func flush() async {
        let all = printers.withLock { printers in
            defer { printers = [] }
            return printers
        }
        for (authenticator, printer) in all {
            await authenticator.finishEvents()
            await printer.value
        }
    }
}
