import Foundation

/// Where `authreq` keeps its files.
///
/// - Linux: the configuration in `$XDG_CONFIG_HOME/authreq/config.json` (`~/.config` by
///   default); tokens and the endpoint cache in `$XDG_STATE_HOME/authreq` (`~/.local/state`).
/// - macOS: both in `~/Library/Application Support/authreq`, unless the XDG variables are set.
///
/// XDG variables that are not absolute paths are ignored, as the XDG specification says.
package struct Locations: Equatable, Sendable {
    /// The configuration file.
    package let configurationFile: URL
    /// The folder of the token store (a `FileTokenStore`).
    package let tokensDirectory: URL
    /// The folder of the discovered-endpoint cache.
    package let endpointsDirectory: URL

    package init(environment: [String: String]) {
        func absolute(_ name: String) -> URL? {
            guard let path = environment[name], path.hasPrefix("/") else { return nil }
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        let home = absolute("HOME") ?? FileManager.default.homeDirectoryForCurrentUser
        #if os(macOS)
            let support = home.appendingPathComponent("Library/Application Support", isDirectory: true)
            let configurationHome = absolute("XDG_CONFIG_HOME") ?? support
            let stateHome = absolute("XDG_STATE_HOME") ?? support
        #else
            let configurationHome =
                absolute("XDG_CONFIG_HOME") ?? home.appendingPathComponent(".config", isDirectory: true)
            let stateHome = absolute("XDG_STATE_HOME") ?? home.appendingPathComponent(".local/state", isDirectory: true)
        #endif
        configurationFile = configurationHome.appendingPathComponent("authreq/config.json")
        let state = stateHome.appendingPathComponent("authreq", isDirectory: true)
        tokensDirectory = state.appendingPathComponent("tokens", isDirectory: true)
        endpointsDirectory = state.appendingPathComponent("endpoints", isDirectory: true)
    }
}
