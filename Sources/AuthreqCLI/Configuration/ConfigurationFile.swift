import AuthenticatedRequests
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The configuration file: `{"profiles": {"NAME": {…}, …}}`, written by `authreq profile add` or
/// by hand.
package struct ConfigurationFile: Equatable, Sendable {
    /// The profiles by name.
    package var profiles: [String: Profile]
    /// The profiles that could not be read, by name: why, and their JSON as written. A mistake in
    /// one profile leaves the others usable; using this one reports the mistake, and saving the
    /// file keeps it as it was.
    package var unreadableProfiles: [String: UnreadableProfile]

    /// A profile of the file that could not be read.
    package struct UnreadableProfile: Equatable, Sendable {
        /// The mistake, naming the profile and the setting.
        package var reason: String
        /// The profile's JSON, kept as written.
        package var fields: JSONValue
    }

    package init(profiles: [String: Profile] = [:], unreadableProfiles: [String: UnreadableProfile] = [:]) {
        self.profiles = profiles
        self.unreadableProfiles = unreadableProfiles
    }

    /// Reads a configuration file's bytes with the package's strict JSON parser.
    ///
    /// - Throws: ``CLIError`` (usage) naming the mistake of the file as a whole: not JSON, no
    ///   `profiles` object, an invalid profile name. A profile with an unknown or mistyped setting
    ///   goes to ``unreadableProfiles`` instead.
    package init(parsing data: Data) throws(CLIError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: data)
        } catch {
            throw .usage("The configuration file is not valid JSON: \(error)")
        }
        guard let object = value.objectValue else {
            throw .usage("The configuration file must hold a JSON object.")
        }
        for key in object.keys where key != "profiles" {
            throw .usage("The configuration file has an unknown key '\(key)'; profiles go under \"profiles\".")
        }
        guard let profiles = object["profiles"] else {
            self.init()
            return
        }
        guard let entries = profiles.objectValue else { throw .usage("\"profiles\" must be a JSON object.") }
        var read: [String: Profile] = [:]
        var unreadable: [String: UnreadableProfile] = [:]
        for (name, entry) in entries {
            guard Profile.isValidName(name) else {
                throw .usage("'\(name)' cannot name a profile: use letters, digits, '.', '_' and '-'.")
            }
            do throws(CLIError) {
                guard let fields = entry.objectValue else {
                    throw CLIError.usage("Profile '\(name)' must be a JSON object.")
                }
                read[name] = try Profile(name: name, fields: fields)
            } catch {
                unreadable[name] = UnreadableProfile(reason: error.message, fields: entry)
            }
        }
        self.init(profiles: read, unreadableProfiles: unreadable)
    }

    /// The profile `name`.
    ///
    /// - Throws: ``CLIError`` (usage) naming the mistake when the profile could not be read.
    package func profile(_ name: String) throws(CLIError) -> Profile? {
        if let unreadable = unreadableProfiles[name] { throw .usage(unreadable.reason) }
        return profiles[name]
    }

    /// The file's bytes: pretty-printed JSON with sorted keys.
    package func serialized() throws -> Data {
        var entries = unreadableProfiles.mapValues(\.fields)
        for (name, profile) in profiles { entries[name] = .object(profile.fields) }
        let object = JSONValue.object(["profiles": .object(entries)])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(object) + Data("\n".utf8)
    }

    /// The file at `url`; an empty configuration when it does not exist.
    package static func load(from url: URL) throws -> ConfigurationFile {
        guard FileManager.default.fileExists(atPath: url.path) else { return ConfigurationFile() }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw CLIError(ExitStatus.failure, "Could not read \(url.path): \(error.localizedDescription)")
        }
        do {
            var file = try ConfigurationFile(parsing: data)
            for (name, unreadable) in file.unreadableProfiles {
                file.unreadableProfiles[name]?.reason = "\(url.path): \(unreadable.reason)"
            }
            return file
        } catch {
            throw CLIError.usage("\(url.path): \(error.message)")
        }
    }

    /// Writes the file atomically (a complete temporary file renamed over the old one), in a
    /// folder only its owner can open.
    package func save(to url: URL) throws {
        try PrivateFile.write(try serialized(), to: url)
    }
}

/// Files of `authreq` that only their owner may read: the configuration, the endpoint cache.
enum PrivateFile {
    /// Writes `data` to `url` through a temporary file renamed over it, creating the folder with
    /// mode 0700 and the file with mode 0600.
    static func write(_ data: Data, to url: URL) throws {
        let folder = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
            guard
                FileManager.default.createFile(
                    atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
            else {
                throw CLIError(ExitStatus.failure, "Could not write \(temporary.path).")
            }
            if rename(temporary.path, url.path) != 0 {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw CLIError(ExitStatus.failure, "Could not replace \(url.path): \(reason)")
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError(ExitStatus.failure, "Could not write \(url.path): \(error.localizedDescription)")
        }
    }
}
