extension String {
    /// Whether this string equals `other` when ASCII letters are compared without case.
    ///
    /// For protocol tokens (header names, schemes, token types), which are ASCII. Foundation's
    /// `caseInsensitiveCompare` costs ~0.7 µs per call on Linux, and `lowercased()` builds a string.
    package func isEqualIgnoringASCIICase(to other: String) -> Bool {
        // Most names compared differ in length, which a native string knows without a scan.
        guard utf8.count == other.utf8.count else { return false }
        var lhs = self
        var rhs = other
        return lhs.withUTF8 { lhs in
            rhs.withUTF8 { rhs in
                guard lhs.count == rhs.count else { return false }
                for index in lhs.indices where lhs[index] != rhs[index] {
                    // ASCII letters and their capitals differ only in bit 0x20.
                    guard lhs[index].isASCIILetter, lhs[index] ^ 0x20 == rhs[index] else { return false }
                }
                return true
            }
        }
    }

    /// Whether every byte is printable ASCII or a tab: a header value no HTTP stack rejects.
    ///
    /// Eight bytes at a time while they are all of `0x20...0x7E` (a token or a proof is hundreds
    /// of bytes, checked on every request), byte by byte from the first word that is not.
    package var isPrintableASCII: Bool {
        var bytes = self
        return bytes.withUTF8 { bytes in
            var start = 0
            if let base = bytes.baseAddress {
                let ones: UInt64 = 0x0101_0101_0101_0101
                let high: UInt64 = 0x8080_8080_8080_8080
                while start + 8 <= bytes.count {
                    let word = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: start, as: UInt64.self)
                    // Non-zero when some byte has its high bit, is below 0x20, or is 0x7F (the
                    // "has a byte less than n" and "has a zero byte" tests, exact for bytes < 0x80).
                    let below = (word &- 0x20 &* ones) & ~word & high
                    let delete = word ^ (0x7F &* ones)
                    let hasDelete = (delete &- ones) & ~delete & high
                    guard (word & high) | below | hasDelete == 0 else { break }
                    start += 8
                }
            }
            for byte in bytes[start...] where (byte < 0x20 && byte != 0x09) || byte > 0x7E { return false }
            return true
        }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool {
        (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
