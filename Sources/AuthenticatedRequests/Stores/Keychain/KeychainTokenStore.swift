#if canImport(Security)
    import Foundation
    import Security

    /// A ``TokenStore`` in the Keychain of Apple platforms: one generic-password item per key,
    /// in one service.
    ///
    /// - Accessibility: ``KeychainAccessibility/afterFirstUnlockThisDeviceOnly`` by default, so a
    ///   background refresh works after the first unlock and the token never leaves the device.
    ///   While the device is locked beyond the accessibility, calls fail with
    ///   ``TokenStoreError/Code/unavailable`` (`errSecInteractionNotAllowed`); the request fails
    ///   and nothing is cleared.
    /// - Sharing with app extensions: pass the `accessGroup` both targets have in their
    ///   entitlements. The app and its extensions do not coordinate refreshes
    ///   (``TokenStore/coordinatesProcesses`` is `false`), so use a refresh-token grant without
    ///   rotation there, or refresh in one of them only.
    /// - iCloud: items do not sync unless `synchronizable` is `true` (which needs an accessibility
    ///   that is not "this device only").
    /// - Writes replace the item's data in one call (`SecItemUpdate`, or `SecItemAdd` the first
    ///   time): an interrupted write leaves the old entry or the new one, never a part of one.
    /// - Failures are ``TokenStoreError``s whose ``TokenStoreError/underlyingError`` is a
    ///   ``KeychainError`` with the `OSStatus`.
    ///
    /// On macOS the items go to the data protection keychain (`kSecUseDataProtectionKeychain`),
    /// which behaves as on iOS and shows no password prompts; the app needs a signing identity.
    public struct KeychainTokenStore: TokenStore {
        private let entries: KeychainEntries

        /// The service the items belong to, e.g. your bundle identifier.
        public var service: String { entries.queries.service }

        /// Creates a store.
        ///
        /// - Parameters:
        ///   - service: `kSecAttrService` of the items, e.g. `"com.example.app.tokens"`.
        ///   - accessGroup: A keychain access group shared with app extensions; `nil` for the
        ///     app's own.
        ///   - accessibility: When the items can be read.
        ///   - synchronizable: Whether the items sync through iCloud Keychain; `false` by default.
        /// - Throws: ``TokenStoreError/Code/insecureLocation`` for an empty service or access group,
        ///   or for `synchronizable` with a "this device only" accessibility.
        public init(
            service: String,
            accessGroup: String? = nil,
            accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly,
            synchronizable: Bool = false
        ) throws {
            let queries = try KeychainQueries(
                service: service, accessGroup: accessGroup, accessibility: accessibility,
                synchronizable: synchronizable)
            entries = KeychainEntries(queries: queries, access: SecurityFrameworkKeychain())
        }

        /// The entry for `key`, or `nil`.
        public func load(forKey key: String) async throws -> Data? { try entries.load(forKey: key) }

        /// Replaces the entry for `key`.
        public func save(_ data: Data, forKey key: String) async throws { try entries.save(data, forKey: key) }

        /// Removes the entry for `key`.
        public func removeValue(forKey key: String) async throws { try entries.remove(forKey: key) }
    }

    /// The Security framework's `SecItem` calls; each attribute becomes its constant here and
    /// nowhere else.
    struct SecurityFrameworkKeychain: KeychainItemAccess {
        func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: Data?) {
            var result: CFTypeRef?
            let status = SecItemCopyMatching(Self.dictionary(query), &result)
            return (status, result as? Data)
        }

        func add(_ attributes: KeychainQuery) -> Int32 {
            SecItemAdd(Self.dictionary(attributes), nil)
        }

        func update(_ query: KeychainQuery, _ attributes: KeychainQuery) -> Int32 {
            SecItemUpdate(Self.dictionary(query), Self.dictionary(attributes))
        }

        func delete(_ query: KeychainQuery) -> Int32 {
            SecItemDelete(Self.dictionary(query))
        }

        static func dictionary(_ query: KeychainQuery) -> CFDictionary {
            var dictionary: [String: Any] = [:]
            for (attribute, value) in query {
                dictionary[key(attribute) as String] = object(value)
            }
            return dictionary as CFDictionary
        }

        static func key(_ attribute: KeychainAttribute) -> CFString {
            switch attribute {
            case .itemClass: kSecClass
            case .service: kSecAttrService
            case .account: kSecAttrAccount
            case .accessGroup: kSecAttrAccessGroup
            case .accessible: kSecAttrAccessible
            case .synchronizable: kSecAttrSynchronizable
            case .useDataProtectionKeychain: kSecUseDataProtectionKeychain
            case .label: kSecAttrLabel
            case .valueData: kSecValueData
            case .returnData: kSecReturnData
            case .matchLimit: kSecMatchLimit
            }
        }

        static func object(_ value: KeychainValue) -> Any {
            switch value {
            case .genericPassword: kSecClassGenericPassword
            case .string(let string): string
            case .bool(let bool): bool ? kCFBooleanTrue as Any : kCFBooleanFalse as Any
            case .data(let data): data
            case .matchLimitOne: kSecMatchLimitOne
            case .accessibility(let accessibility):
                switch accessibility.level {
                case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
                case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
                case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
                case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
                }
            }
        }
    }
#endif
