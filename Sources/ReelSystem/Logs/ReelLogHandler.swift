import Foundation
import Logging

/// Reel's log lines: one line per event, timestamps in UTC to the millisecond. The `reel` command
/// writes them on stderr; the tests' own processes into their log file (TestSupport's `TestLog`).
///
/// `text`: `2026-11-23T09:34:42.123Z error reel.worker: job failed code=unreadable-input job=j…`
/// `json`: `{"timestamp":"2026-11-23T09:34:42.123Z","level":"error","label":"reel.worker",
/// "message":"job failed","metadata":{"code":"unreadable-input","job":"j…",…}}`
///
/// In text, a value with a space, a quote or a control character is quoted, with `\`, `"` and
/// control characters escaped (`\n`, `\r`, `\t`, `\u{1b}`), and control characters in a message are
/// escaped too: nothing logged (an asset named with a newline) can end a line early or forge one.
package struct ReelLogHandler: LogHandler {
    package enum Format: String, CaseIterable, Sendable {
        case text, json
    }

    let label: String
    let format: Format
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    /// Where each whole line goes, its newline included (stderr by default).
    private let write: @Sendable (String) -> Void

    package init(
        label: String, format: Format, logLevel: Logger.Level,
        write: @escaping @Sendable (String) -> Void = { try? FileHandle.standardError.write(contentsOf: Data($0.utf8)) }
    ) {
        self.label = label
        self.format = format
        self.logLevel = logLevel
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let line: String
        switch format {
        case .text:
            let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\(ReelLogHandler.text($0.value))" }
            let message = ReelLogHandler.escaped(event.message.description, quoting: false)
            line = ([ReelLogHandler.timestamp(), event.level.rawValue, "\(label):", message] + fields)
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
        write(line + "\n")
    }

    /// A metadata value in the text format: as it is when it is one plain word, else quoted.
    static func text(_ value: Logger.Metadata.Value) -> String {
        let plain = "\(value)"
        let plainWord = !plain.isEmpty && !plain.unicodeScalars.contains { $0 == " " || $0 == "\"" || isControl($0) }
        return plainWord ? plain : "\"\(escaped(plain, quoting: true))\""
    }

    /// `text` with control characters escaped, and with `quoting`, `\` and `"` too.
    static func escaped(_ text: String, quoting: Bool) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || (quoting && ($0 == "\\" || $0 == "\"")) }) else {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\" where quoting: out.append(contentsOf: #"\\"#.unicodeScalars)
            case "\"" where quoting: out.append(contentsOf: #"\""#.unicodeScalars)
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": out.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": out.append(contentsOf: #"\t"#.unicodeScalars)
            case _ where isControl(scalar):
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        // Numbers and booleans logged as values (`.stringConvertible(attempt)`) stay JSON numbers and
        // booleans (`"attempt":1`); anything else is its description.
        case .stringConvertible(let convertible):
            switch convertible {
            case let flag as Bool: flag
            case let number as any BinaryInteger: Int64(exactly: number).map { $0 as Any } ?? convertible.description
            case let number as Double where number.isFinite: number
            default: convertible.description
            }
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
