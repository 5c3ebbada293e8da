import Foundation
import Logging
import ReelSystem
import Synchronization
import Testing

@testable import ReelMedia

/// Reel's log lines stay one line each whatever they carry: a value with a newline, a quote or a
/// backslash is quoted and escaped in text, and JSON lines decode back to what was logged.
@Suite("Log lines", .timeLimit(.minutes(1)))
struct LogHandlerTests {
    static let forged = "clip\n2026-01-01T00:00:00.000Z error reel.worker: forged \"line\" a\\b\r\t\u{1b}.mov"

    static func lines(_ format: ReelLogHandler.Format, _ message: Logger.Message, _ metadata: Logger.Metadata)
        -> [String]
    {
        let written = Mutex<[String]>([])
        let handler = ReelLogHandler(label: "reel.test", format: format, logLevel: .debug) { line in
            written.withLock { $0.append(line) }
        }
        var logger = Logger(label: "reel.test") { _ in handler }
        logger.logLevel = .debug
        logger.info(message, metadata: metadata)
        return written.withLock { $0 }
    }

    @Test func aValueWithANewlineStaysInItsLineInText() throws {
        let written = Self.lines(.text, "job completed", ["asset": "\(Self.forged)", "job": "j1", "empty": ""])
        let line = try #require(written.first)
        #expect(written.count == 1 && line.hasSuffix("\n") && line.dropLast().allSatisfy { !$0.isNewline })
        let escaped = #"asset="clip\n2026-01-01T00:00:00.000Z error reel.worker: forged \"line\" a\\b\r\t\u{1b}.mov""#
        #expect(line.contains(escaped))
        #expect(line.contains(#" empty="" "#) && line.hasSuffix(" job=j1\n"))
        #expect(line.contains(" info reel.test: job completed "))
    }

    @Test func aMessageWithANewlineStaysInItsLineInText() throws {
        let line = try #require(Self.lines(.text, "cannot open \(Self.forged)", [:]).first)
        #expect(line.dropLast().allSatisfy { !$0.isNewline } && line.contains(#"cannot open clip\n2026"#))
    }

    @Test func aJSONLineDecodesToWhatWasLogged() throws {
        let written = Self.lines(.json, "job completed", ["asset": "\(Self.forged)"])
        let line = try #require(written.first)
        #expect(written.count == 1 && line.dropLast().allSatisfy { !$0.isNewline })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect((object["metadata"] as? [String: Any])?["asset"] as? String == Self.forged)
        #expect(object["message"] as? String == "job completed" && object["level"] as? String == "info")
    }

    /// Numbers and booleans logged as values are JSON numbers and booleans (`"attempt":1`), as a log
    /// pipeline's queries expect; text stays text, even when it looks like a number.
    @Test func numbersAndBooleansStayJSONNumbersAndBooleans() throws {
        let written = Self.lines(
            .json, "job completed",
            [
                "attempt": .stringConvertible(1), "elapsed": .stringConvertible(1.25),
                "isolated": .stringConvertible(true), "job": "007",
            ])
        let line = try #require(written.first)
        #expect(line.contains(#""attempt":1"#) && line.contains(#""elapsed":1.25"#), "\(line)")
        #expect(line.contains(#""isolated":true"#) && line.contains(#""job":"007""#), "\(line)")
        let text = try #require(Self.lines(.text, "job completed", ["attempt": .stringConvertible(1)]).first)
        #expect(text.hasSuffix(" attempt=1\n"), "\(text)")
    }
}
