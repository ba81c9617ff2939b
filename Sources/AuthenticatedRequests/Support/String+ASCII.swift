extension String {
    /// Whether this string equals `other` when ASCII letters are compared without case.
    ///
    /// For protocol tokens (header names, schemes, token types), which are ASCII. Foundation's
    /// `caseInsensitiveCompare` costs ~0.7 µs per call on Linux, and `lowercased()` builds a string.
    package func isEqualIgnoringASCIICase(to other: String) -> Bool {
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
    package var isPrintableASCII: Bool {
        var bytes = self
        return bytes.withUTF8 { bytes in
            for byte in bytes where (byte < 0x20 && byte != 0x09) || byte > 0x7E { return false }
            return true
        }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool {
        (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
