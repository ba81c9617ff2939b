import Foundation

/// One block of a PEM file (RFC 7468): its label (`CERTIFICATE`, `PRIVATE KEY`, `EC PRIVATE KEY`…)
/// and the DER bytes its base64 text encodes.
package struct PEMDocument: Sendable, Equatable {
    /// The label between `-----BEGIN ` and `-----`.
    package var label: String
    /// The decoded bytes.
    package var der: Data

    /// The largest PEM text read: far above any certificate chain or key.
    package static let maximumSize = 1 << 20

    /// Every block of `text`, in order; text outside blocks (comments, `openssl`'s bag attributes)
    /// is skipped, as RFC 7468 §2 allows.
    ///
    /// - Throws: ``ClientIdentityError`` `.malformed` for a block that does not end, whose end label
    ///   differs from its start, or whose body is not base64; and for text over ``maximumSize``.
    package static func blocks(in text: Data) throws -> [PEMDocument] {
        guard text.count <= maximumSize else {
            throw ClientIdentityError(.malformed, "The PEM text is larger than \(maximumSize) bytes.")
        }
        guard let string = String(data: text, encoding: .utf8) else {
            throw ClientIdentityError(.malformed, "The PEM text is not UTF-8.")
        }
        var documents: [PEMDocument] = []
        var label: String?
        var body = ""
        for rawLine in string.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if let begin = Self.label(of: line, marker: "BEGIN") {
                guard label == nil else {
                    throw ClientIdentityError(.malformed, "A PEM block starts inside another.")
                }
                label = begin
                body = ""
            } else if let end = Self.label(of: line, marker: "END") {
                guard let open = label, open == end else {
                    throw ClientIdentityError(.malformed, "A PEM block ends with another label than it began.")
                }
                guard let der = Data(base64Encoded: body), !der.isEmpty else {
                    throw ClientIdentityError(.malformed, "The body of a PEM \(open) block is not base64.")
                }
                documents.append(PEMDocument(label: open, der: der))
                label = nil
            } else if label != nil {
                guard !line.contains(":") else {
                    // RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`): an encrypted legacy key.
                    throw ClientIdentityError(
                        .malformed, "The PEM block has headers (an encrypted legacy key): convert it to PKCS #8.")
                }
                body += line
            }
        }
        guard label == nil else { throw ClientIdentityError(.malformed, "A PEM block does not end.") }
        return documents
    }

    /// `X` of `-----BEGIN X-----` (or `END`), or `nil` when the line is not such a boundary.
    private static func label(of line: String, marker: String) -> String? {
        let prefix = "-----\(marker) "
        guard line.hasPrefix(prefix), line.hasSuffix("-----"), line.count >= prefix.count + 5 else { return nil }
        return String(line.dropFirst(prefix.count).dropLast(5))
    }
}
