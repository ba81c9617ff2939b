import Foundation

/// One entry of `authorization_details` (RFC 9396, Rich Authorization Requests): what the client
/// asks to be allowed to do, typed by ``type``, with the members that type defines.
///
/// ```swift
/// let payment = AuthorizationDetail(type: "payment_initiation", fields: [
///     "instructedAmount": .object(["currency": .string("EUR"), "amount": .string("123.50")]),
///     "creditorName": .string("Merchant A"),
/// ])
/// ```
///
/// Sent with the authorization request (and its pushed form) and the code exchange; what the
/// server granted comes back in the token response and is kept with the token
/// (``OAuthToken/authorizationDetails``).
public struct AuthorizationDetail: Sendable, Hashable, Codable {
    /// `type`: names the kind of authorization and so which other members it has.
    public var type: String
    /// Every member of the entry but `type`, as sent or received.
    public var fields: [String: JSONValue]

    /// Creates an entry of `type` with `fields` (a `type` among them is ignored).
    public init(type: String, fields: [String: JSONValue] = [:]) {
        self.type = type
        self.fields = fields.filter { $0.key != "type" }
    }

    /// `locations`, `actions`, `datatypes`, `privileges` (RFC 9396 §2.2): the common members that
    /// are arrays of strings; `nil` when absent or of another shape.
    public func strings(_ member: String) -> [String]? {
        guard case .array(let values)? = fields[member] else { return nil }
        let strings = values.compactMap(\.stringValue)
        return strings.count == values.count ? strings : nil
    }

    /// `identifier` (RFC 9396 §2.2).
    public var identifier: String? { fields["identifier"]?.stringValue }

    /// The entry as the JSON object it is sent as.
    public var jsonValue: JSONValue { .object(fields.merging(["type": .string(type)]) { _, new in new }) }

    /// Reads an entry: a JSON object whose `type` is a non-empty string.
    ///
    /// - Throws: ``AuthorizationDetailError`` naming what is wrong.
    public init(json: JSONValue) throws {
        guard case .object(let object) = json else {
            throw AuthorizationDetailError("an authorization_details entry is not a JSON object")
        }
        guard let type = object["type"]?.stringValue, !type.isEmpty else {
            throw AuthorizationDetailError("an authorization_details entry has no type string")
        }
        self.init(type: type, fields: object)
    }

    /// Reads `authorization_details`: a JSON array of entries.
    ///
    /// - Throws: ``AuthorizationDetailError`` for anything else.
    public static func list(from json: JSONValue) throws -> [AuthorizationDetail] {
        guard case .array(let entries) = json else {
            throw AuthorizationDetailError("authorization_details is not a JSON array")
        }
        return try entries.map(AuthorizationDetail.init(json:))
    }

    /// `details` as the `authorization_details` parameter: a JSON array, members in a stable order.
    public static func parameter(_ details: [AuthorizationDetail]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(JSONValue.array(details.map(\.jsonValue))), as: UTF8.self)
    }

    /// Decodes the JSON object it encodes to.
    public init(from decoder: any Decoder) throws {
        try self.init(json: try JSONValue(from: decoder))
    }

    /// Encodes the JSON object, `type` included.
    public func encode(to encoder: any Encoder) throws {
        try jsonValue.encode(to: encoder)
    }
}

/// `authorization_details` that is not what RFC 9396 §2 defines.
public struct AuthorizationDetailError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let message: String

    init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { "AuthorizationDetailError: \(message)" }
}

extension OAuthToken {
    /// The `authorization_details` the server granted (RFC 9396 §7), kept with the token and its
    /// store; `nil` when the token response had none. The token endpoint refuses a response whose
    /// `authorization_details` is malformed, so a token from it reads here as sent.
    public var authorizationDetails: [AuthorizationDetail]? {
        additionalFields["authorization_details"].flatMap { try? AuthorizationDetail.list(from: $0) }
    }
}
