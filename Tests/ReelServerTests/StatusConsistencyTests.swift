import Foundation
import TestSupport
import Testing

/// The status page agrees with itself: its queue counts and its running table come from one look at
/// the store, corrected together by what the worker did since. With the store looked at once, when the
/// worker starts, a job the worker then ran to the end is counted completed and not listed as running.
@Suite("Status report agrees with itself", .tags(.media), .serialized, .timeLimit(.minutes(5)))
struct StatusConsistencyTests {
    static func report(_ worker: ServedWorker) async throws -> [String: Any] {
        let (status, body) = try await worker.get("/status.json")
        #expect(status == 200)
        return try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], "\(body)")
    }

    static func counts(_ report: [String: Any]) -> [String: Int] {
        ((report["store"] as? [String: Any])?["counts"] as? [String: Int]) ?? [:]
    }

    static func runningIDs(_ report: [String: Any]) -> [String] {
        ((report["running"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
    }

    @Test func countsAndTheRunningTableComeFromOneSnapshot() async throws {
        let queue = Queue()
        let source = try await Fixtures.url(Fixtures.landscape).path
        let jobs = [
            try await queue.submit(source, preset: "LowQuality", extra: ["--force-transcode"]),
            try await queue.submit(source, preset: "MediumQuality", extra: ["--force-transcode"]),
        ]
        // One look at the store, when the worker starts: everything after it is the worker's own news.
        let worker = try await ServedWorker.start(queue: queue, ["--jobs", "1"], statsInterval: "3600")
        defer { Task { await worker.stop() } }
        var looks = 0
        let done = await eventually(within: .seconds(120)) { () async -> Bool? in
            guard let report = try? await Self.report(worker) else { return nil }
            looks += 1
            let counts = Self.counts(report)
            let running = Self.runningIDs(report)
            #expect(counts["exporting"] == running.count, "counts \(counts), running \(running)")
            #expect(counts.values.reduce(0, +) == jobs.count, "counts \(counts)")
            return jobs.allSatisfy { worker.state($0) == "completed" } ? true : nil
        }
        #expect(done == true, "worker log:\n\(worker.process.output)")
        // Both done: the counts say so, and neither is listed, though the store was last looked at before
        // either started. (A status file says `completed` a moment before the worker has recorded the
        // end itself, hence the wait.)
        let report = await eventually(within: .seconds(30)) { () async -> [String: Any]? in
            guard let report = try? await Self.report(worker) else { return nil }
            return Self.runningIDs(report).isEmpty ? report : nil
        }
        let counts = Self.counts(report ?? [:])
        #expect(report != nil, "a completed job is still listed as running")
        #expect(counts["completed"] == 2 && counts["waiting"] == 0 && counts["exporting"] == 0, "\(counts)")
        let sampled = try #require((report?["store"] as? [String: Any])?["sampledAt"] as? String)
        #expect(looks > 0 && !sampled.isEmpty)
    }
}
