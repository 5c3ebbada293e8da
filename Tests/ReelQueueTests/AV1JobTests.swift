import Foundation
import ReelQueue
import TestSupport
import Testing

/// An AV1 preset runs in the queue like any other: `reel submit --preset AV1_1280x720`, then
/// `reel work --drain`, and the job's output is `av01` in MP4.
@Suite("AV1 in the queue", .tags(.process, .media), .timeLimit(.minutes(10)))
struct AV1JobTests {
    @Test func aSubmittedAV1ExportCompletesInTheWorker() async throws {
        let spool = WorkerProcessTests.Spool()
        let id = try await spool.submit(Fixtures.landscape, preset: "AV1_1280x720")
        let worker = try ReelBinary.start(["work", "--drain"], environment: spool.environment)
        try await worker.exit(within: .seconds(300))
        let status = try #require(spool.status(id))
        #expect(status.state == .completed, "\(status.error?.message ?? "")")
        let video = try #require(try await ProbedFile.probe(URL(fileURLWithPath: status.output)).video)
        #expect(video.codec_name == "av1" && video.codec_tag_string == "av01", "\(video)")
        #expect(video.width == 640 && video.height == 360)
    }
}
