import Foundation

/// Whether `a` and `b` are the same bytes, in a time that depends on their lengths only, not on
/// where they first differ: for comparing a secret a caller sent (a state, a nonce, a bearer)
/// with the one expected.
package func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let (x, y) = (Array(a.utf8), Array(b.utf8))
    var difference = x.count ^ y.count
    for index in 0..<max(x.count, y.count) {
        let left = index < x.count ? x[index] : 0
        let right = index < y.count ? y[index] : 0
        difference |= Int(left ^ right)
    }
    return difference == 0
}
