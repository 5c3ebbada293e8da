import Foundation
import TestSupport
import Testing

/// What a worker logs about a job cannot be forged by the job: an asset named with a newline shows
/// in its `job completed` line escaped, and every line the worker writes is a whole log line.
@Suite("Worker log lines", .tags(.process, .media), .timeLimit(.minutes(3)))
struct WorkerLogTests {
    @Test func anAssetNamedWithANewlineCannotForgeALogLine() async throws {
        let spool = WorkerProcessTests.Spool()
        let name = "clip\n2026-01-01T00:00:00.000Z error reel.worker: job failed code=internal \"x\".mov"
        let asset = Fixtures.scratchFolder("newline-asset").appendingPathComponent(name)
        try FileManager.default.copyItem(at: try await Fixtures.url(Fixtures.landscape), to: asset)
        let submitted = try await ReelBinary.run(
            ["submit", asset.path, "--preset", "LowQuality", "--output-dir", spool.outputs.path],
            environment: spool.environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let worker = try await ReelBinary.run(
            ["work", "--drain", "--jobs", "1", "--log-format", "text"], environment: spool.environment)
        #expect(worker.status == 0, "\(worker.stderr)")
        let lines = worker.stderr.split(separator: "\n")
        let timestamp = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (trace|debug|info|notice|warning|error|critical) /#
        #expect(lines.allSatisfy { $0.firstMatch(of: timestamp) != nil }, "\(worker.stderr)")
        // The name's "job failed" stays inside the completed line, escaped: no line is one of its own.
        #expect(!lines.contains { $0.firstMatch(of: #/^\S+ \w+ reel\.worker: job failed/#) != nil }, "\(worker.stderr)")
        let completed = try #require(lines.first { $0.contains("job completed") }, "\(worker.stderr)")
        let escaped = #"clip\n2026-01-01T00:00:00.000Z error reel.worker: job failed code=internal \"x\".mov""#
        #expect(completed.contains(escaped))
    }
}
