import Foundation
import ReelExport
import Synchronization
import TestSupport
import Testing

@testable import ReelQueue

/// The spool store's guarantees, exercised directly (no exports): atomic claims, priorities,
/// idempotency, fencing, crash recovery and the poison-job limit.
@Suite("Spool store")
struct SpoolStoreTests {
    static func store() throws -> SpoolStore {
        try SpoolStore(root: Fixtures.scratchFolder("spool"))
    }

    static func spec(priority: Int = 0, key: String? = nil, maxAttempts: Int = 3) async throws -> JobSpec {
        JobSpec(
            asset: try await Fixtures.url(Fixtures.landscape).path, preset: "LowQuality", outputType: .mp4,
            output: Fixtures.folder.appendingPathComponent("never-{id}.mp4").path, priority: priority, key: key,
            maxAttempts: maxAttempts)
    }

    @Test func priorityFirstThenFirstInFirstOut() async throws {
        let store = try Self.store()
        let low = try store.submit(try await Self.spec(priority: -5)).status.id
        let a = try store.submit(try await Self.spec()).status.id
        let b = try store.submit(try await Self.spec()).status.id
        let high = try store.submit(try await Self.spec(priority: 10)).status.id
        let c = try store.submit(try await Self.spec()).status.id
        var order: [String] = []
        while let claim = try store.claim(worker: "test") {
            order.append(claim.id)
            try store.finish(claim, .completed(JobResult.empty))
        }
        #expect(order == [high, a, b, c, low])
    }

    @Test func everyJobIsClaimedExactlyOnceByConcurrentWorkers() async throws {
        let store = try Self.store()
        var submitted = Set<String>()
        for _ in 0..<200 { submitted.insert(try store.submit(try await Self.spec()).status.id) }
        let claimed = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<8 {
            group.enter()
            Thread {
                // Each thread has its own view of the spool, as separate processes would.
                let mine = try! SpoolStore(root: store.root)
                while let claim = try! mine.claim(worker: "w\(worker)") {
                    claimed.withLock { $0.append(claim.id) }
                    try! mine.finish(claim, .completed(JobResult.empty))
                }
                group.leave()
            }.start()
        }
        group.wait()
        let ids = claimed.withLock { $0 }
        #expect(ids.count == 200)
        #expect(Set(ids) == submitted)
        #expect(
            try submitted.allSatisfy { try store.status($0)?.state == .completed && store.status($0)?.attempts == 1 })
    }

    @Test func idempotencyKeyReturnsTheExistingJob() async throws {
        let store = try Self.store()
        let first = try store.submit(try await Self.spec(key: "order-42"))
        let second = try store.submit(try await Self.spec(key: "order-42"))
        #expect(first.created && !second.created)
        #expect(first.status.id == second.status.id)
        #expect(store.all().count == 1)
        let other = try store.submit(try await Self.spec(key: "order-43"))
        #expect(other.created && other.status.id != first.status.id)
    }

    @Test func outputNamesCarryTheJobID() async throws {
        let store = try Self.store()
        let status = try store.submit(try await Self.spec()).status
        #expect(status.output.hasSuffix("never-\(status.id).mp4"))
    }

    @Test func aDeadWorkersJobIsQueuedAgainAndPoisonJobsFail() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec(maxAttempts: 3)).status.id
        for attempt in 1...3 {
            let claim = try #require(try store.claim(worker: "doomed"))
            #expect(claim.attempt == attempt)
            #expect(store.recover() == 0, "a live claim must not be recovered")
            claim.lock.release()  // the worker dies: the kernel drops its lock
            #expect(store.recover() == 1)
        }
        let status = try #require(try store.status(id))
        #expect(status.state == .failed)
        #expect(status.error?.code == "worker-crashed" && status.error?.retryable == false)
        #expect(try store.claim(worker: "next") == nil)
    }

    @Test func aStaleOwnerCannotOverwriteTheNewOne() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec()).status.id
        let stale = try #require(try store.claim(worker: "stale"))
        stale.lock.release()  // presumed dead…
        store.recover()
        let fresh = try #require(try store.claim(worker: "fresh"))
        // …but it wakes up and tries to write: refused.
        #expect(try store.update(stale.ticket, progress: 0.9, phase: "transcoding", fps: nil, eta: nil) == false)
        try store.finish(stale, .failed(JobError(code: "internal", message: "stale", retryable: false)))
        #expect(try store.status(id)?.state == .exporting)
        #expect(try store.update(fresh.ticket, progress: 0.5, phase: "transcoding", fps: 30, eta: 1) == true)
        try store.finish(fresh, .completed(JobResult.empty))
        #expect(try store.status(id)?.state == .completed)
        #expect(try store.status(id)?.attempts == 2)
    }

    @Test func cancelOfAWaitingJobMeansItNeverStarts() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec()).status.id
        #expect(try store.cancel(id) == .cancelled)
        #expect(try store.claim(worker: "w") == nil)
        #expect(try store.status(id)?.state == .cancelled)
        #expect(try store.cancel(id) == .alreadyEnded(.cancelled))
        #expect(try store.cancel("jnosuchjob0000") == .notFound)
        // A cancelled job can be retried.
        #expect(try store.retry(id)?.state == .waiting)
        #expect(try store.claim(worker: "w")?.id == id)
    }

    @Test func cancelOfARunningJobIsARequestItsWorkerSees() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec()).status.id
        let claim = try #require(try store.claim(worker: "w"))
        #expect(try store.cancel(id) == .requested)
        #expect(store.cancelRequested(id))
        try store.finish(claim, .cancelled)
        #expect(try store.status(id)?.state == .cancelled)
        #expect(!store.cancelRequested(id))
    }

    @Test func retryableFailuresBackOffThenRunAgain() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec()).status.id
        let claim = try #require(try store.claim(worker: "w"))
        try store.finish(claim, .failed(JobError(code: "no-space", message: "disk full", retryable: true)))
        let waiting = try #require(try store.status(id))
        #expect(waiting.state == .waiting && waiting.notBefore != nil && waiting.error?.code == "no-space")
        #expect(try store.claim(worker: "w") == nil, "claimed before its backoff ended")
        #expect(store.hasPendingWork())
        let wait = try #require(store.secondsUntilNextRetry())
        #expect(wait > 0 && wait <= 2)
        try await Task.sleep(for: .seconds(wait + 0.05))
        let again = try #require(try store.claim(worker: "w"))
        #expect(again.attempt == 2)
        try store.finish(again, .failed(JobError(code: "unreadable-input", message: "corrupt", retryable: false)))
        #expect(try store.status(id)?.state == .failed)
    }

    @Test func handBackDoesNotSpendAnAttempt() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec()).status.id
        let claim = try #require(try store.claim(worker: "w"))
        try store.finish(claim, .handBack)
        #expect(try store.status(id)?.state == .waiting && store.status(id)?.attempts == 0)
        #expect(try store.claim(worker: "w")?.attempt == 1)
    }

    @Test func statusFilesFollowTheSchema() async throws {
        let store = try Self.store()
        let id = try store.submit(try await Self.spec()).status.id
        let data = try Data(contentsOf: URL(fileURLWithPath: store.statusFile(id)))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for field in [
            "schema", "id", "state", "progress", "asset", "preset", "outputType", "output", "attempts", "createdAt",
            "updatedAt", "error",
        ] {
            #expect(json.keys.contains(field), "missing \(field)")
        }
        #expect(json["schema"] as? Int == 1 && json["state"] as? String == "waiting")
        #expect(json["error"] is NSNull)
        #expect((json["createdAt"] as? String)?.hasSuffix("Z") == true)
    }

    @Test func statusStaysFastWithManyJobs() async throws {
        // 5,000 here to keep the suite quick; README reports the 100,000-job figures from Scripts/bench-queue.
        let store = try Self.store()
        var last = ""
        for _ in 0..<5000 { last = try store.submit(try await Self.spec()).status.id }
        #expect(try store.status(last)?.state == .waiting)
        let claim = try #require(try store.claim(worker: "w"))
        try store.finish(claim, .completed(JobResult.empty))
    }
}

extension JobResult {
    static let empty = JobResult(
        bytes: 0, durationSeconds: 0, width: nil, height: nil, videoCodec: nil, audioCodec: nil, networkOptimized: true,
        elapsedSeconds: 0)
}
