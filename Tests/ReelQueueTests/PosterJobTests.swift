import Foundation
import ReelQueue
import TestSupport
import Testing

/// `--poster` on `reel submit` and `poster` in a manifest line reach the job, and the worker writes
/// the poster beside the output.
@Suite("Posters in the queue", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PosterJobTests {
    @Test func submittedAndManifestPostersAreWritten() async throws {
        let spool = WorkerProcessTests.Spool()
        let flagged = try await spool.submit(Fixtures.gop, preset: "640x480", extra: ["--poster"])
        let source = try await Fixtures.url(Fixtures.gop).path
        let line =
            ##"{"asset": "\##(source)", "preset": "Passthrough", "output": "\##(spool.outputs.path)/m.mp4", "poster": true}"##
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        let manifest = try #require(
            (try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(piped.stderr)")
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2"], environment: spool.environment)
        try await worker.exit(within: .seconds(300))
        for id in [flagged, manifest] {
            let status = try #require(spool.status(id))
            #expect(status.state == .completed, "\(status.error?.message ?? "")")
            let poster = URL(fileURLWithPath: status.output).deletingPathExtension().appendingPathExtension("jpg")
            #expect(try await ProbedFile.probe(poster).video?.codec_name == "mjpeg", "\(poster.path)")
        }
    }
}
