/// When a Keychain item can be read (`kSecAttrAccessible`), and whether it may leave the device.
///
/// The default of `KeychainTokenStore` is ``afterFirstUnlockThisDeviceOnly``: background
/// refreshes work once the device was unlocked after a restart, and the token is not in backups
/// restored to another device.
public struct KeychainAccessibility: Hashable, Sendable, CustomStringConvertible {
    /// The platform-independent name of the level.
    package enum Level: Hashable, Sendable, CaseIterable {
        case whenUnlocked, whenUnlockedThisDeviceOnly, afterFirstUnlock, afterFirstUnlockThisDeviceOnly
        case whenPasscodeSetThisDeviceOnly
    }

    /// The level.
    package let level: Level

    private init(_ level: Level) { self.level = level }

    /// Readable while the device is unlocked; may move to another device in an encrypted backup.
    public static let whenUnlocked = KeychainAccessibility(.whenUnlocked)
    /// Readable while the device is unlocked; never leaves it.
    public static let whenUnlockedThisDeviceOnly = KeychainAccessibility(.whenUnlockedThisDeviceOnly)
    /// Readable after the first unlock since a restart; may move to another device in an
    /// encrypted backup.
    public static let afterFirstUnlock = KeychainAccessibility(.afterFirstUnlock)
    /// Readable after the first unlock since a restart; never leaves the device. The default.
    public static let afterFirstUnlockThisDeviceOnly = KeychainAccessibility(.afterFirstUnlockThisDeviceOnly)
    /// Readable while the device is unlocked and only if it has a passcode; removed when the
    /// passcode is removed; never leaves the device.
    public static let whenPasscodeSetThisDeviceOnly = KeychainAccessibility(.whenPasscodeSetThisDeviceOnly)

    /// Whether items with this level stay on this device (no iCloud Keychain, no backup restored
    /// elsewhere).
    public var isThisDeviceOnly: Bool {
        switch level {
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: true
        case .whenUnlocked, .afterFirstUnlock: false
        }
    }

    /// The level's name, e.g. `afterFirstUnlockThisDeviceOnly`.
    public var description: String { "\(level)" }
}
