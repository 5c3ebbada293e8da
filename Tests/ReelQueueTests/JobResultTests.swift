import Foundation
import ReelExport
import Testing

@testable import ReelQueue

/// A job's result is the export's result: every field an export reports reaches the status file (and
/// `reel status --json`, which prints the same `JobStatus`), under the export's own keys.
@Suite("Job results", .timeLimit(.minutes(1)))
struct JobResultTests {
    /// An export's result with every optional field set.
    static let full: ExportSession.Result = {
        var result = ExportSession.Result(
            bytes: 1_878_795, durationSeconds: 8.011, width: 1280, height: 720, videoCodec: "h264", audioCodec: "aac",
            networkOptimized: true, elapsedSeconds: 5.448_4, method: .smartPassthrough, decision: "copied: fits",
            verificationSeconds: 0.25, encodingPasses: 2,
            metadata: .init(["com.apple.quicktime.location.ISO6709": "+48.8584+002.2945/", "model": "Pixel"]))
        result.timeRange = TimeRange(start: 2, end: 5)
        result.requestedTimeRange = TimeRange(start: 2, end: 9)
        return result
    }()

    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: JSONCoding.lineEncoder.encode(value)) as? [String: Any])
    }

    @Test func aStatusFileCarriesEveryFieldOfTheExportsResult() throws {
        var status = JobStatus(
            id: "j1", spec: JobSpec(asset: "/a.mov", preset: "1280x720", outputType: .mp4, output: "/a.mp4"),
            now: Date())
        status.result = JobResult(Self.full)
        let written = try #require(try Self.object(status)["result"] as? [String: Any])
        let exported = try Self.object(Self.full)
        #expect(Set(written.keys) == Set(exported.keys))
        #expect(written["verificationSeconds"] as? Double == 0.25 && written["encodingPasses"] as? Int == 2)
        #expect((written["timeRange"] as? [String: Any])?["end"] as? Double == 5)
        #expect((written["requestedTimeRange"] as? [String: Any])?["end"] as? Double == 9)
        #expect((written["metadata"] as? [String: Any])?["device"] as? [String] == ["model"])
        #expect(written["method"] as? String == "smart-passthrough" && written["elapsedSeconds"] as? Double == 5.448)
        let read = try JSONCoding.decoder.decode(JobStatus.self, from: JSONCoding.lineEncoder.encode(status))
        #expect(read.result == status.result && read.result?.verificationSeconds == 0.25)
    }

    @Test func anAdoptedOutputReadsAsAdopted() throws {
        let adopted = JobResult(Self.full, adopted: true)
        #expect(try Self.object(adopted)["method"] as? String == "adopted")
        let read = try JSONCoding.decoder.decode(JobResult.self, from: JSONCoding.lineEncoder.encode(adopted))
        #expect(read.adopted && read.methodName == "adopted" && read.bytes == Self.full.bytes)
    }

    /// Status files written before results had a method and a decision (0.1) are still read.
    @Test func anOlderStatusFilesResultIsRead() throws {
        let older = Data(
            """
            {"bytes":10,"durationSeconds":1.5,"width":64,"height":48,"videoCodec":"h264","audioCodec":null,
             "networkOptimized":true,"elapsedSeconds":0.5}
            """.utf8)
        let read = try JSONCoding.decoder.decode(JobResult.self, from: older)
        #expect(read.bytes == 10 && read.width == 64 && read.method == .transcode && read.decision.isEmpty)
        #expect(!read.adopted && read.verificationSeconds == nil)
    }
}
