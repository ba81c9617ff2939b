import Foundation
import Testing

@testable import AuthenticatedRequests

/// A keychain in memory with the Security framework's semantics for the calls a token store
/// makes: items identified by class, service, account, access group and synchronizable; update
/// of a missing item is `errSecItemNotFound`, add of an existing one `errSecDuplicateItem`.
/// Failures can be scripted per call.
final class InMemoryKeychain: KeychainItemAccess {
    struct Identity: Hashable, Sendable {
        let service: KeychainValue?
        let account: KeychainValue?
        let accessGroup: KeychainValue?
        let synchronizable: KeychainValue?
        init(_ query: KeychainQuery) {
            service = query[.service]
            account = query[.account]
            accessGroup = query[.accessGroup]
            synchronizable = query[.synchronizable]
        }
    }

    struct State: Sendable {
        var items: [Identity: KeychainQuery] = [:]
        var calls: [String] = []
        /// Statuses to return instead of acting, in order, per call name.
        var scripted: [String: [Int32]] = [:]
        /// Runs before `add` acts: another writer adding the same item in between.
        var beforeAdd: (@Sendable (inout [Identity: KeychainQuery]) -> Void)?
    }

    let state = Locked(State())

    private func scripted(_ name: String) -> Int32? {
        state.withLock { state in
            state.calls.append(name)
            guard var queue = state.scripted[name], !queue.isEmpty else { return nil }
            let status = queue.removeFirst()
            state.scripted[name] = queue
            return status
        }
    }

    func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: Data?) {
        if let status = scripted("copy") { return (status, nil) }
        return state.withLock { state in
            guard let item = state.items[Identity(query)], case .data(let data)? = item[.valueData] else {
                return (KeychainStatus.itemNotFound, nil)
            }
            return (KeychainStatus.success, data)
        }
    }

    func add(_ attributes: KeychainQuery) -> Int32 {
        if let status = scripted("add") { return status }
        return state.withLock { state in
            state.beforeAdd?(&state.items)
            state.beforeAdd = nil
            let identity = Identity(attributes)
            guard state.items[identity] == nil else { return KeychainStatus.duplicateItem }
            state.items[identity] = attributes
            return KeychainStatus.success
        }
    }

    func update(_ query: KeychainQuery, _ attributes: KeychainQuery) -> Int32 {
        if let status = scripted("update") { return status }
        return state.withLock { state in
            let identity = Identity(query)
            guard let item = state.items[identity] else { return KeychainStatus.itemNotFound }
            state.items[identity] = item.merging(attributes) { $1 }
            return KeychainStatus.success
        }
    }

    func delete(_ query: KeychainQuery) -> Int32 {
        if let status = scripted("delete") { return status }
        return state.withLock { state in
            state.items.removeValue(forKey: Identity(query)) == nil
                ? KeychainStatus.itemNotFound : KeychainStatus.success
        }
    }
}

/// The platform-independent part of `KeychainTokenStore`: its queries, its `OSStatus` mapping, and
/// what it does with entries, over an in-memory keychain. The Security framework calls themselves
/// run only on Apple platforms.
@Suite struct KeychainTokenStoreTests {
    let key = "client@https://auth.example.com"
    let entry = Data(#"{"access_token":"a","token_type":"Bearer"}"#.utf8)
    let newer = Data(#"{"access_token":"b","token_type":"Bearer"}"#.utf8)

    func queries(
        group: String? = nil, accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly,
        sync: Bool = false
    ) throws -> KeychainQueries {
        try KeychainQueries(
            service: "com.example.app.tokens", accessGroup: group, accessibility: accessibility, synchronizable: sync)
    }

    // MARK: Queries

    @Test func theItemIsAGenericPasswordKeyedByServiceAndStoreKeyOffICloudByDefault() throws {
        let item = try queries().item(forKey: key)
        #expect(
            item == [
                .itemClass: .genericPassword,
                .service: .string("com.example.app.tokens"),
                .account: .string(key),
                .synchronizable: .bool(false),
                .useDataProtectionKeychain: .bool(true),
            ])
    }

    @Test func readAsksForOneItemsDataAndAddCreatesTheWholeItemWithItsAccessibility() throws {
        let queries = try queries(group: "TEAMID.com.example.shared")
        let read = queries.read(forKey: key)
        #expect(read[.returnData] == .bool(true))
        #expect(read[.matchLimit] == .matchLimitOne)
        #expect(read[.accessGroup] == .string("TEAMID.com.example.shared"))
        #expect(read[.valueData] == nil)

        let add = queries.add(entry, forKey: key)
        #expect(add[.valueData] == .data(entry))
        #expect(add[.accessible] == .accessibility(.afterFirstUnlockThisDeviceOnly))
        #expect(add[.accessGroup] == .string("TEAMID.com.example.shared"))
        #expect(add[.synchronizable] == .bool(false))
        #expect(add[.returnData] == nil, "SecItemAdd gets attributes, not search keys")

        #expect(
            queries.update(entry) == [
                .valueData: .data(entry), .accessible: .accessibility(.afterFirstUnlockThisDeviceOnly),
            ])
    }

    @Test func theDefaultAccessibilityIsAfterFirstUnlockThisDeviceOnly() throws {
        #expect(KeychainAccessibility.afterFirstUnlockThisDeviceOnly.isThisDeviceOnly)
        #expect(!KeychainAccessibility.afterFirstUnlock.isThisDeviceOnly)
        #expect(!KeychainAccessibility.whenUnlocked.isThisDeviceOnly)
        #expect(KeychainAccessibility.whenPasscodeSetThisDeviceOnly.isThisDeviceOnly)
    }

    @Test func iCloudSyncIsOptInAndRefusedForThisDeviceOnlyItems() throws {
        let synced = try queries(accessibility: .afterFirstUnlock, sync: true)
        #expect(synced.item(forKey: key)[.synchronizable] == .bool(true))
        let error = #expect(throws: TokenStoreError.self) { try queries(sync: true) }
        #expect(error?.code == .insecureLocation)
        #expect(error?.path?.contains("iCloud") == true)
    }

    @Test func anEmptyServiceOrAccessGroupIsRefused() {
        #expect(throws: TokenStoreError.self) {
            try KeychainQueries(service: "", accessGroup: nil, accessibility: .whenUnlocked, synchronizable: false)
        }
        #expect(throws: TokenStoreError.self) { try queries(group: "") }
    }

    // MARK: OSStatus

    @Test func statusesMapToWhatTheyMeanForTheTokenAndKeepTheNumber() {
        let locked = KeychainStatus.error(-25308, .read, key: key, service: "svc")
        #expect(locked.code == .unavailable)
        let keychainError = locked.underlyingError as? KeychainError
        #expect(keychainError == KeychainError(operation: .read, status: -25308))
        #expect(locked.description.contains("-25308"))
        #expect(locked.description.contains("errSecInteractionNotAllowed"))
        #expect(locked.description.contains("SecItemCopyMatching"))

        #expect(KeychainStatus.error(-26275, .read, key: key, service: "svc").code == .corrupt)
        #expect(KeychainStatus.error(-34018, .add, key: key, service: "svc").code == .ioFailed)
        #expect(KeychainStatus.error(-128, .read, key: key, service: "svc").code == .unavailable)
        let unknown = KeychainStatus.error(-99999, .update, key: key, service: "svc")
        #expect(unknown.code == .ioFailed)
        #expect(unknown.description.contains("SecItemUpdate failed with OSStatus -99999"))
    }

    @Test func theStatusTableMatchesSecBase() {
        // The values of Security/SecBase.h, which the platform-independent table writes out.
        let expected: [String: Int32] = [
            "errSecItemNotFound": -25300, "errSecDuplicateItem": -25299, "errSecInteractionNotAllowed": -25308,
            "errSecAuthFailed": -25293, "errSecUserCanceled": -128, "errSecMissingEntitlement": -34018,
            "errSecDecode": -26275, "errSecParam": -50,
        ]
        for (name, status) in expected {
            #expect(KeychainStatus(status)?.name == name)
        }
        #expect(KeychainStatus.itemNotFound == -25300)
        #expect(KeychainStatus.duplicateItem == -25299)
    }

    // MARK: Entries

    @Test func saveLoadReplaceAndRemove() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(), access: keychain)
        #expect(try entries.load(forKey: key) == nil)
        try entries.save(entry, forKey: key)
        #expect(try entries.load(forKey: key) == entry)
        try entries.save(newer, forKey: key)
        #expect(try entries.load(forKey: key) == newer)
        #expect(keychain.state.withLock { $0.items.count } == 1)
        try entries.remove(forKey: key)
        #expect(try entries.load(forKey: key) == nil)
        try entries.remove(forKey: key)  // no error when there is none
    }

    @Test func aRewriteUpdatesInPlaceAndNeverDeletesFirst() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(), access: keychain)
        try entries.save(entry, forKey: key)
        try entries.save(newer, forKey: key)
        let calls = keychain.state.withLock { $0.calls }
        #expect(calls == ["update", "add", "update"], "first save: update finds nothing, add; second: update")
        #expect(!calls.contains("delete"))
    }

    @Test func aFailedUpdateLeavesTheOldEntryWhole() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(), access: keychain)
        try entries.save(entry, forKey: key)
        keychain.state.withLock { $0.scripted["update"] = [-25308] }
        let error = #expect(throws: TokenStoreError.self) { try entries.save(newer, forKey: key) }
        #expect(error?.code == .unavailable)
        #expect((error?.underlyingError as? KeychainError)?.operation == .update)
        #expect(try entries.load(forKey: key) == entry)
    }

    @Test func aFailedAddLeavesNoEntryAndCarriesTheStatus() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(group: "TEAMID.other"), access: keychain)
        keychain.state.withLock { $0.scripted["add"] = [-34018] }
        let error = #expect(throws: TokenStoreError.self) { try entries.save(entry, forKey: key) }
        #expect((error?.underlyingError as? KeychainError) == KeychainError(operation: .add, status: -34018))
        #expect(error?.description.contains("access group") == true)
        #expect(try entries.load(forKey: key) == nil)
    }

    @Test func anotherWriterAddingInBetweenIsOverwrittenOnceNotLooped() throws {
        let keychain = InMemoryKeychain()
        let queries = try queries()
        let entries = KeychainEntries(queries: queries, access: keychain)
        keychain.state.withLock { state in
            state.beforeAdd = { items in
                items[.init(queries.add(Data("{}".utf8), forKey: key))] = queries.add(Data("{}".utf8), forKey: key)
            }
        }
        try entries.save(entry, forKey: key)
        #expect(try entries.load(forKey: key) == entry)
        #expect(keychain.state.withLock { $0.calls } == ["update", "add", "update", "copy"])

        // A keychain that keeps answering "duplicate" then "not found" does not make it loop.
        keychain.state.withLock { $0.scripted = ["update": [-25300, -25300], "add": [-25299]] }
        let error = #expect(throws: TokenStoreError.self) { try entries.save(newer, forKey: key) }
        #expect((error?.underlyingError as? KeychainError) == KeychainError(operation: .update, status: -25300))
    }

    @Test func aLockedDeviceIsUnavailableNotMissing() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(), access: keychain)
        try entries.save(entry, forKey: key)
        keychain.state.withLock { $0.scripted["copy"] = [-25308] }
        let error = #expect(throws: TokenStoreError.self) { try entries.load(forKey: key) }
        #expect(error?.code == .unavailable, "a locked device must not look like a signed-out user")
        #expect(try entries.load(forKey: key) == entry)
    }

    @Test func anEntryThatIsNotJSONIsCorruptAndLeftAlone() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(), access: keychain)
        try entries.save(Data("not json".utf8), forKey: key)
        let error = #expect(throws: TokenStoreError.self) { try entries.load(forKey: key) }
        #expect(error?.code == .corrupt)
        #expect(keychain.state.withLock { $0.items.count } == 1)
    }

    @Test func servicesAccessGroupsAndKeysDoNotShareEntries() throws {
        let keychain = InMemoryKeychain()
        let app = KeychainEntries(queries: try queries(), access: keychain)
        let shared = KeychainEntries(queries: try queries(group: "TEAMID.shared"), access: keychain)
        let other = KeychainEntries(
            queries: try KeychainQueries(
                service: "other", accessGroup: nil, accessibility: .whenUnlocked, synchronizable: false),
            access: keychain)
        try app.save(entry, forKey: key)
        #expect(try shared.load(forKey: key) == nil)
        #expect(try other.load(forKey: key) == nil)
        #expect(try app.load(forKey: key + "/other-account") == nil)
    }

    @Test func errorsNeverShowTheEntry() throws {
        let keychain = InMemoryKeychain()
        let entries = KeychainEntries(queries: try queries(), access: keychain)
        keychain.state.withLock { $0.scripted["update"] = [-50] }
        let error = #expect(throws: TokenStoreError.self) { try entries.save(entry, forKey: key) }
        let text = "\(String(describing: error)) \(String(reflecting: error))"
        #expect(!text.contains("access_token"))
        #expect(!text.contains("\"a\""))
    }
}
