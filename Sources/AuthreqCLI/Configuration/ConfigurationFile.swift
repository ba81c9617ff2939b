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

    package init(profiles: [String: Profile] = [:]) {
        self.profiles = profiles
    }

    /// Reads a configuration file's bytes with the package's strict JSON parser.
    ///
    /// - Throws: ``CLIError`` (usage) naming the mistake: not JSON, no `profiles` object, an
    ///   invalid profile name, an unknown or mistyped setting.
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
        for (name, entry) in entries {
            guard Profile.isValidName(name) else {
                throw .usage("'\(name)' cannot name a profile: use letters, digits, '.', '_' and '-'.")
            }
            guard let fields = entry.objectValue else { throw .usage("Profile '\(name)' must be a JSON object.") }
            read[name] = try Profile(name: name, fields: fields)
        }
        self.init(profiles: read)
    }

    /// The file's bytes: pretty-printed JSON with sorted keys.
    package func serialized() throws -> Data {
        let object = JSONValue.object(["profiles": .object(profiles.mapValues { .object($0.fields) })])
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
            return try ConfigurationFile(parsing: data)
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
