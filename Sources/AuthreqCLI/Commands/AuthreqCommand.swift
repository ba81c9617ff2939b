import ArgumentParser
import Foundation

/// `authreq`: sign in once, then call any OAuth-protected API from the shell.
package struct AuthreqCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "authreq",
        abstract: "Sign in to an OAuth 2.0 server once, then get tokens and call its APIs from the shell.",
        discussion: """
            Profiles (server and client settings, no secrets) live in the configuration file: \
            $XDG_CONFIG_HOME/authreq/config.json on Linux, ~/Library/Application Support/authreq on macOS. \
            Tokens live next to it in a folder only you can open, shared by every authreq process: when a \
            token expires, one process refreshes it and the others use the result.

            Output: results on standard output; messages on standard error.

            \(ExitStatus.help)

            Shell completions: authreq --generate-completion-script bash|zsh|fish
            """,
        version: AuthreqCommand.version,
        subcommands: [Login.self, Token.self, Fetch.self, Status.self, Logout.self, ProfileCommand.self]
    )

    /// What `authreq --version` prints: the package's version, from CHANGELOG.md's newest heading
    /// (a test keeps the two equal). Before the first release, the version the next release
    /// will have, marked as unreleased.
    package static let version = "1.0.0-dev (unreleased)"

    package init() {}
}

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The profile to use (default: $AUTHREQ_PROFILE, else 'default').")
    var profile: String?

    @Flag(name: .shortAndLong, help: "Explain each step on standard error (tokens and secrets redacted).")
    var verbose = false

    /// The environment of this process.
    var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The profile's name.
    var profileName: String { profile ?? environment["AUTHREQ_PROFILE"] ?? "default" }

    var console: Console { Console(verbose: verbose) }

    var locations: Locations { Locations(environment: environment) }

    /// The configuration file's profiles.
    func configuration() throws -> ConfigurationFile {
        try ConfigurationFile.load(from: locations.configurationFile)
    }

    /// The session of the chosen profile.
    func session() throws -> ProfileSession {
        let name = profileName
        guard let profile = try configuration().profile(name) else {
            throw CLIError.usage(
                "There is no profile '\(name)' in \(locations.configurationFile.path). Create it with: "
                    + "authreq profile add \(name) --issuer URL --client-id ID")
        }
        return try ProfileSession(
            name: name, profile: profile, locations: locations, environment: environment, console: console)
    }

    /// Where the chosen profile sets its client, for an error about the client.
    var settingsHint: ProfileSettingsHint {
        let profile = (try? configuration().profile(profileName)) ?? nil
        return ProfileSettingsHint(
            name: profileName, clientID: profile.flatMap { $0.clientID.isEmpty ? nil : $0.clientID },
            secretFile: profile?.clientSecretFile, secretVariable: profile?.secretVariable ?? "AUTHREQ_CLIENT_SECRET")
    }

    /// Runs `body`, turning its failure into one line on standard error and the exit status.
    /// With `--verbose`, every event of the command's authenticators is printed before that line.
    func reporting(_ body: () async throws -> Void) async throws {
        let log = EventLog()
        let outcome = await Result { try await EventLog.$current.withValue(log) { try await body() } }
        await log.flush()
        do {
            try outcome.get()
        } catch let error as ExitCode {
            throw error
        } catch let error as ValidationError {
            throw error
        } catch {
            console.message("authreq: \(ErrorReport.message(for: error, profile: settingsHint))")
            console.detail("\(type(of: error)): \(ErrorReport.message(for: error))")
            throw ExitCode(ErrorReport.status(for: error))
        }
    }
}

extension AuthreqCommand {
    /// Parses the process's arguments and runs the command, then exits with its status. (What
    /// `AsyncParsableCommand.main()` does; called by name, because top-level code on Linux would
    /// pick the synchronous `main()`.)
    package static func runAsRoot() async -> Never {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            exit()
        } catch {
            exit(withError: error)
        }
    }
}
