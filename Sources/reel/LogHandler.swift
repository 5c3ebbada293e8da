import ArgumentParser
import Foundation
import Logging

/// Reel's log lines on stderr: one line per event, timestamps in UTC to the millisecond.
///
/// `text`: `2026-11-23T09:34:42.123Z error reel.worker: job failed code=unreadable-input job=j…`
/// `json`: `{"timestamp":"2026-11-23T09:34:42.123Z","level":"error","label":"reel.worker",
/// "message":"job failed","metadata":{"code":"unreadable-input","job":"j…",…}}`
struct ReelLogHandler: LogHandler {
    enum Format: String, CaseIterable, ExpressibleByArgument, Sendable {
        case text, json
    }

    let label: String
    let format: Format
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let line: String
        switch format {
        case .text:
            let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\(ReelLogHandler.text($0.value))" }
            line =
                ([ReelLogHandler.timestamp(), event.level.rawValue, "\(label):", event.message.description] + fields)
                .joined(separator: " ")
        case .json:
            var object: [String: Any] = [
                "timestamp": ReelLogHandler.timestamp(), "level": event.level.rawValue, "label": label,
                "message": event.message.description,
            ]
            if !all.isEmpty { object["metadata"] = all.mapValues(ReelLogHandler.json) }
            let data =
                (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            line = data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
        // One write per line, so lines from several threads never interleave.
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }

    private static func text(_ value: Logger.Metadata.Value) -> String {
        let plain = "\(value)"
        return plain.contains(" ") || plain.isEmpty ? "\"\(plain)\"" : plain
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }

    /// `2026-11-23T09:34:42.123Z`, without a formatter (cheap enough for every line).
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, Int(now.tv_nsec / 1_000_000))
    }
}
