import Foundation

extension Date {
    /// `2027-01-15 08:00:00 +0000`, or the raw number when the date is not finite or out of
    /// range: `Date.description` traps on such dates.
    package var safeDescription: String {
        let seconds = timeIntervalSince1970
        guard seconds.isFinite, Swift.abs(seconds) < 253_402_300_799 else { return "Date(\(seconds))" }
        return description
    }
}
