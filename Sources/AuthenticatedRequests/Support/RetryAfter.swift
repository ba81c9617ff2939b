import Foundation

/// Reads an HTTP `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
package enum RetryAfter {
    /// The longest wait honoured, in seconds: 300. A server that asks for more is retried after
    /// five minutes, so a hostile or broken header cannot lock a client out for a day.
    package static let maximumDelay: TimeInterval = 300

    /// The date until which to wait, or `nil` when the header is absent or unreadable. The delay
    /// is clamped to `0...maximumDelay`.
    package static func date(fromHeader value: String?, now: Date) -> Date? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty, value.utf8.count <= 64 else {
            return nil
        }
        let delay: TimeInterval
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Digits only: an overflow is just a very long delay.
            delay = Int(value).map(TimeInterval.init) ?? maximumDelay
        } else if let date = httpDate(value) {
            delay = date.timeIntervalSince(now)
        } else {
            return nil
        }
        guard delay.isFinite else { return nil }
        return now.addingTimeInterval(Swift.min(Swift.max(delay, 0), maximumDelay))
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) or one of the two obsolete formats.
    private static func httpDate(_ text: String) -> Date? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}

/// An error from a server that asked the client to wait before trying again (HTTP `Retry-After`
/// on a `429` or `503`).
///
/// When a refresh fails with such an error, the ``AuthenticationInterceptor`` does not send
/// another refresh before ``retryAfter``: requests that need one fail at once with the
/// server's error.
public protocol RetryAfterError: Error {
    /// Until when the server asked not to be called again; `nil` when it did not ask.
    var retryAfter: Date? { get }
}
