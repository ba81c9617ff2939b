import Foundation

/// An attribute of a Keychain query, platform-independent; the Apple shell of
/// `KeychainTokenStore` turns each into its Security constant (named in the comments).
package enum KeychainAttribute: Hashable, Sendable, CaseIterable {
    /// `kSecClass`
    case itemClass
    /// `kSecAttrService`
    case service
    /// `kSecAttrAccount`
    case account
    /// `kSecAttrAccessGroup`
    case accessGroup
    /// `kSecAttrAccessible`
    case accessible
    /// `kSecAttrSynchronizable`
    case synchronizable
    /// `kSecUseDataProtectionKeychain`: on macOS, the iOS-style keychain, with no prompts and the
    /// same accessibility rules; ignored elsewhere.
    case useDataProtectionKeychain
    /// `kSecAttrLabel`
    case label
    /// `kSecValueData`
    case valueData
    /// `kSecReturnData`
    case returnData
    /// `kSecMatchLimit`
    case matchLimit
}

/// A value of a Keychain query attribute.
package enum KeychainValue: Hashable, Sendable {
    /// `kSecClassGenericPassword`
    case genericPassword
    /// A string (service, account, access group, label).
    case string(String)
    /// A boolean.
    case bool(Bool)
    /// The item's data.
    case data(Data)
    /// A `kSecAttrAccessible…` constant.
    case accessibility(KeychainAccessibility)
    /// `kSecMatchLimitOne`
    case matchLimitOne
}

/// A Keychain query or attribute dictionary.
package typealias KeychainQuery = [KeychainAttribute: KeychainValue]

/// Builds the queries of a Keychain token store: one generic-password item per store key, in
/// one service (and access group).
package struct KeychainQueries: Hashable, Sendable {
    /// `kSecAttrService` of every item.
    package let service: String
    /// `kSecAttrAccessGroup`, for sharing with app extensions; `nil` is the app's default group.
    package let accessGroup: String?
    /// When the items can be read.
    package let accessibility: KeychainAccessibility
    /// Whether the items sync through iCloud Keychain.
    package let synchronizable: Bool

    /// Checks the settings.
    ///
    /// - Throws: `TokenStoreError` ``TokenStoreError/Code/insecureLocation`` for an empty service
    ///   or access group, or for an item that should sync through iCloud while its accessibility
    ///   keeps it on this device (the Keychain refuses that combination).
    package init(
        service: String, accessGroup: String?, accessibility: KeychainAccessibility, synchronizable: Bool
    ) throws {
        let location = "keychain service '\(service)'"
        guard !service.isEmpty else {
            throw TokenStoreError(code: .insecureLocation, key: "", path: location, underlyingError: nil)
        }
        guard accessGroup.map({ !$0.isEmpty }) ?? true else {
            throw TokenStoreError(code: .insecureLocation, key: "", path: location + " with an empty access group")
        }
        guard !(synchronizable && accessibility.isThisDeviceOnly) else {
            throw TokenStoreError(
                code: .insecureLocation, key: "",
                path: location + ": an item cannot sync through iCloud with accessibility \(accessibility)")
        }
        self.service = service
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.synchronizable = synchronizable
    }

    /// The query that identifies the item of `key` (for `SecItemUpdate` and `SecItemDelete`).
    package func item(forKey key: String) -> KeychainQuery {
        var query: KeychainQuery = [
            .itemClass: .genericPassword,
            .service: .string(service),
            .account: .string(key),
            .synchronizable: .bool(synchronizable),
            .useDataProtectionKeychain: .bool(true),
        ]
        if let accessGroup { query[.accessGroup] = .string(accessGroup) }
        return query
    }

    /// The query that reads the data of the item of `key` (`SecItemCopyMatching`).
    package func read(forKey key: String) -> KeychainQuery {
        item(forKey: key).merging([.returnData: .bool(true), .matchLimit: .matchLimitOne]) { $1 }
    }

    /// The attributes that replace the item's data (`SecItemUpdate`); the accessibility is
    /// written again, so a changed setting applies from the next save.
    package func update(_ data: Data) -> KeychainQuery {
        [.valueData: .data(data), .accessible: .accessibility(accessibility)]
    }

    /// The new item of `key` with `data` (`SecItemAdd`): created whole, with its accessibility.
    package func add(_ data: Data, forKey key: String) -> KeychainQuery {
        item(forKey: key).merging(update(data)) { $1 }.merging([.label: .string(service)]) { $1 }
    }
}
