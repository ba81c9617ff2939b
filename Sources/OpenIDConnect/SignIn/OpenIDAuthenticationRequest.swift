import Foundation

/// The OpenID Connect parameters of an authorization request (Core §3.1.2.1) besides `nonce`,
/// which the sign-in always generates.
public struct OpenIDAuthenticationRequest: Sendable {
    /// `prompt`: e.g. `login` to ask for the password again, `consent`, `select_account`, `none`.
    public var prompt: String?
    /// `max_age`, in seconds: the ID token's `auth_time` must be no older.
    public var maxAge: TimeInterval?
    /// `login_hint`: the user's identifier, to prefill.
    public var loginHint: String?
    /// `ui_locales`: preferred languages, space-separated BCP 47 tags.
    public var uiLocales: String?
    /// `acr_values`: requested authentication context classes, space-separated.
    public var acrValues: String?
    /// Other parameters, sent as given.
    public var additionalParameters: [String: String]

    /// Creates the parameters.
    public init(
        prompt: String? = nil, maxAge: TimeInterval? = nil, loginHint: String? = nil, uiLocales: String? = nil,
        acrValues: String? = nil, additionalParameters: [String: String] = [:]
    ) {
        self.prompt = prompt
        self.maxAge = maxAge
        self.loginHint = loginHint
        self.uiLocales = uiLocales
        self.acrValues = acrValues
        self.additionalParameters = additionalParameters
    }

    /// The parameters with `nonce`.
    func parameters(nonce: String) -> [String: String] {
        var parameters = additionalParameters
        parameters["nonce"] = nonce
        if let prompt { parameters["prompt"] = prompt }
        if let maxAge { parameters["max_age"] = String(Int(maxAge.rounded(.down))) }
        if let loginHint { parameters["login_hint"] = loginHint }
        if let uiLocales { parameters["ui_locales"] = uiLocales }
        if let acrValues { parameters["acr_values"] = acrValues }
        return parameters
    }
}
