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

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), or one of the two obsolete formats of
    /// RFC 9110 §5.6.7 (`Sunday, 06-Nov-94 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`), read by hand
    /// from ASCII: `DateFormatter` on Linux traps on some non-ASCII input (found by fuzzing).
    private static func httpDate(_ text: String) -> Date? {
        guard text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let day: Int?
        let month: Int?
        var year: Int?
        let time: String
        switch words.count {
        case 6 where words[0].hasSuffix(",") && words[5] == "GMT":  // IMF-fixdate
            day = Int(words[1])
            month = monthNumber(words[2])
            year = Int(words[3])
            time = words[4]
        case 4 where words[0].hasSuffix(",") && words[3] == "GMT":  // RFC 850
            let parts = words[1].split(separator: "-").map(String.init)
            guard parts.count == 3 else { return nil }
            day = Int(parts[0])
            month = monthNumber(parts[1])
            year = Int(parts[2]).map { $0 < 50 ? 2000 + $0 : ($0 < 100 ? 1900 + $0 : $0) }
            time = words[2]
        case 5:  // asctime
            month = monthNumber(words[1])
            day = Int(words[2])
            time = words[3]
            year = Int(words[4])
        default:
            return nil
        }
        let clock = time.split(separator: ":").map { Int($0) }
        guard let day, let month, let year, (1...31).contains(day), (1601...9999).contains(year), clock.count == 3,
            let hour = clock[0], let minute = clock[1], let second = clock[2],
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(((days * 24 + hour) * 60 + minute) * 60 + second))
    }

    private static func monthNumber(_ name: String) -> Int? {
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            .firstIndex(of: name).map { $0 + 1 }
    }

    /// Days from 1970-01-01 to the given day of the proleptic Gregorian calendar.
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
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
