import ArgumentParser
import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelQueue
import ReelSystem

#if Fleet
    import ReelFleet
#endif

@main
struct Reel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reel",
        abstract: "Export and transcode video into network-optimised files, like AVAssetExportSession.",
        version: ReelVersion.version,
        subcommands: [
            ExportCommand.self, SubmitCommand.self, WorkCommand.self, StatusCommand.self, ListCommand.self,
            WaitCommand.self, CancelCommand.self, RetryCommand.self, DatabaseCommand.self, ProbeCommand.self,
            PresetsCommand.self, PruneCommand.self, RunJobCommand.self, LibraryCommand.self,
            ThumbnailCommand.self, ImageCommand.self,
        ])

    /// The command line without the program's name. Swift's runtime sees no arguments under some
    /// LD_PRELOAD shims (libfaketime, which the fleet's clock-skew test uses); the kernel's copy of the
    /// command line is read then.
    static var arguments: [String] {
        if !CommandLine.arguments.isEmpty { return Array(CommandLine.arguments.dropFirst()) }
        guard let data = FileManager.default.contents(atPath: "/proc/self/cmdline") else { return [] }
        return data.split(separator: 0, omittingEmptySubsequences: false).dropFirst().dropLast()
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// Runs the command, printing failures as one `reel: error: …` line and exiting non-zero.
    static func main() async {
        // A closed stdout (`reel export --json | head`) must not kill an export half-way through and
        // leave its temporary file behind: writes then fail quietly instead.
        signal(SIGPIPE, SIG_IGN)
        // Debug builds: tests damage the outputs of this process's exports this way (release ignores it).
        ExportSession.injectOutputFault(named: ProcessInfo.processInfo.environment["REEL_TEST_OUTPUT_FAULT"])
        let arguments = Self.arguments
        // `-dash.mp4` would otherwise parse as the short flags -d -a -s -h …, and -h prints the help.
        if let stray = CLI.strayDashArgument(in: arguments) {
            CLI.refuseArguments("unknown option '\(stray)'\(CLI.fileHint(stray))", arguments: arguments)
        }
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            // Help and --version print as usual; a usage error is one `reel: error:` line (exit 64).
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            let text = message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            // Name the command's help, taken from the usage line ("Usage: reel export …").
            let usage = fullMessage(for: error).split(separator: "\n").first { $0.hasPrefix("Usage:") }
            let words = usage?.split(separator: " ").dropFirst().prefix {
                !$0.hasPrefix("<") && !$0.hasPrefix("[") && !$0.hasPrefix("-")
            }
            let command = words.map { $0.joined(separator: " ") } ?? "reel"
            let unknown = text.hasPrefix("Unknown option '") ? text.dropFirst(16).prefix { $0 != "'" } : nil
            let hint = unknown.map { CLI.fileHint(String($0)) } ?? ""
            CLI.refuseArguments(
                "\(text)\(hint) (see '\(command) --help')", arguments: arguments,
                exitCode: code == .validationFailure ? ExitStatus.usage.rawValue : code.rawValue)
        }
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ExportError {
            CLI.printFailureJSON(
                arguments, code: error.code.description, message: error.message, retryable: error.isRetryable)
            CLI.printError(error.message)
            Foundation.exit(ExitStatus(error.code).rawValue)
        } catch let error as CLIFailure {
            CLI.printFailureJSON(
                arguments, code: error.code ?? error.exitStatus.code, message: error.message,
                retryable: error.retryable)
            CLI.printError(error.message)
            Foundation.exit(error.exitStatus.rawValue)
        } catch let error as QueueError {
            CLI.printFailureJSON(
                arguments, code: error.kind.code, message: error.message, retryable: error.kind.retryable)
            CLI.printError(error.message)
            Foundation.exit(ExitStatus(error.kind).rawValue)
        } catch {
            CLI.printFailureJSON(arguments, code: ExitStatus.failure.code, message: "\(error)", retryable: false)
            exit(withError: error)
        }
    }
}
