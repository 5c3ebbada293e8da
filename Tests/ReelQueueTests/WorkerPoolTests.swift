import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// A worker pool in this process, over a spool: what it does when its lease goes away.
@Suite("Worker pool", .serialized, .timeLimit(.minutes(5)))
struct WorkerPoolTests {
    /// The worker's lease is lost mid-export (as when a paused machine's job is rescued): it stops,
    /// publishes nothing and records nothing; the rescuer's attempt is untouched.
    @Test func aWorkerThatLostItsLeaseStopsAndPublishesNothing() async throws {
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let outputs = Fixtures.scratchFolder("outputs")
        let output = outputs.appendingPathComponent("long.mp4")
        let spec = JobSpec(
            asset: try await Fixtures.url(Fixtures.long).path, preset: "HighestQuality", outputType: .mp4,
            output: output.path, timeRange: TimeRange(start: 0, end: 8), forceTranscode: true)
        let id = try await store.submit(spec).status.id
        let pool = WorkerPool(
            store: store, configuration: .init(jobs: 1, recoveryInterval: 3600, isolation: nil))
        let running = Task { await pool.run() }
        let exporting = await eventually(within: .seconds(180)) { () -> JobStatus? in
            guard let status = try? store.status(id: id), status.state == .exporting, status.progress > 0 else {
                return nil
            }
            return status
        }
        try #require(exporting != nil, "the job never started exporting")
        // The pool drains (no new claims), so once its job stops it cannot claim the requeued job
        // before the rescuer does; its running job goes on until it notices the lost lease.
        pool.stop()
        // Someone else takes the job over: the lock is dropped, a rescue queues it again, a new claim
        // takes it with a new token (the running marker now names the new owner).
        let held = try #require(store.heldLocks.withLock { $0.keys.first })
        let stale = Lease(id: id, attempt: 1, token: held, worker: "w", spec: spec)
        store.releaseLock(of: stale)
        let rescuer = try SpoolStore(root: store.root)
        #expect(try await rescuer.rescueExpired() == 1)
        let fresh = try #require(try await rescuer.claim(worker: "rescuer"))
        #expect(fresh.attempt == 2)
        // The first worker notices at its next heartbeat and stops without publishing or recording.
        let stopped = await eventually(within: .seconds(30)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: outputs.path)) ?? []
            return names.isEmpty ? true : nil
        }
        #expect(stopped != nil, "the stale worker left files behind")
        await running.value
        #expect(!FileManager.default.fileExists(atPath: output.path))
        let status = try #require(try store.status(id: id))
        #expect(status.state == .exporting && status.attempts == 2 && status.worker == "rescuer")
        #expect(try await rescuer.finish(fresh, .cancelled))
    }
}
