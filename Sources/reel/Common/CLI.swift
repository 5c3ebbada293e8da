import Dispatch
import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelQueue
import ReelSystem
import Synchronization

/// Presentation helpers shared by the commands.
enum CLI {
    static func printError(_ message: String) { printToStderr("error", message) }

    /// A note on stderr: something the user should know that is not an error (a fallback taken).
    static func printNote(_ message: String) { printToStderr("note", message) }

    /// A warning on stderr: something that may go wrong later, which this command cannot check.
    static func printWarning(_ message: String) { printToStderr("warning", message) }

    /// One `reel: <kind>: …` line on stderr, whatever newlines the message holds.
    private static func printToStderr(_ kind: String, _ message: String) {
        let line = message.replacingOccurrences(of: "\n", with: " ")
        try? FileHandle.standardError.write(contentsOf: Data("reel: \(kind): \(line)\n".utf8))
    }

    /// How logging was set up, once per process.
    struct LogSettings: Sendable {
        var level: Logger.Level
        var format: ReelLogHandler.Format
    }
    private static let logSettings = Mutex<LogSettings?>(nil)

    /// Sets up swift-log (Reel's handler on stderr) and FFmpeg's log route, once: the level is `level`,
    /// else `$REEL_LOG_LEVEL`, else `defaultLevel`; the format likewise with `$REEL_LOG_FORMAT`, else
    /// text. `verbose` (or `$REEL_FFMPEG_LOG`) shows FFmpeg's own log, `verbose` Reel's debug messages.
    static func bootstrapLogging(
        verbose: Bool, level: Logger.Level? = nil, format: ReelLogHandler.Format? = nil,
        defaultLevel: Logger.Level = .warning
    ) {
        let environment = ProcessInfo.processInfo.environment
        let level = level ?? environment["REEL_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? defaultLevel
        let format =
            format ?? environment["REEL_LOG_FORMAT"].flatMap(ReelLogHandler.Format.init(rawValue:)) ?? .text
        let settings = LogSettings(level: verbose ? min(level, .debug) : level, format: format)
        let first = logSettings.withLock { current -> Bool in
            guard current == nil else { return false }
            current = settings
            return true
        }
        guard first else { return }
        LoggingSystem.bootstrap { label in
            ReelLogHandler(label: label, format: settings.format, logLevel: settings.level)
        }
        // `REEL_FFMPEG_LOG=1` (or `verbose`): FFmpeg's own log down to its info level, whatever the
        // command's flags say (a developer's switch, e.g. for the `reel` processes tests start).
        let ffmpeg = environment["REEL_FFMPEG_LOG"]
        MediaLog.configure(verbose: verbose || ffmpeg == "1" || ffmpeg == "verbose")
    }

    /// The log settings in force (for child processes to inherit).
    static var currentLogSettings: LogSettings? { logSettings.withLock { $0 } }

    /// The signals that stop Reel: Ctrl-C's SIGINT, a supervisor's SIGTERM, and SIGHUP (the terminal
    /// or SSH session closed), which would otherwise kill the process at once, with no log line and a
    /// temporary file left behind. `reel work` takes each as SIGTERM (finish, then hand back), `export`
    /// and `thumbnail` as SIGINT (cancel).
    static let terminationSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Runs `handler` on every SIGINT, SIGTERM and SIGHUP (`terminationSignals`) instead of dying,
    /// until the returned sources are cancelled.
    static func onTerminationSignals(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        terminationSignals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// The first argument (before `--`) that starts with a single `-` but is no short option Reel has
    /// (`-h`, `-o`) and no negative number: a file named `-dash.mp4`, say, which the parser would
    /// otherwise read as the flags `-d -a -s -h …` and answer with the help.
    static func strayDashArgument(in arguments: [String]) -> String? {
        for argument in arguments.prefix(while: { $0 != "--" }) {
            guard argument.hasPrefix("-"), !argument.hasPrefix("--"), argument.count > 2 else { continue }
            if Double(argument) != nil { continue }
            return argument
        }
        return nil
    }

    /// What to write instead when an unknown option may be a file's name.
    static func fileHint(_ argument: String) -> String {
        guard argument.hasPrefix("-"), argument.count > 2, !argument.hasPrefix("--") || argument.contains(".") else {
            return ""
        }
        return "; for a file of that name, write ./\(argument) or put it after --"
    }

    /// Set once a command has printed its failure as its own JSON (export's `failed` event, submit's
    /// refusals), so the generic object is not printed as well.
    static let failurePrintedAsJSON = Mutex(false)

    /// With `--json` among the options, a failure the command did not print as JSON itself: one object
    /// on stdout, `{"command": …, "error": {"code": …, "message": …, "retryable": …}}`, the shape of
    /// export's `failed` event and submit's refusals, so a program reading stdout always gets JSON.
    static func printFailureJSON(_ arguments: [String], code: String, message: String, retryable: Bool) {
        let options = arguments.prefix { $0 != "--" }
        guard options.contains("--json"), !failurePrintedAsJSON.withLock({ $0 }) else { return }
        struct Failure: Encodable {
            struct Reason: Encodable {
                var code: String
                var message: String
                var retryable: Bool
            }
            var command: String
            var error: Reason
        }
        // The command's words: `library show`, `status`.
        let words = options.prefix { !$0.hasPrefix("-") }.prefix(2)
        let command = words.first == "library" || words.first == "db" ? words.joined(separator: " ") : words.first
        printLine(
            jsonLine(
                Failure(command: command ?? "reel", error: .init(code: code, message: message, retryable: retryable))))
    }

    /// Ends the process for an argument error: with `--json` (export, submit), the error as the
    /// command's JSON on stdout too, then one `reel: error:` line; exit 64 unless said otherwise.
    static func refuseArguments(
        _ message: String, arguments: [String], exitCode: Int32 = ExitStatus.usage.rawValue
    ) -> Never {
        let options = arguments.prefix { $0 != "--" }
        if options.contains("--json") {
            let error = ExportError(.invalidArgument, message)
            switch options.first {
            case "export": printLine(ExportEvent.failed(.init(error)).jsonLine)
            case "submit": printLine(jsonLine(SubmitReport(asset: nil, line: nil, refusal: error)))
            default:
                printFailureJSON(arguments, code: error.code.description, message: message, retryable: false)
            }
        }
        printError(message)
        exit(exitCode)
    }

    /// Encodes a value as one line of JSON (sorted keys, so output is stable).
    static func jsonLine<T: Encodable>(_ value: T) -> String {
        guard let data = try? JSONCoding.lineEncoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func printLine(_ text: String) {
        try? FileHandle.standardOutput.write(contentsOf: Data((text + "\n").utf8))
    }

    static func formatBytes(_ bytes: Int64) -> String {
        let value = Double(bytes)
        if value >= 1e9 { return String(format: "%.2f GB", value / 1e9) }
        if value >= 1e6 { return String(format: "%.1f MB", value / 1e6) }
        if value >= 1e3 { return String(format: "%.0f kB", value / 1e3) }
        return "\(bytes) B"
    }

    static func formatDuration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%02d:%02d", total / 60, total % 60)
    }
}
