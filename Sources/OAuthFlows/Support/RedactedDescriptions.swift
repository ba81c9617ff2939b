import AuthenticatedRequests

// Types that hold a secret show only their redacted description, to `print`, `dump`,
// `String(reflecting:)` and debuggers alike.

extension AuthorizationCodeFlow: CustomDebugStringConvertible, CustomReflectable {
    /// Same as `description`.
    public var debugDescription: String { description }
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension RefreshTokenFlow: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The client and endpoint; the refresh token is redacted.
    public var description: String {
        "RefreshTokenFlow(\(endpoint.client), tokenEndpoint: \(endpoint.url.redactedForDisplay), "
            + "refreshToken: \(Redaction.placeholder)\(scope.map { ", scope: \($0)" } ?? ""))"
    }
    /// Same as `description`.
    public var debugDescription: String { description }
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension ExtensionGrantFlow: CustomDebugStringConvertible, CustomReflectable {
    /// Same as `description`.
    public var debugDescription: String { description }
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension DeviceAuthorization: CustomDebugStringConvertible, CustomReflectable {
    // The mirror also keeps `dump` away from `Date`'s own description, which traps on a date
    // that is not finite.
    /// Same as `description`.
    public var debugDescription: String { description }
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
