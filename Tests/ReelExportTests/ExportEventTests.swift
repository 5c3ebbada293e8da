import Foundation
import Testing

@testable import ReelExport

/// The JSON lines of `reel export --json` (README contract) and of an isolated export's report.
@Suite("Export events", .timeLimit(.minutes(2)))
struct ExportEventTests {
    static func object(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func eachEventIsOneFlatObjectNamedByItsEventField() throws {
        let progress = ExportEvent.progress(
            .init(
                ExportSession.Progress(
                    status: .exporting, phase: .transcoding, fraction: 0.123_456, frames: 42, framesPerSecond: 61.54,
                    secondsRemaining: 3.14159, elapsedSeconds: 1)))
        let line = try Self.object(progress.jsonLine)
        #expect(line["event"] as? String == "progress" && line["status"] as? String == "exporting")
        #expect(line["progress"] as? Double == 0.123 && line["fps"] as? Double == 61.5 && line["frames"] as? Int == 42)
        #expect(line["etaSeconds"] as? Double == 3.1 && line["phase"] as? String == "transcoding")

        let failed = ExportEvent.failed(.init(ExportError(.unreadableInput, "broken")))
        let failure = try Self.object(failed.jsonLine)
        let error = try #require(failure["error"] as? [String: Any])
        #expect(failure["event"] as? String == "failed")
        #expect(error["code"] as? String == "unreadable-input" && error["retryable"] as? Bool == false)
        #expect(!failed.jsonLine.contains("\n"))
    }

    @Test func linesReadBackAsTheSameEvent() throws {
        let result = try JSONCoding.decoder.decode(
            ExportSession.Result.self,
            from: Data(
                """
                {"bytes": 10, "durationSeconds": 1.5, "width": 640, "height": 360, "videoCodec": "h264",
                 "audioCodec": "aac", "networkOptimized": true, "elapsedSeconds": 0.5, "method": "transcode",
                 "decision": "re-encoded"}
                """.utf8))
        let events: [ExportEvent] = [
            .completed(.init(output: "/out/a.mp4", preset: "1280x720", type: "mp4", result: result)),
            .failed(.init(code: .stalled, message: "no progress", retryable: true)),
        ]
        for event in events {
            #expect(ExportEvent(jsonLine: Data(event.jsonLine.utf8)) == event)
        }
        #expect(ExportEvent(jsonLine: Data("{\"event\":\"unknown\"}".utf8)) == nil)
        #expect(ExportEvent(jsonLine: Data("not json".utf8)) == nil)
    }
}
