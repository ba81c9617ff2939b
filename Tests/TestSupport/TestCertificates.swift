import Foundation

/// Certificates and keys made for one test with `openssl` (Debian's package, as the end-to-end
/// scripts use): none is ever committed. `make` fails, never skips, when `openssl` is missing.
package enum TestCertificates {
    /// A folder with `NAME.pem` and `NAME-key.pem` for each name: a self-signed P-256 certificate
    /// and its PKCS #8 key, subject `CN=NAME`.
    package static func make(_ names: [String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "authreq-certificates-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in names {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            openssl.arguments = [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-subj", "/CN=\(name)", "-days", "1", "-keyout", folder.appendingPathComponent("\(name)-key.pem").path,
                "-out", folder.appendingPathComponent("\(name).pem").path,
            ]
            openssl.standardError = FileHandle.nullDevice
            openssl.standardOutput = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            guard openssl.terminationStatus == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl failed for \(name)"])
            }
        }
        return folder
    }

    /// The base64 body of a PEM file: what must never appear in a description or an error.
    package static func body(of file: URL) throws -> String {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }
            .joined()
    }
}
