import CReelSystem
import Foundation
import ReelExport
import Synchronization
import TestSupport
import Testing

@testable import ReelQueue

/// A worker pool in this process, over a spool: what it does when its lease goes away.
@Suite("Worker pool", .tags(.media), .serialized, .timeLimit(.minutes(5)))
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
        let fresh = try #require(try await rescuer.claim(worker: "rescuer"), "the rescued job could not be claimed")
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

    /// The store stops answering (a network partition that no error reports: renewals hang): the worker
    /// stops its job by itself once its lease must have run out, and publishes nothing, so the job a
    /// rescuer may now give to another worker cannot be finished twice.
    @Test func aWorkerWhoseRenewalsHangStopsItsJobWhenTheLeaseRunsOut() async throws {
        let spool = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let store = PartitionedStore(spool, lease: .seconds(3))
        let outputs = Fixtures.scratchFolder("outputs")
        let spec = JobSpec(
            asset: try await Fixtures.url(Fixtures.long).path, preset: "HighestQuality", outputType: .mp4,
            output: outputs.appendingPathComponent("long.mp4").path, timeRange: TimeRange(start: 0, end: 8),
            forceTranscode: true)
        let id = try await spool.submit(spec).status.id
        let pool = WorkerPool(store: store, configuration: .init(jobs: 1, recoveryInterval: 3600, isolation: nil))
        let running = Task { await pool.run() }
        let exporting = await eventually(within: .seconds(180)) { () -> Bool? in
            guard let status = try? spool.status(id: id), status.state == .exporting, status.progress > 0 else {
                return nil
            }
            return true
        }
        try #require(exporting != nil, "the job never started exporting")
        pool.stop()
        store.partitioned.withLock { $0 = true }
        // The export would take far longer than the lease on this clip; the pool's job ends early.
        try await Self.expectEndedUnpublished(
            pool, running, spool: spool, job: id, outputs: outputs, within: .seconds(60),
            "the job went on past its lease with no renewal getting through")
    }

    /// The store stops answering before the export finishes (renewals hang from the claim on, under a
    /// long lease): the publish gate waits half a lease at most, so the finished job still ends, and
    /// publishes and records nothing.
    @Test func aStoreThatStopsAnsweringCannotHoldAFinishedExportAtItsGate() async throws {
        let spool = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let store = PartitionedStore(spool, lease: .seconds(20))
        store.partitioned.withLock { $0 = true }
        let outputs = Fixtures.scratchFolder("outputs")
        let spec = JobSpec(
            asset: try await Fixtures.url(Fixtures.fourThree).path, preset: "LowQuality", outputType: .mp4,
            output: outputs.appendingPathComponent("four.mp4").path, forceTranscode: true)
        let id = try await spool.submit(spec).status.id
        let pool = WorkerPool(store: store, configuration: .init(jobs: 1, recoveryInterval: 3600, isolation: nil))
        let running = Task { await pool.run() }
        let claimed = await eventually(within: .seconds(60)) { () -> Bool? in
            (try? spool.status(id: id))?.state == .exporting ? true : nil
        }
        try #require(claimed != nil, "the job was never claimed")
        pool.stop()
        // Half a lease at the gate, then a lease of retries to record the outcome: well within this.
        try await Self.expectEndedUnpublished(
            pool, running, spool: spool, job: id, outputs: outputs, within: .seconds(120),
            "the finished job was held at its publish gate by a store that never answered")
    }

    /// A stopped pool cut off from its store: its job ends `within` the limit, leaves no file in
    /// `outputs`, and records nothing (it still reads as the lost attempt's, for a rescuer to take).
    static func expectEndedUnpublished(
        _ pool: WorkerPool, _ running: Task<Void, Never>, spool: SpoolStore, job id: String, outputs: URL,
        within limit: Duration, _ failure: Comment
    ) async throws {
        let ended = await eventually(within: limit) { pool.runningJobs().isEmpty ? true : nil }
        #expect(ended != nil, failure)
        // A job that did not end would hold the pool forever: the test fails instead of waiting.
        guard ended != nil else { return }
        await running.value
        let names = try FileManager.default.contentsOfDirectory(atPath: outputs.path)
        #expect(names.isEmpty, "the worker left \(names) behind")
        let status = try #require(try spool.status(id: id))
        #expect(status.state == .exporting && status.attempts == 1)
    }

    @Test func aGateCheckIsAnsweredOrUnconfirmedWithinItsLimit() async {
        #expect(await PublishVerdict.within(.seconds(60)) { .publish } == .publish)
        let late = await PublishVerdict.within(.milliseconds(50)) {
            try? await Task.sleep(for: .seconds(3600))
            return .publish
        }
        guard case .unconfirmed(let reason) = late else {
            Issue.record("a check that never answered gave \(late)")
            return
        }
        #expect(reason.contains("did not answer"), "\(reason)")
    }

    /// The store refuses every request from the claim on for 4 s, less than the 10 s lease: the export
    /// finishes meanwhile and waits at its publish gate, asking again, until the store answers; then it
    /// publishes and completes on its first attempt (an outage shorter than the lease costs nothing).
    @Test func anOutageShorterThanTheLeaseCostsAFinishedJobNothing() async throws {
        let spool = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let store = PartitionedStore(spool, lease: .seconds(10))
        store.refusing.withLock { $0 = true }
        let outputs = Fixtures.scratchFolder("outputs")
        let spec = JobSpec(
            asset: try await Fixtures.url(Fixtures.fourThree).path, preset: "LowQuality", outputType: .mp4,
            output: outputs.appendingPathComponent("four.mp4").path, forceTranscode: true)
        let id = try await spool.submit(spec).status.id
        let pool = WorkerPool(store: store, configuration: .init(jobs: 1, recoveryInterval: 3600, isolation: nil))
        let running = Task { await pool.run() }
        let claimed = await eventually(within: .seconds(60)) { () -> Bool? in
            (try? spool.status(id: id))?.state == .exporting ? true : nil
        }
        try #require(claimed != nil, "the job was never claimed")
        // The export (well under a second) finishes inside the outage; the outage ends 4 s later.
        try await Task.sleep(for: .seconds(4))
        #expect(!FileManager.default.fileExists(atPath: spec.output), "published without a confirmed lease")
        let refusedWhileDown = store.refusals.load(ordering: .relaxed)
        store.refusing.withLock { $0 = false }
        let completed = await eventually(within: .seconds(60)) { () -> JobStatus? in
            guard let status = try? spool.status(id: id), status.state.isTerminal else { return nil }
            return status
        }
        pool.stop()
        await running.value
        #expect(refusedWhileDown > 0, "the outage was never met")
        #expect(completed?.state == .completed && completed?.attempts == 1, "\(String(describing: completed))")
        #expect(try await ProbedFile.probe(URL(fileURLWithPath: spec.output)).video?.codec_name == "h264")
    }

    /// The worker publishes the output, then its completion is lost and its lease runs out (the store
    /// away for longer than the lease). The job is rescued; the next attempt finds the output carrying
    /// a receipt of this job and completes the job without exporting again: the same file, untouched.
    @Test func aPublishedOutputWhoseCompletionWasLostIsAdoptedNotExportedAgain() async throws {
        let (status, output, published) = try await loseTheFirstCompletion { _ in }
        #expect(status.state == .completed && status.attempts == 2, "\(status)")
        #expect(status.result?.adopted == true && status.result?.decision.contains("attempt 1") == true)
        var now = stat()
        #expect(stat(output.path, &now) == 0 && now.st_ino == published.st_ino && now.st_size == published.st_size)
        #expect(now.st_mtim.tv_sec == published.st_mtim.tv_sec && now.st_mtim.tv_nsec == published.st_mtim.tv_nsec)
        #expect(status.result?.bytes == Int64(published.st_size) && status.result?.videoCodec == "h264")
        // Once recorded, the receipt is gone from the file; nothing else is beside it.
        #expect(getxattr(output.path, PublishReceipt.attribute) == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: output.deletingLastPathComponent().path)
        #expect(names == [output.lastPathComponent])
    }

    /// As above, but someone replaces the published file before the next attempt: that file is not
    /// the job's own, and the job fails `output-exists` without touching it.
    @Test func aFileSomeoneElseWroteAtThePathIsNeverAdopted() async throws {
        let replacement = Data("somebody else's file".utf8)
        let (status, output, _) = try await loseTheFirstCompletion { output in
            let other = output.deletingLastPathComponent().appendingPathComponent("other.tmp")
            try? replacement.write(to: other)
            rename(other.path, output.path)
        }
        #expect(status.state == .failed && status.error?.code == .outputExists, "\(status)")
        #expect(FileManager.default.contents(atPath: output.path) == replacement)
    }

    /// Runs one job whose first completion is lost after publishing (its lease then gone, as after a
    /// store outage longer than the lease); `meanwhile` runs on the output before the rescue. Returns
    /// the job's final status, its output and the output's identity when it was first published.
    private func loseTheFirstCompletion(meanwhile: @escaping @Sendable (URL) -> Void) async throws -> (
        JobStatus, URL, stat
    ) {
        let spool = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let store = PartitionedStore(spool, lease: .seconds(2))
        let outputs = Fixtures.scratchFolder("outputs")
        let output = outputs.appendingPathComponent("four.mp4")
        let published = Mutex<stat?>(nil)
        store.loseCompletion.withLock {
            $0 = { lease in
                guard lease.attempt == 1 else { return false }
                if published.withLock({ $0 }) == nil {
                    var info = stat()
                    _ = stat(output.path, &info)
                    published.withLock { $0 = info }
                    meanwhile(output)
                    // The lease runs out: the lock goes, so a rescue finds the job.
                    spool.releaseLock(of: lease)
                }
                return true
            }
        }
        let spec = JobSpec(
            asset: try await Fixtures.url(Fixtures.fourThree).path, preset: "LowQuality", outputType: .mp4,
            output: output.path, forceTranscode: true)
        let id = try await spool.submit(spec).status.id
        let pool = WorkerPool(store: store, configuration: .init(jobs: 1, recoveryInterval: 0.2, isolation: nil))
        let running = Task { await pool.run() }
        let ended = await eventually(within: .seconds(120)) { () -> JobStatus? in
            guard let status = try? spool.status(id: id), status.state.isTerminal else { return nil }
            return status
        }
        pool.stop()
        await running.value
        let status = try #require(ended, "the job never ended")
        return (status, output, try #require(published.withLock { $0 }, "the output was never published"))
    }

    /// `reel work --keep-finished`: a running pool deletes the jobs that ended longer ago than the
    /// limit by itself (their status file and key go with them) and keeps the recent ones. The old job
    /// is made old by dating its status back, not by waiting.
    @Test func aPoolPrunesFinishedJobsPastKeepFinishedAndKeepsRecentOnes() async throws {
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let outputs = Fixtures.scratchFolder("outputs")
        func spec(_ name: String) -> JobSpec {
            JobSpec(
                asset: "/nonexistent/\(name).mov", preset: "LowQuality", outputType: .mp4,
                output: outputs.appendingPathComponent("\(name).mp4").path, key: name, maxAttempts: 1)
        }
        let old = try await store.submit(spec("old")).status.id
        let recent = try await store.submit(spec("recent")).status.id
        for id in [old, recent] { #expect(try await store.cancel(id) == .cancelled) }
        // Ended two days ago; the pool keeps one day.
        var aged = try #require(try store.status(id: old))
        aged.finishedAt = Date(timeIntervalSinceNow: -2 * 86400)
        aged.updatedAt = aged.finishedAt!
        try store.writeStatus(aged)

        let pool = WorkerPool(
            store: store, configuration: .init(jobs: 1, recoveryInterval: 3600, keepFinished: 86400))
        let running = Task { await pool.run() }
        let pruned = await eventually(within: .seconds(60)) {
            FileManager.default.fileExists(atPath: store.statusFile(old)) ? nil : true
        }
        pool.stop(cancelRunning: true)
        await running.value
        #expect(pruned != nil, "the pool never pruned the old job")
        #expect(try store.status(id: old) == nil)
        #expect(try store.status(id: recent)?.state == .cancelled)
        // The old job's key is free (a new job takes it); the recent one's still names its job.
        let again = try await store.submit(spec("old"))
        #expect(again.created && again.status.id != old)
        let same = try await store.submit(spec("recent"))
        #expect(!same.created && same.status.id == recent)
    }
}

/// A spool whose leases last `lease`, as a database's do, and whose failures a test turns on: renewals
/// hang while `partitioned` (a network partition that no error reports), fail while `refusing` (a
/// database that refuses connections), and recording an outcome fails while `partitioned` or when
/// `loseCompletion` says so for a lease (its answer lost; the lease then runs out, as the hook may
/// show by giving the lock up).
private final class PartitionedStore: JobStore {
    struct Refused: Error {}

    let spool: SpoolStore
    let lease: Duration
    let partitioned = Mutex(false)
    let refusing = Mutex(false)
    /// Renewals refused so far.
    let refusals = Atomic<Int>(0)
    /// Called instead of recording a completion; true when the completion is lost.
    let loseCompletion = Mutex<(@Sendable (Lease) -> Bool)?>(nil)

    init(_ spool: SpoolStore, lease: Duration) {
        self.spool = spool
        self.lease = lease
    }

    var location: String { spool.location }
    var renewInterval: Duration { spool.renewInterval }
    var leaseDuration: Duration? { lease }

    func submit(_ spec: JobSpec) async throws -> Submission { try await spool.submit(spec) }
    func status(_ id: String) async throws -> JobStatus? { try await spool.status(id) }
    func list(state: JobState?) async throws -> [JobStatus] { try await spool.list(state: state) }
    func cancel(_ id: String) async throws -> CancelResult { try await spool.cancel(id) }
    func retry(_ id: String) async throws -> JobStatus { try await spool.retry(id) }
    func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int {
        try await spool.prune(finishedBefore: cutoff, states: states)
    }
    func claim(worker: String) async throws -> Lease? { try await spool.claim(worker: worker) }
    func renew(_ lease: Lease, progress: JobProgress?) async throws -> LeaseState {
        if partitioned.withLock({ $0 }) {
            try await Task.sleep(for: .seconds(3600))
        }
        if refusing.withLock({ $0 }) {
            refusals.add(1, ordering: .relaxed)
            throw Refused()
        }
        return try await spool.renew(lease, progress: progress)
    }
    func finish(_ lease: Lease, _ outcome: JobOutcome) async throws -> Bool {
        if partitioned.withLock({ $0 }) { throw CancellationError() }
        if case .completed = outcome, let lose = loseCompletion.withLock({ $0 }), lose(lease) { throw Refused() }
        return try await spool.finish(lease, outcome)
    }
    func rescueExpired() async throws -> Int { try await spool.rescueExpired() }
    func pendingWork() async throws -> PendingWork { try await spool.pendingWork() }
    func waitForWork(timeout: Duration) async { await spool.waitForWork(timeout: timeout) }
    func statusFile(for id: String) -> String? { spool.statusFile(for: id) }
}

/// The value of an extended attribute of a file, or nil without one.
private func getxattr(_ path: String, _ name: String) -> Data? {
    var buffer = [UInt8](repeating: 0, count: 512)
    let count = reel_getxattr(path, name, &buffer, UInt(buffer.count))
    return count >= 0 ? Data(buffer.prefix(count)) : nil
}
