import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

/// Presentation helpers shared by the commands.
enum CLI {
    static func printError(_ message: String) {
        let line = message.replacingOccurrences(of: "\n", with: " ")
        try? FileHandle.standardError.write(contentsOf: Data("reel: error: \(line)\n".utf8))
    }

    static func exitCode(for error: ExportError) -> Int32 {
        switch error.code {
        case .invalidArgument, .unknownPreset, .invalidPreset: 64
        case .unreadableInput, .unsupportedCodec, .incompatiblePreset, .limitExceeded: 65
        case .noSpace, .outputFailed, .outputExists: 74
        default: 1
        }
    }

    static func exitCode(for error: QueueError) -> Int32 {
        switch error.kind {
        case .invalid: 64
        case .unavailable: 69
        case .notFound, .conflict: 1
        }
    }

    nonisolated(unsafe) private static var loggingReady = false

    static func bootstrapLogging(verbose: Bool, level: Logger.Level = .warning) {
        guard !loggingReady else { return }
        loggingReady = true
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : level
            return handler
        }
        MediaLog.configure(verbose: verbose)
    }

    /// Runs `handler` on every SIGINT and SIGTERM (instead of dying) until the returned sources are
    /// cancelled.
    static func onTerminationSignals(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

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
