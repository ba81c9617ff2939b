import Foundation

/// Opens a URL in a browser.
public protocol BrowserOpener: Sendable {
    /// Opens `url`. Throws when no browser could be opened.
    func open(_ url: URL) async throws
}
