import ArgumentParser
import AuthenticatedRequests
import Foundation

/// `authreq profile …`: the profiles of the configuration file.
struct ProfileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Add, list, show and remove profiles.",
        subcommands: [Add.self, List.self, Show.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a profile, or change the settings of one.",
            discussion: "Secrets are not stored: name a file (--client-secret-file) or use $AUTHREQ_CLIENT_SECRET."
        )

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The profile's name (letters, digits, '.', '_', '-').")
        var name: String
        @OptionGroup var settings: ProfileSettings

        func run() async throws {
            try await global.reporting {
                guard Profile.isValidName(name) else { throw CLIError.usage("'\(name)' cannot name a profile.") }
                var file = try global.configuration()
                // A profile that could not be read is replaced by the one given now.
                file.unreadableProfiles[name] = nil
                let existing = file.profiles[name]
                file.profiles[name] = try settings.applied(to: existing, name: name)
                try file.save(to: global.locations.configurationFile)
                global.console.message(
                    "\(existing == nil ? "Added" : "Updated") profile '\(name)' in \(global.locations.configurationFile.path)."
                )
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the profiles' names.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            try await global.reporting {
                let file = try global.configuration()
                for name in Set(file.profiles.keys).union(file.unreadableProfiles.keys).sorted() {
                    global.console.output(line: name)
                    if let unreadable = file.unreadableProfiles[name] {
                        global.console.message("authreq: \(unreadable.reason)")
                    }
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a profile's settings as JSON.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The profile's name.")
        var name: String

        func run() async throws {
            try await global.reporting {
                guard let profile = try global.configuration().profile(name) else {
                    throw CLIError.usage("There is no profile '\(name)'.")
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                global.console.output(try encoder.encode(JSONValue.object(profile.fields)) + Data("\n".utf8))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a profile and delete its stored tokens (without revoking them; see logout).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The profile's name.")
        var name: String

        func run() async throws {
            try await global.reporting {
                var file = try global.configuration()
                if file.unreadableProfiles.removeValue(forKey: name) != nil {
                    try file.save(to: global.locations.configurationFile)
                    global.console.message("Removed profile '\(name)', which could not be read; its tokens stay.")
                    return
                }
                guard let profile = file.profiles.removeValue(forKey: name) else {
                    throw CLIError.usage("There is no profile '\(name)'.")
                }
                if let session = try? ProfileSession(
                    name: name, profile: profile, locations: global.locations, environment: global.environment,
                    console: global.console),
                    let authenticator = try? await session.restore(readOnly: true)
                {
                    await authenticator.clearCredential()
                }
                try file.save(to: global.locations.configurationFile)
                global.console.message("Removed profile '\(name)'.")
            }
        }
    }
}
