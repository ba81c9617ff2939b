import AuthenticatedRequests
import Foundation
import Testing

/// `Retry-After` as seconds or an HTTP-date in each of RFC 9110's three formats; anything else,
/// including bytes that made Foundation's `DateFormatter` trap (found by fuzzing), is ignored.
@Suite struct RetryAfterTests {
    let now = Date(timeIntervalSince1970: 784_111_717)  // Sun, 06 Nov 1994 08:48:37 GMT

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "60", " 60 ",
    ])
    func everyFormatMeansOneMinuteLater(header: String) {
        #expect(RetryAfter.date(fromHeader: header, now: now) == now.addingTimeInterval(60))
    }

    @Test func delaysAreClampedToFiveMinutesAndNeverNegative() {
        #expect(RetryAfter.date(fromHeader: "86400", now: now) == now.addingTimeInterval(300))
        #expect(RetryAfter.date(fromHeader: String(repeating: "9", count: 40), now: now) == now.addingTimeInterval(300))
        #expect(RetryAfter.date(fromHeader: "Sun, 06 Nov 1994 08:00:00 GMT", now: now) == now)
    }

    @Test(arguments: [
        "S \u{310}\u{FFFD}ӱ\u{FFFD}\u{FFFD}9 449:37", "-5", "soon", "1e9", "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "", "Sun, 06 Nov 1994 08:49:37 UTC",
    ])
    func anythingElseIsIgnored(header: String) {
        #expect(RetryAfter.date(fromHeader: header, now: now) == nil)
    }
}
