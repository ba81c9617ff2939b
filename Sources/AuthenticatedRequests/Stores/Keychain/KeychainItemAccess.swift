import Foundation

/// The four Keychain calls a token store makes (`SecItemCopyMatching`, `SecItemAdd`,
/// `SecItemUpdate`, `SecItemDelete`), each returning its `OSStatus`.
///
/// On Apple platforms the Security framework implements it; tests use an in-memory keychain, so
/// the store's logic is checked on every platform.
package protocol KeychainItemAccess: Sendable {
    /// `SecItemCopyMatching` with `kSecReturnData`: the status and the item's data.
    func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: Data?)
    /// `SecItemAdd`.
    func add(_ attributes: KeychainQuery) -> Int32
    /// `SecItemUpdate`.
    func update(_ query: KeychainQuery, _ attributes: KeychainQuery) -> Int32
    /// `SecItemDelete`.
    func delete(_ query: KeychainQuery) -> Int32
}

/// What a Keychain token store does with its entries, over any ``KeychainItemAccess``.
///
/// Each entry is one generic-password item whose data is the whole entry, so a write replaces
/// it in one Keychain call (`SecItemUpdate`, or `SecItemAdd` for a new one): an interrupted write
/// leaves the old entry or the new one, never a part, and never no entry.
package struct KeychainEntries: Sendable {
    package let queries: KeychainQueries
    package let access: any KeychainItemAccess

    package init(queries: KeychainQueries, access: any KeychainItemAccess) {
        self.queries = queries
        self.access = access
    }

    /// The entry of `key`; `nil` when there is none.
    package func load(forKey key: String) throws -> Data? {
        let (status, data) = access.copyMatching(queries.read(forKey: key))
        switch status {
        case KeychainStatus.success:
            guard let data else {
                throw TokenStoreError(
                    code: .corrupt, key: key, path: location,
                    underlyingError: KeychainError(operation: .read, status: 0))
            }
            do {
                _ = try JSONSerialization.jsonObject(with: data)
            } catch {
                throw TokenStoreError(code: .corrupt, key: key, path: location, underlyingError: error)
            }
            return data
        case KeychainStatus.itemNotFound:
            return nil
        default:
            throw KeychainStatus.error(status, .read, key: key, service: queries.service)
        }
    }

    /// Replaces the entry of `key`: updates the item in place, or adds it when there is none. If
    /// another writer adds it in between, the update is tried once more; no loop.
    package func save(_ data: Data, forKey key: String) throws {
        let updated = access.update(queries.item(forKey: key), queries.update(data))
        guard updated != KeychainStatus.success else { return }
        guard updated == KeychainStatus.itemNotFound else {
            throw KeychainStatus.error(updated, .update, key: key, service: queries.service)
        }
        let added = access.add(queries.add(data, forKey: key))
        guard added != KeychainStatus.success else { return }
        guard added == KeychainStatus.duplicateItem else {
            throw KeychainStatus.error(added, .add, key: key, service: queries.service)
        }
        let retried = access.update(queries.item(forKey: key), queries.update(data))
        guard retried == KeychainStatus.success else {
            throw KeychainStatus.error(retried, .update, key: key, service: queries.service)
        }
    }

    /// Removes the entry of `key`; no error when there is none.
    package func remove(forKey key: String) throws {
        let status = access.delete(queries.item(forKey: key))
        guard status == KeychainStatus.success || status == KeychainStatus.itemNotFound else {
            throw KeychainStatus.error(status, .delete, key: key, service: queries.service)
        }
    }

    private var location: String { "keychain service '\(queries.service)'" }
}
