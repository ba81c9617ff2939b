/// The switches for authorization servers that deviate from the RFCs, all in one place. Each is
/// off by default: the SDK speaks the RFCs, and a switch is turned on for the one server that
/// needs it, with ``ClientAuthentication/with(_:)``:
///
/// ```swift
/// let client = ClientAuthentication.clientSecretBasic(id: "tv-app", secret: secret)
///     .with(.clientIDInBodyWithBasicAuthentication)
/// ```
public struct ServerCompatibility: OptionSet, Sendable, Hashable {
    /// The switches' bits.
    public let rawValue: Int

    /// Creates a set of switches from their bits.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Send `client_id` in the request body as well when the client authenticates with
    /// `client_secret_basic`. RFC 6749 and RFC 8628 do not ask for it; django-oauth-toolkit's
    /// device authorization endpoint requires it. The body carries no secret, so this is still
    /// one authentication method per request.
    public static let clientIDInBodyWithBasicAuthentication = ServerCompatibility(rawValue: 1 << 0)
}
