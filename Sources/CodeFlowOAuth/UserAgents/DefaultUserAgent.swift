import Foundation

/// Which user agent ``CodeFlowManager`` uses when the app names none, per platform.
///
/// The choice is a table (``choice(for:)``) that the tests check on Linux for every platform;
/// the `#if` below picks the same row at compile time, so a platform without a default has no
/// initializer without a user agent: leaving it out is a compile error there, not a failure at
/// sign-in.
package enum DefaultUserAgent: Equatable, Sendable {
    /// ``LoopbackUserAgent`` with ``SystemBrowserOpener``: the system browser and a redirect to
    /// `http://127.0.0.1:<port>` (RFC 8252 §7.3).
    case loopback
    /// `WebAuthenticationSessionUserAgent` (`ASWebAuthenticationSession`): the system's sign-in
    /// sheet, sharing the browser's cookies unless ephemeral.
    case webAuthenticationSession
    /// No default: the app passes a user agent (e.g. ``CustomSchemeUserAgent``).
    case none

    /// The platforms the package builds for.
    package enum Platform: CaseIterable, Sendable {
        case macOS, linux, iOS, macCatalyst, visionOS, tvOS, watchOS, windows, android, other
    }

    /// The default user agent of `platform`.
    package static func choice(for platform: Platform) -> DefaultUserAgent {
        switch platform {
        // Desktops have a browser the user already trusts and can receive on loopback.
        case .macOS, .linux: .loopback
        // Phones and headsets have ASWebAuthenticationSession and no loopback sign-in pattern.
        case .iOS, .macCatalyst, .visionOS: .webAuthenticationSession
        // tvOS and watchOS have no browser the user could type a password into comfortably (the
        // device flow suits them); Windows and Android have neither API here.
        case .tvOS, .watchOS, .windows, .android, .other: .none
        }
    }

    /// The platform this code was compiled for.
    package static var currentPlatform: Platform {
        #if targetEnvironment(macCatalyst)
            .macCatalyst
        #elseif os(macOS)
            .macOS
        #elseif os(Linux)
            .linux
        #elseif os(iOS)
            .iOS
        #elseif os(visionOS)
            .visionOS
        #elseif os(tvOS)
            .tvOS
        #elseif os(watchOS)
            .watchOS
        #elseif os(Windows)
            .windows
        #elseif os(Android)
            .android
        #else
            .other
        #endif
    }

    #if os(macOS) || os(Linux)
        /// Whether this platform has a default user agent: ``CodeFlowManager/init(configuration:context:)``
        /// exists exactly when it is `true`.
        package static let isAvailable = true

        /// The default user agent of this platform.
        package static func make() -> any AuthorizationUserAgent { LoopbackUserAgent() }
    #elseif canImport(AuthenticationServices) && (os(iOS) || os(visionOS))
        package static let isAvailable = true

        package static func make() -> any AuthorizationUserAgent { WebAuthenticationSessionUserAgent() }
    #else
        package static let isAvailable = false
    #endif
}
