import AuthenticatedRequests
import Foundation

/// Checks a number that came from a server before it becomes a date, a sleep or an integer.
///
/// A value is accepted as a JSON number or as a string holding one in JSON's number syntax
/// (some servers quote `expires_in`). NaN, infinities, values below the field's minimum, and anything that is not a
/// number give ``TokenEndpointError/Code/invalidField``; values above the field's maximum are
/// clamped to it. `null` counts as absent.
enum ServerNumber {
    /// The rule for one field.
    struct Rule {
        let field: String
        /// The smallest value accepted.
        let minimum: Double
        /// Whether ``minimum`` itself is accepted (`expires_in: 0` is; a device code lifetime of 0 is not).
        let includesMinimum: Bool
        /// Larger values are clamped to this.
        let maximum: Double
    }

    /// `expires_in` of a token: at least 0 seconds (an already expired token is legal), at most
    /// ten years.
    static let tokenLifetime = Rule(field: "expires_in", minimum: 0, includesMinimum: true, maximum: 315_360_000)
    /// `expires_in` of device codes: more than 0 seconds, at most one day.
    static let deviceCodeLifetime = Rule(field: "expires_in", minimum: 0, includesMinimum: false, maximum: 86_400)
    /// `interval` of device polling: at least 0 seconds, at most one day (the polling never
    /// sleeps past the device code's deadline anyway).
    static let pollingInterval = Rule(field: "interval", minimum: 0, includesMinimum: true, maximum: 86_400)

    /// The checked value, or `nil` when the field is absent.
    static func seconds(_ value: JSONValue?, _ rule: Rule, in reply: ServerReply) throws -> TimeInterval? {
        let number: Double
        switch value {
        case nil, .null?:
            return nil
        case .number(let value)?:
            number = value
        case .string(let text)? where text.utf8.count <= 64:
            // The JSON number grammar, not `Double(_:)`, which also reads `nan`, `inf` and `0x10`.
            let trimmed = Data(text.trimmingCharacters(in: .whitespaces).utf8)
            guard case .number(let parsed)? = try? JSONValue(parsing: trimmed) else {
                throw invalid(rule, "is not a number", reply)
            }
            number = parsed
        default:
            throw invalid(rule, "is not a number", reply)
        }
        guard number.isFinite else { throw invalid(rule, "is not a finite number", reply) }
        guard number > rule.minimum || (rule.includesMinimum && number == rule.minimum) else {
            throw invalid(rule, rule.includesMinimum ? "is negative" : "is not positive", reply)
        }
        return Swift.min(number, rule.maximum)
    }

    private static func invalid(_ rule: Rule, _ problem: String, _ reply: ServerReply) -> TokenEndpointError {
        TokenEndpointError(.invalidField, "The reply's \(rule.field) \(problem).", reply: reply, field: rule.field)
    }
}
