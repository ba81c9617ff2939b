/// A Keychain call that failed, with the `OSStatus` it returned.
///
/// A `KeychainTokenStore` reports it as the ``TokenStoreError/underlyingError`` of a
/// ``TokenStoreError`` whose code says what it means for the token: ``TokenStoreError/Code/unavailable``
/// while the device is locked, ``TokenStoreError/Code/ioFailed`` otherwise.
public struct KeychainError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Keychain call.
    public struct Operation: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// `SecItemCopyMatching`.
        public static let read = Operation("SecItemCopyMatching")
        /// `SecItemAdd`.
        public static let add = Operation("SecItemAdd")
        /// `SecItemUpdate`.
        public static let update = Operation("SecItemUpdate")
        /// `SecItemDelete`.
        public static let delete = Operation("SecItemDelete")
        /// The function's name.
        public var description: String { name }
    }

    /// The call that failed.
    public let operation: Operation
    /// The `OSStatus` it returned (`errSecInteractionNotAllowed` is `-25308`).
    public let status: Int32

    /// Creates an error.
    public init(operation: Operation, status: Int32) {
        self.operation = operation
        self.status = status
    }

    /// `SecItemCopyMatching failed with OSStatus -25308 (errSecInteractionNotAllowed: …)`.
    public var description: String {
        let known = KeychainStatus(status)
        return "\(operation) failed with OSStatus \(status)"
            + (known.map { " (\($0.name): \($0.explanation))" } ?? "")
    }
}

/// The `OSStatus` values a Keychain token store meets, and what each means for a token.
///
/// The numbers are Security framework's (`SecBase.h`), written out so that the mapping is
/// platform-independent code, tested on every platform.
package struct KeychainStatus: Hashable, Sendable {
    package let status: Int32
    package let name: String
    package let explanation: String
    /// What the failure means for the entry.
    package let code: TokenStoreError.Code

    package static let success: Int32 = 0
    package static let itemNotFound: Int32 = -25300
    package static let duplicateItem: Int32 = -25299
    package static let interactionNotAllowed: Int32 = -25308

    private static let known: [KeychainStatus] = [
        .init(-25300, "errSecItemNotFound", "no such item", .ioFailed),
        .init(-25299, "errSecDuplicateItem", "the item already exists", .ioFailed),
        .init(
            -25308, "errSecInteractionNotAllowed",
            "the device is locked and the item's accessibility does not allow reading it now", .unavailable),
        .init(-25293, "errSecAuthFailed", "the user could not be authenticated", .unavailable),
        .init(-128, "errSecUserCanceled", "the user cancelled the authentication", .unavailable),
        .init(
            -34018, "errSecMissingEntitlement",
            "the app lacks the keychain entitlement for this item (check the access group)", .ioFailed),
        .init(-25291, "errSecNotAvailable", "no keychain is available", .unavailable),
        .init(-25294, "errSecNoSuchKeychain", "the keychain does not exist", .ioFailed),
        .init(-26275, "errSecDecode", "the item's data could not be decoded", .corrupt),
        .init(-50, "errSecParam", "a parameter of the query is invalid", .ioFailed),
        .init(-108, "errSecAllocate", "out of memory", .ioFailed),
        .init(-4, "errSecUnimplemented", "not implemented on this system", .ioFailed),
        .init(-25243, "errSecNoAccessForItem", "this app may not access the item", .ioFailed),
    ]

    private init(_ status: Int32, _ name: String, _ explanation: String, _ code: TokenStoreError.Code) {
        self.status = status
        self.name = name
        self.explanation = explanation
        self.code = code
    }

    /// The description of `status`, or `nil` for a status the table does not know.
    package init?(_ status: Int32) {
        guard let known = Self.known.first(where: { $0.status == status }) else { return nil }
        self = known
    }

    /// The ``TokenStoreError`` for a failed call on the entry `key` of `service`.
    package static func error(_ status: Int32, _ operation: KeychainError.Operation, key: String, service: String)
        -> TokenStoreError
    {
        TokenStoreError(
            code: KeychainStatus(status)?.code ?? .ioFailed,
            key: key,
            path: "keychain service '\(service)'",
            underlyingError: KeychainError(operation: operation, status: status)
        )
    }
}
