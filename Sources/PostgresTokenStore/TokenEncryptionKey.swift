#if PostgreSQL
    import AuthenticatedRequests
    import Crypto
    import Foundation

    /// A 256-bit AES-GCM key that seals stored credentials, with an identifier stored next to each
    /// entry so that entries sealed with an older key can still be opened during a key rotation.
    ///
    /// ```swift
    /// // 32 random bytes, kept in your secret manager, Base64-encoded.
    /// let key = try TokenEncryptionKey(id: "2026-11", base64: environment["TOKEN_KEY"] ?? "")
    /// ```
    public struct TokenEncryptionKey: Sendable, CustomStringConvertible, CustomReflectable {
        /// The key's name, stored with every entry it seals (not secret).
        public let id: String
        /// The key's 32 bytes (`SymmetricKey` is not `Sendable` in swift-crypto 3).
        private let bytes: Data
        private var key: SymmetricKey { SymmetricKey(data: bytes) }

        /// Creates a key from 256 bits.
        /// - Throws: ``TokenEncryptionKeyError`` when `key` is not 256 bits or `id` is empty.
        public init(id: String, key: SymmetricKey) throws {
            guard !id.isEmpty, id.utf8.count <= 64 else {
                throw TokenEncryptionKeyError(message: "A key id must have 1 to 64 bytes.")
            }
            guard key.bitCount == 256 else {
                throw TokenEncryptionKeyError(message: "Key '\(id)' has \(key.bitCount) bits; AES-256-GCM needs 256.")
            }
            self.id = id
            self.bytes = key.withUnsafeBytes { Data($0) }
        }

        /// Creates a key from 32 bytes in Base64.
        /// - Throws: ``TokenEncryptionKeyError`` when the text is not Base64 of 32 bytes.
        public init(id: String, base64: String) throws {
            guard let bytes = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw TokenEncryptionKeyError(message: "Key '\(id)' is not valid Base64.")
            }
            try self.init(id: id, key: SymmetricKey(data: bytes))
        }

        /// A new random key, e.g. to print once and keep in a secret manager.
        public static func random(id: String) throws -> TokenEncryptionKey {
            try TokenEncryptionKey(id: id, key: SymmetricKey(size: .bits256))
        }

        /// The key's bytes in Base64, to keep in a secret manager. Never log it.
        public var base64: String { bytes.base64EncodedString() }

        /// `TokenEncryptionKey(id)`: never the key.
        public var description: String { "TokenEncryptionKey(\(id))" }

        /// The id only, so that `dump` and debuggers never show the key.
        public var customMirror: Mirror { Mirror(self, children: ["id": id, "key": "<redacted>"]) }

        /// `plaintext` sealed (nonce, ciphertext and tag), bound to `context` (table and entry key),
        /// so that a sealed entry copied to another row does not open.
        func seal(_ plaintext: Data, context: Data) throws -> Data {
            guard let combined = try AES.GCM.seal(plaintext, using: key, authenticating: context).combined else {
                throw TokenEncryptionKeyError(message: "AES-GCM produced no combined box.")
            }
            return combined
        }

        /// The plaintext of `sealed`, or `nil` when this key did not seal it for `context`.
        func open(_ sealed: Data, context: Data) -> Data? {
            guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return nil }
            return try? AES.GCM.open(box, using: key, authenticating: context)
        }
    }

    /// A key that cannot be used.
    public struct TokenEncryptionKeyError: Error, CustomStringConvertible {
        /// What is wrong with the key, without its bytes.
        public let message: String
        /// The message.
        public var description: String { "TokenEncryptionKeyError: \(message)" }
    }
#endif
