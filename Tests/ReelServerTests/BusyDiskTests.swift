import Foundation
import Synchronization
import TestSupport
import Testing

/// The spool's file work (fsyncs above all) runs on I/O threads of its own, never on Swift's two
/// cooperative threads: with the disk made slow (every fsync of the worker takes 2.5 s longer, as on
/// a disk busy with someone else's writes) and eight exports on two cores, no job's heartbeat ages
/// past what a poller takes for an orphan and the worker's probes answer within their time limit.
/// (With the file work on the cooperative pool, `/readyz` took 2.5 s here; on I/O threads, 0.03 s.)
@Suite("A busy disk", .tags(.process, .media), .timeLimit(.minutes(6)))
struct BusyDiskTests {
    @Test func heartbeatsAndProbesKeepTheirLimitsOnASlowDisk() async throws {
        let queue = Queue()
        let source = try await Fixtures.url(Fixtures.long).path
        var submitted: [String] = []
        for _ in 0..<8 {
            submitted.append(try await queue.submit(source, preset: "LowQuality", extra: ["--force-transcode"]))
        }
        let ids = submitted
        let worker = try await ServedWorker.start(
            queue: queue, ["--jobs", "8", "--no-isolate"],
            environment: try await SlowDisk.environment(milliseconds: 2500))
        let worst = Mutex((probe: 0.0, failedProbes: [String](), heartbeat: 0.0))
        let watching = Task {
            while !Task.isCancelled {
                for path in ["/readyz", "/healthz"] {
                    let result = try? await Tools.run(
                        "curl",
                        [
                            "-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                            worker.url(path),
                        ],
                        timeLimit: .seconds(30))
                    let fields = result?.stdout.split(separator: " ") ?? []
                    let seconds = fields.count == 2 ? Double(fields[1]) ?? 99 : 99
                    worst.withLock { worst in
                        worst.probe = max(worst.probe, seconds)
                        if fields.first != "200" {
                            worst.failedProbes.append("\(path): \(result?.stdout ?? "no answer")")
                        }
                    }
                }
                let now = Date()
                for id in ids {
                    guard let status = queue.status(id), status["state"] as? String == "exporting",
                        let beat = (status["heartbeatAt"] as? String).flatMap(ISO8601DateFormatter().date(from:))
                    else { continue }
                    worst.withLock { $0.heartbeat = max($0.heartbeat, now.timeIntervalSince(beat)) }
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let done = await eventually(within: .seconds(240), every: .milliseconds(500)) {
            ids.allSatisfy { ["completed", "failed", "cancelled"].contains(queue.state($0) ?? "") } ? true : nil
        }
        watching.cancel()
        await watching.value
        await worker.stop()
        #expect(done != nil, "the jobs did not end")
        for id in ids {
            #expect(queue.state(id) == "completed" && queue.status(id)?["attempts"] as? Int == 1, "\(id)")
        }
        let seen = worst.withLock { $0 }
        // /readyz waits at most 2 s for the store before it answers 503; a heartbeat is promised every
        // 5 s (status files, `heartbeatAt`), and a poller may call a job older than 15 s orphaned.
        #expect(seen.failedProbes.isEmpty, "\(seen.failedProbes)")
        #expect(seen.probe < 2, "a probe took \(seen.probe) s")
        #expect(seen.heartbeat < 15, "a heartbeat was \(seen.heartbeat) s old")
    }
}
