import Foundation
import ReelExport
import ReelMedia
import TestSupport
import Testing

@testable import ReelQueue

/// The threads a worker gives each job, as its status file shows them and as x264 used them.
@Suite("Job threads", .tags(.media), .serialized, .timeLimit(.minutes(5)))
struct JobThreadsTests {
    /// Two jobs on a worker of two slots over two cores: the first is claimed while the other waits,
    /// so it gets one core; the status file's result says so, and x264's own settings in the file it
    /// wrote (the encoder's SEI, `threads=N`) say the same.
    @Test func aJobsStatusShowsTheThreadsOfItsShareAndX264UsedThem() async throws {
        let clip = try await Fixtures.url(Fixtures.landscape)
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let outputs = Fixtures.scratchFolder("outputs")
        var ids: [String] = []
        for name in ["first", "second"] {
            let spec = JobSpec(
                asset: clip.path, preset: "1280x720", outputType: .mp4,
                output: outputs.appendingPathComponent("\(name).mp4").path, maxAttempts: 1, forceTranscode: true)
            ids.append(try await store.submit(spec).status.id)
        }
        var configuration = WorkerPool.Configuration(jobs: 2, drain: true, recoveryInterval: 3600)
        configuration.cores = 2
        await WorkerPool(store: store, configuration: configuration).run()

        for (index, id) in ids.enumerated() {
            let data = try Data(contentsOf: URL(fileURLWithPath: store.statusFile(id)))
            let status = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(status["state"] as? String == "completed", "\(status)")
            let result = try #require(status["result"] as? [String: Any])
            let threads = try #require(result["threads"] as? [String: Any], "\(result)")
            let share = try #require(threads["share"] as? Int)
            // Never more than the two cores, never the codecs' own choice (0).
            #expect((1...2).contains(share))
            if index == 0 { #expect(share == 1, "the first job was claimed while the second waited") }
            #expect(threads["decoder"] as? Int == share && threads["encoder"] as? Int == share)
            #expect(threads["scaler"] as? Int == 1 && threads["toneMapper"] as? Int == 1)
            #expect(threads["x265"] as? String == StageThreads(share: share).x265)
            let phases = try #require(result["phases"] as? [String: Any], "\(result)")
            for key in ["probe", "encode", "flush", "verify", "publish"] {
                #expect((phases[key] as? Double ?? -1) >= 0, "\(key) in \(phases)")
            }
            // x264 writes its settings into the stream: the threads it actually ran with.
            let output = try #require(status["output"] as? String)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: output))
            let settings = String(decoding: bytes.prefix(1 << 20), as: UTF8.self)
            #expect(settings.contains(" threads=\(share) "), "x264 did not run with \(share) thread(s)")
        }
    }
}
