import Foundation
import ReelExport
import ReelMedia
import ReelQueue
import TestSupport
import Testing

/// `--quality` on `reel submit` reaches the job, the worker searches the CRF, and the status file's
/// result says what it chose and measured.
@Suite("Quality targets in the queue", .tags(.process, .media), .timeLimit(.minutes(10)))
struct QualityJobTests {
    @Test func aQueuedJobMeetsItsTarget() async throws {
        let spool = WorkerProcessTests.Spool()
        let id = try await spool.submit(
            Fixtures.landscape, preset: "640x480", extra: ["--quality", "ssim:0.97", "--force-transcode"])
        #expect(try #require(spool.status(id)).spec?.quality == QualityTarget(metric: .ssim, value: 0.97))
        let worker = try ReelBinary.start(["work", "--drain"], environment: spool.environment)
        try await worker.exit(within: .seconds(300))
        let status = try #require(spool.status(id))
        #expect(status.state == .completed, "\(status.error?.message ?? "")")
        let quality = try #require(status.result?.quality, "\(String(describing: status.result))")
        #expect(quality.target.description == "ssim:0.97" && quality.met)
        #expect(abs((quality.score ?? 0) - 0.97) <= 0.01, "\(quality)")
        #expect(quality.crf != 22, "the preset's own CRF: no search")
    }
}
