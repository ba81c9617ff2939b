import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a resource asks for when the token is valid but not enough: more scope
/// (`insufficient_scope`, RFC 6750 §3.1), a stronger or fresher sign-in
/// (`insufficient_user_authentication`, RFC 9470 §3), or an approval of particular
/// authorization details (`insufficient_authorization_details`, with the details asked for as a
/// JSON array in the challenge's `authorization_details` parameter), read from its
/// `WWW-Authenticate` challenge.
public struct StepUpRequirement: Sendable, Hashable, CustomStringConvertible {
    /// The challenge's error code.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The registered error code.
        public let rawValue: String
        /// `insufficient_scope`: the token lacks a scope the request needs.
        public static let insufficientScope = Reason(rawValue: "insufficient_scope")
        /// `insufficient_user_authentication`: the user must sign in again, more strongly or more
        /// recently (RFC 9470).
        public static let insufficientUserAuthentication = Reason(rawValue: "insufficient_user_authentication")
        /// `insufficient_authorization_details`: the token lacks an approval of the
        /// ``StepUpRequirement/authorizationDetails`` the request needs (RFC 9396 details, e.g. a
        /// payment the user has not approved yet).
        public static let insufficientAuthorizationDetails = Reason(rawValue: "insufficient_authorization_details")
        /// The registered error code.
        public var description: String { rawValue }
    }

    /// Why the resource refused the token.
    public let reason: Reason
    /// The scope the resource needs (`scope`), space-separated, if it said.
    public let scope: String?
    /// The authentication context classes it accepts (`acr_values`, RFC 9470), most preferred first.
    public let acrValues: [String]
    /// The longest time since the user's authentication it accepts (`max_age`, RFC 9470), in seconds.
    public let maxAge: Int?
    /// The authorization details it needs approved (RFC 9396), if it said.
    public let authorizationDetails: [AuthorizationDetail]

    /// Creates a requirement.
    public init(
        reason: Reason, scope: String? = nil, acrValues: [String] = [], maxAge: Int? = nil,
        authorizationDetails: [AuthorizationDetail] = []
    ) {
        self.reason = reason
        self.scope = scope
        self.acrValues = acrValues
        self.maxAge = maxAge
        self.authorizationDetails = authorizationDetails
    }

    /// The scopes of `granted` followed by those of ``scope`` that it lacks: what a step-up asks
    /// for. `nil` when both are empty.
    public func scope(addedTo granted: String?) -> String? {
        var scopes: [String] = []
        for item in [granted, scope].compactMap({ $0 }).flatMap({ $0.split(separator: " ") })
        where !scopes.contains(String(item)) {
            scopes.append(String(item))
        }
        return scopes.isEmpty ? nil : scopes.joined(separator: " ")
    }

    /// The step-up `challenge` asks for, if it asks for one.
    public init?(challenge: AuthenticationChallenge) {
        guard let error = challenge.error else { return nil }
        switch error {
        case Reason.insufficientScope.rawValue:
            self.init(reason: .insufficientScope, scope: challenge.parameters["scope"])
        case Reason.insufficientUserAuthentication.rawValue:
            self.init(
                reason: .insufficientUserAuthentication,
                scope: challenge.parameters["scope"],
                acrValues: challenge.parameters["acr_values"]?.split(separator: " ").map(String.init) ?? [],
                maxAge: challenge.parameters["max_age"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil })
        case Reason.insufficientAuthorizationDetails.rawValue:
            // The details as a JSON array; a malformed one is not a requirement anyone can meet.
            var details: [AuthorizationDetail] = []
            if let parameter = challenge.parameters["authorization_details"] {
                guard let json = try? JSONValue(parsing: Data(parameter.utf8), maximumDepth: 16),
                    let list = try? AuthorizationDetail.list(from: json), !list.isEmpty
                else { return nil }
                details = list
            }
            self.init(
                reason: .insufficientAuthorizationDetails, scope: challenge.parameters["scope"],
                authorizationDetails: details)
        default:
            return nil
        }
    }

    /// The step-up that a `401` or `403` response asks for, if any.
    public init?(response: ResponseHead) {
        guard response.statusCode == 401 || response.statusCode == 403,
            let header = response.value(forHTTPHeaderField: "WWW-Authenticate")
        else { return nil }
        guard let requirement = AuthenticationChallenge.parse(header).lazy.compactMap(Self.init(challenge:)).first
        else { return nil }
        self = requirement
    }

    /// `insufficient_scope (scope: a b)`, `insufficient_user_authentication (acr_values: …, max_age: …)`,
    /// `insufficient_authorization_details (authorization_details: payment_initiation)`: the
    /// details' types only.
    public var description: String {
        var details: [String] = []
        if let scope { details.append("scope: \(scope)") }
        if !acrValues.isEmpty { details.append("acr_values: \(acrValues.joined(separator: " "))") }
        if let maxAge { details.append("max_age: \(maxAge)") }
        if !authorizationDetails.isEmpty {
            details.append("authorization_details: \(authorizationDetails.map(\.type).joined(separator: ", "))")
        }
        return details.isEmpty ? reason.rawValue : "\(reason) (\(details.joined(separator: ", ")))"
    }
}

/// A resource asked for a step-up that could not be given: the context cannot ask the user (a
/// server, a non-interactive command), the flow cannot step up, or the resource refused the
/// stepped-up token too. It carries what was required; no loop follows.
public struct StepUpError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// Why the step-up did not happen. More may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The user must take part and this context cannot ask.
        public static let interactionRequired = Code("interaction required")
        /// The resource refused the token obtained by the step-up, asking again.
        public static let refusedAfterStepUp = Code("refused after step-up")
        /// The flow has no way to step up.
        public static let unsupported = Code("unsupported")
        /// The code's name.
        public var description: String { name }
    }

    /// Why.
    public let code: Code
    /// What the resource required.
    public let requirement: StepUpRequirement
    /// The resource, without query.
    public let url: URL?

    /// Creates an error.
    public init(_ code: Code, requirement: StepUpRequirement, url: URL? = nil) {
        self.code = code
        self.requirement = requirement
        self.url = url
    }

    /// One sentence: what was required, where, and why it was not given.
    public var description: String {
        let place = url?.redactedForDisplay ?? "The resource"
        switch code {
        case .interactionRequired:
            return "StepUpError(\(code)): \(place) requires \(requirement), and this context cannot ask the user."
        case .refusedAfterStepUp:
            return "StepUpError(\(code)): \(place) still requires \(requirement) after a step-up; not retried again."
        default:
            return "StepUpError(\(code)): \(place) requires \(requirement), which this flow cannot obtain."
        }
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
