import Foundation
import ReelExport
import ReelQueue
import Synchronization
import TestSupport
import Testing

/// What the contract needs from a store under test, beyond the `JobStore` protocol itself.
public protocol StoreHarness: Sendable {
    /// A fresh, empty store whose retries back off with `JobStoreContract.retryBackoff`.
    func makeStore() async throws -> any JobStore
    /// A second handle on the same jobs, as another worker process would open it.
    func reopen(_ store: any JobStore) async throws -> any JobStore
    /// Makes the worker holding `lease` dead as far as the store can tell (its lock dropped, its lease
    /// expired), without it recording anything.
    func killWorker(holding lease: Lease, in store: any JobStore) async throws
    /// Makes every retry that is backing off due now (a fake clock, not a sleep).
    func makeRetriesDue(in store: any JobStore) async throws
}

/// The queue's contract, store-agnostic: every store runs these cases (the spool in ReelQueueTests,
/// PostgreSQL in the fleet's tests).
public enum JobStoreContract {
    /// The backoff of the stores under test: ten minutes, so that "not claimable before its backoff
    /// ended" holds however slow the machine is (with the standard 1–2 s a loaded run saw the retry fall
    /// due between the failure and the next claim); `StoreHarness.makeRetriesDue` ends it on purpose.
    public static let retryBackoff = RetryBackoff(first: 600, maximum: 600)

    public struct Case: Sendable, CustomStringConvertible {
        public let description: String
        let body: @Sendable (any StoreHarness) async throws -> Void
        /// Runs the case against a store made by `harness`.
        public func run(_ harness: any StoreHarness) async throws { try await body(harness) }
    }

    /// Every case of the contract.
    public static let cases: [Case] = [
        Case(description: "priority first, then first in, first out", body: priorityFirstThenFirstInFirstOut),
        Case(description: "every job is claimed exactly once by concurrent workers", body: claimedExactlyOnce),
        Case(description: "an idempotency key returns the existing job", body: idempotencyKey),
        Case(description: "{id} in an output path becomes the job's id", body: outputNamesCarryTheJobID),
        Case(description: "a dead worker's job is queued again; a poison job fails", body: deadWorkersAndPoison),
        Case(description: "a stale owner cannot overwrite the new one", body: staleOwnerIsFenced),
        Case(description: "finish after rescue, before re-claim, returns false", body: finishAfterRescue),
        Case(description: "a cancelled waiting job never starts and can be retried", body: cancelWaiting),
        Case(description: "a cancel reaches a running job through its lease", body: cancelRunning),
        Case(description: "a cancel asked during a shutdown wins over the hand-back", body: cancelDuringHandBack),
        Case(description: "a dead worker's cancelled job ends cancelled", body: cancelOfADeadWorkersJob),
        Case(description: "retryable failures back off, then run again", body: retryableFailuresBackOff),
        Case(description: "a hand-back does not spend an attempt", body: handBackKeepsTheAttempt),
        Case(description: "retry: fresh attempts for failed and cancelled jobs only", body: retryRules),
        Case(description: "renew records progress while the lease is held", body: renewRecordsProgress),
        Case(description: "pending work says what is waiting, backing off and running", body: pendingWork),
        Case(description: "list filters by state, oldest first", body: listing),
        Case(description: "a key reused for a different request is a conflict naming the job", body: keyConflicts),
        Case(description: "one waiting or running job per output path", body: oneJobPerOutput),
        Case(description: "a spec is kept in full, from submit to the worker's lease", body: specKeptInFull),
        Case(description: "prune deletes old finished jobs by state and frees their keys", body: pruning),
        Case(description: "a dead worker's job shows as orphaned until it is rescued", body: orphans),
        Case(description: "the store's own summary agrees with its list", body: summaryAgreesWithList),
        Case(description: "a ladder job keeps its ladder, its renditions' progress and its files", body: ladderJob),
        Case(description: "a thumbnail job keeps its set and its pictures", body: thumbnailJob),
    ]

    // MARK: - Helpers

    static func spec(priority: Int = 0, key: String? = nil, maxAttempts: Int = 3, output: String? = nil)
        async throws -> JobSpec
    {
        JobSpec(
            asset: try await Fixtures.url(Fixtures.landscape).path, preset: "LowQuality", outputType: .mp4,
            output: output ?? Fixtures.folder.appendingPathComponent("never-{id}.mp4").path, priority: priority,
            key: key, maxAttempts: maxAttempts)
    }

    static let emptyResult = JobResult(
        bytes: 0, durationSeconds: 0, width: nil, height: nil, videoCodec: nil, audioCodec: nil, networkOptimized: true,
        elapsedSeconds: 0)

    static func submit(_ store: any JobStore, priority: Int = 0, maxAttempts: Int = 3) async throws -> String {
        try await store.submit(try await spec(priority: priority, maxAttempts: maxAttempts)).status.id
    }

    // MARK: - Cases

    static func priorityFirstThenFirstInFirstOut(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let low = try await submit(store, priority: -5)
        let a = try await submit(store)
        let b = try await submit(store)
        let high = try await submit(store, priority: 10)
        let c = try await submit(store)
        var order: [String] = []
        while let lease = try await store.claim(worker: "test") {
            order.append(lease.id)
            try await store.finish(lease, .completed(emptyResult))
        }
        #expect(order == [high, a, b, c, low])
    }

    static func claimedExactlyOnce(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        var submitted = Set<String>()
        for _ in 0..<120 { submitted.insert(try await submit(store)) }
        let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
            for worker in 0..<6 {
                // Each worker has its own handle on the store, as separate processes would.
                let mine = try await harness.reopen(store)
                group.addTask {
                    var ids: [String] = []
                    while let lease = try await mine.claim(worker: "w\(worker)") {
                        ids.append(lease.id)
                        #expect(try await mine.finish(lease, .completed(emptyResult)))
                    }
                    return ids
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(claimed.count == 120)
        #expect(Set(claimed) == submitted)
        for id in submitted {
            let status = try await store.status(id)
            #expect(status?.state == .completed && status?.attempts == 1, "\(id)")
        }
    }

    static func idempotencyKey(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let first = try await store.submit(try await spec(key: "order-42"))
        let second = try await store.submit(try await spec(key: "order-42"))
        #expect(first.created && !second.created)
        #expect(first.status.id == second.status.id)
        #expect(try await store.list(state: nil).count == 1)
        let other = try await store.submit(try await spec(key: "order-43"))
        #expect(other.created && other.status.id != first.status.id)
    }

    static func outputNamesCarryTheJobID(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let status = try await store.submit(try await spec()).status
        #expect(status.output.hasSuffix("never-\(status.id).mp4"))
        #expect(try await store.status(status.id)?.output == status.output)
    }

    static func deadWorkersAndPoison(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store, maxAttempts: 3)
        for attempt in 1...3 {
            let lease = try #require(try await store.claim(worker: "doomed"))
            #expect(lease.attempt == attempt)
            #expect(try await store.rescueExpired() == 0, "a live lease must not be rescued")
            try await harness.killWorker(holding: lease, in: store)
            #expect(try await store.rescueExpired() == 1)
            #expect(try await store.renew(lease, progress: nil) == .lost)
        }
        let status = try #require(try await store.status(id))
        #expect(status.state == .failed)
        #expect(status.error?.code == .workerCrashed && status.error?.retryable == false)
        #expect(try await store.claim(worker: "next") == nil)
    }

    static func staleOwnerIsFenced(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let stale = try #require(try await store.claim(worker: "stale"))
        try await harness.killWorker(holding: stale, in: store)  // presumed dead…
        try await store.rescueExpired()
        let fresh = try #require(try await store.claim(worker: "fresh"))
        #expect(fresh.token != stale.token && fresh.attempt == 2)
        // …but it wakes up and tries to write: refused, and nothing changes.
        let progress = JobProgress(fraction: 0.9, phase: .transcoding, framesPerSecond: nil, secondsRemaining: nil)
        #expect(try await store.renew(stale, progress: progress) == .lost)
        #expect(
            try await store.finish(stale, .failed(JobError(code: .internal, message: "stale", retryable: false)))
                == false)
        #expect(try await store.status(id)?.state == .exporting)
        #expect(try await store.status(id)?.progress == 0)
        #expect(try await store.renew(fresh, progress: progress) == .held)
        #expect(try await store.finish(fresh, .completed(emptyResult)))
        #expect(try await store.status(id)?.state == .completed)
        #expect(try await store.status(id)?.attempts == 2)
        #expect(try await store.finish(fresh, .completed(emptyResult)) == false, "a finished lease is spent")
    }

    static func finishAfterRescue(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let poison = try await submit(store, maxAttempts: 1)
        let lease = try #require(try await store.claim(worker: "presumed-dead"))
        let last = try #require(try await store.claim(worker: "presumed-dead"))
        #expect(lease.id == id && last.id == poison)
        let before = [
            id: try #require(try await store.status(id)), poison: try #require(try await store.status(poison)),
        ]
        for held in [lease, last] { try await harness.killWorker(holding: held, in: store) }
        #expect(try await store.rescueExpired() == 2)
        // The rescue wrote what the state machine makes of a job whose worker died: waiting again, or
        // failed once its attempts are used up, with the same error code and message.
        for (job, next) in [(id, JobStatus.Next.waiting), (poison, .ended)] {
            var expected = try #require(before[job])
            #expect(expected.orphaned(cancelRequested: false, now: Date()) == next)
            let rescued = try #require(try await store.status(job))
            #expect(rescued.state == expected.state && rescued.attempts == 1 && rescued.worker == nil, "\(job)")
            #expect(rescued.error == expected.error, "\(job): \(String(describing: rescued.error))")
        }
        // The presumed-dead worker wakes up and records its outcomes: refused, and nothing changes.
        #expect(try await store.finish(lease, .completed(emptyResult)) == false)
        #expect(try await store.finish(lease, .handBack) == false)
        #expect(try await store.finish(last, .cancelled) == false)
        let waiting = try #require(try await store.status(id))
        #expect(waiting.state == .waiting && waiting.attempts == 1 && waiting.result == nil)
        #expect(try await store.status(poison)?.state == .failed)
        // The next claim is the job's second attempt, and only its own lease can finish it.
        let next = try #require(try await store.claim(worker: "next"))
        #expect(next.id == id && next.attempt == 2 && next.token != lease.token)
        #expect(try await store.finish(lease, .completed(emptyResult)) == false)
        #expect(try await store.finish(next, .completed(emptyResult)))
        #expect(try await store.status(id)?.state == .completed)
    }

    static func cancelWaiting(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        #expect(try await store.cancel(id) == .cancelled)
        #expect(try await store.claim(worker: "w") == nil)
        #expect(try await store.status(id)?.state == .cancelled)
        #expect(try await store.status(id)?.error?.code == .cancelled)
        #expect(try await store.cancel(id) == .alreadyEnded(.cancelled))
        #expect(try await store.cancel("jnosuchjob0000") == .notFound)
        #expect(try await store.retry(id).state == .waiting)
        #expect(try await store.claim(worker: "w")?.id == id)
    }

    static func cancelRunning(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(try await store.renew(lease, progress: nil) == .held)
        let other = try await harness.reopen(store)
        #expect(try await other.cancel(id) == .requested)
        #expect(try await store.renew(lease, progress: nil) == .cancelRequested)
        #expect(try await store.finish(lease, .cancelled))
        let status = try #require(try await store.status(id))
        #expect(status.state == .cancelled && status.finishedAt != nil && status.worker == nil)
    }

    static func cancelDuringHandBack(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(try await store.cancel(id) == .requested)
        #expect(try await store.finish(lease, .handBack))
        #expect(try await store.status(id)?.state == .cancelled)
        #expect(try await store.claim(worker: "w") == nil)
    }

    static func cancelOfADeadWorkersJob(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(try await store.cancel(id) == .requested)
        try await harness.killWorker(holding: lease, in: store)
        #expect(try await store.rescueExpired() == 1)
        #expect(try await store.status(id)?.state == .cancelled)
        #expect(try await store.claim(worker: "w") == nil)
    }

    static func retryableFailuresBackOff(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(
            try await store.finish(
                lease, .failed(JobError(code: .init(.noSpace), message: "disk full", retryable: true))))
        let waiting = try #require(try await store.status(id))
        #expect(waiting.state == .waiting && waiting.error?.code == JobError.Code(.noSpace))
        let due = try #require(waiting.notBefore)
        // Equal jitter: the first wait is between half the policy's first ceiling and all of it.
        let first = retryBackoff.first
        #expect(
            due >= waiting.updatedAt.addingTimeInterval(first / 2 - 0.01)
                && due <= waiting.updatedAt.addingTimeInterval(first + 0.01))
        #expect(try await store.claim(worker: "w") == nil, "claimed before its backoff ended")
        let pending = try await store.pendingWork()
        #expect(!pending.waiting && pending.nextRetry != nil && !pending.isEmpty)
        try await harness.makeRetriesDue(in: store)
        let again = try #require(try await store.claim(worker: "w"))
        #expect(again.attempt == 2)
        #expect(
            try await store.finish(
                again, .failed(JobError(code: .init(.unreadableInput), message: "corrupt", retryable: false))))
        let failed = try #require(try await store.status(id))
        #expect(
            failed.state == .failed && failed.error?.code == JobError.Code(.unreadableInput) && failed.notBefore == nil)
    }

    static func handBackKeepsTheAttempt(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(try await store.finish(lease, .handBack))
        let status = try #require(try await store.status(id))
        #expect(status.state == .waiting && status.attempts == 0 && status.worker == nil)
        #expect(try await store.claim(worker: "w")?.attempt == 1)
    }

    static func retryRules(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store, maxAttempts: 1)
        await #expect(throws: QueueError.self) { try await store.retry(id) }  // waiting
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(try await store.finish(lease, .failed(JobError(code: .stalled, message: "stuck", retryable: true))))
        #expect(try await store.status(id)?.state == .failed, "no attempts left")
        let retried = try await store.retry(id)
        #expect(retried.state == .waiting && retried.attempts == 0 && retried.error == nil && retried.finishedAt == nil)
        #expect(try await store.claim(worker: "w")?.attempt == 1)
        do {
            _ = try await store.retry("jnosuchjob0000")
            Issue.record("retried a job that does not exist")
        } catch let error as QueueError {
            #expect(error.kind == .notFound)
        }
    }

    static func renewRecordsProgress(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "host:1"))
        let claimed = try #require(try await store.status(id))
        #expect(claimed.state == .exporting && claimed.worker == "host:1" && claimed.startedAt != nil)
        let report = JobProgress(fraction: 0.4567, phase: .transcoding, framesPerSecond: 61.26, secondsRemaining: 3.14)
        #expect(try await store.renew(lease, progress: report) == .held)
        let status = try #require(try await store.status(id))
        #expect(status.progress == 0.457 && status.fps == 61.3 && status.etaSeconds == 3.1)
        #expect(try await store.finish(lease, .completed(emptyResult)))
        let done = try #require(try await store.status(id))
        #expect(done.progress == 1 && done.fps == nil && done.etaSeconds == nil && done.phase == nil)
        #expect(done.result == emptyResult && done.finishedAt != nil)
    }

    static func pendingWork(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        #expect(try await store.pendingWork().isEmpty)
        _ = try await submit(store)
        #expect(try await store.pendingWork().waiting)
        let lease = try #require(try await store.claim(worker: "w"))
        let running = try await store.pendingWork()
        #expect(!running.waiting && running.running && running.nextRetry == nil)
        #expect(try await store.finish(lease, .completed(emptyResult)))
        #expect(try await store.pendingWork().isEmpty)
    }

    static func keyConflicts(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let first = try await store.submit(try await spec(key: "upload-7"))
        // The same request again is the same job, whatever became of it (a client retrying a submit).
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(
            try await store.finish(
                lease, .failed(JobError(code: .init(.unreadableInput), message: "x", retryable: false))))
        let again = try await store.submit(try await spec(key: "upload-7"))
        #expect(!again.created && again.status.id == first.status.id && again.status.state == .failed)
        // A different request under the same key is refused, naming the job and what differs.
        var other = try await spec(key: "upload-7")
        other.preset = "640x480"
        other.timeRange = TimeRange(start: 1, end: 2)
        do {
            _ = try await store.submit(other)
            Issue.record("a conflicting request was accepted under a used key")
        } catch let error as QueueError {
            #expect(error.kind == .conflict)
            #expect(error.message.contains(first.status.id) && error.message.contains("preset"))
            #expect(error.message.contains("time range") && !error.message.contains("asset"))
        }
        // The background colour changes the output, so it is part of the request.
        var tinted = try await spec(key: "upload-7")
        tinted.background = RGBColor(red: 255, green: 0, blue: 0)
        do {
            _ = try await store.submit(tinted)
            Issue.record("a request with another background was accepted under a used key")
        } catch let error as QueueError {
            #expect(error.kind == .conflict)
            #expect(error.message.contains("background (#ff0000, not #000000)") && !error.message.contains("preset"))
        }
        // So do the metadata policy, a forced transcode and a size limit; the priority does not.
        var shaped = try await spec(key: "upload-7")
        shaped.metadata = .strip
        shaped.forceTranscode.toggle()
        shaped.fileLengthLimit = 8_000_000
        do {
            _ = try await store.submit(shaped)
            Issue.record("a request with another metadata policy and size limit was accepted under a used key")
        } catch let error as QueueError {
            #expect(error.kind == .conflict)
            #expect(error.message.contains("metadata (strip, not keep)"), "\(error.message)")
            #expect(error.message.contains("force transcode") && error.message.contains("size limit (8000000 bytes"))
        }
        var reprioritised = try await spec(key: "upload-7")
        reprioritised.priority += 5
        #expect(try await store.submit(reprioritised).status.id == first.status.id)
        #expect(try await store.list(state: nil).count == 1)
    }

    static func specKeptInFull(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        var submitted = try await spec()
        submitted.timeRange = TimeRange(start: 0.5, end: 1.5)
        submitted.metadata = .forSharing
        submitted.forceTranscode = true
        submitted.overwrite = true
        submitted.fileLengthLimit = 900_000
        submitted.background = RGBColor(red: 0, green: 255, blue: 0)
        let id = try await store.submit(submitted).status.id
        submitted.output = submitted.output.replacingOccurrences(of: "{id}", with: id)
        #expect(try await store.status(id)?.spec == submitted)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(lease.spec == submitted)
    }

    static func oneJobPerOutput(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let target = Fixtures.scratchFolder("target").appendingPathComponent("same.mp4").path
        let first = try await store.submit(try await spec(output: target)).status.id
        do {
            _ = try await store.submit(try await spec(output: target))
            Issue.record("two waiting jobs write one file")
        } catch let error as QueueError {
            #expect(error.kind == .conflict && error.message.contains(first) && error.message.contains(target))
        }
        // Still refused while the first runs; free once it has ended.
        let lease = try #require(try await store.claim(worker: "w"))
        await #expect(throws: QueueError.self) { try await store.submit(try await spec(output: target)) }
        #expect(try await store.finish(lease, .failed(JobError(code: .stalled, message: "x", retryable: false))))
        let second = try await store.submit(try await spec(output: target)).status.id
        // The first cannot be retried into the second's file while the second waits.
        await #expect(throws: QueueError.self) { try await store.retry(first) }
        #expect(try await store.cancel(second) == .cancelled)
        #expect(try await store.retry(first).state == .waiting)
        #expect(try await store.list(state: nil).count == 2)
    }

    static func pruning(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let done = try await store.submit(try await spec(key: "k-done")).status.id
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(try await store.finish(lease, .completed(emptyResult)))
        let dropped = try await submit(store)
        #expect(try await store.cancel(dropped) == .cancelled)
        let waiting = try await submit(store)
        // Nothing ended before now minus an hour.
        #expect(
            try await store.prune(finishedBefore: Date().addingTimeInterval(-3600), states: [.completed, .cancelled])
                == 0)
        // A clock an hour ahead: only the states asked for go.
        let later = Date().addingTimeInterval(3600)
        #expect(try await store.prune(finishedBefore: later, states: [.cancelled]) == 1)
        #expect(try await store.status(dropped) == nil)
        #expect(try await store.status(done)?.state == .completed)
        #expect(try await store.prune(finishedBefore: later, states: [.completed, .failed, .cancelled]) == 1)
        #expect(try await store.status(done) == nil)
        #expect(try await store.status(waiting)?.state == .waiting, "an unfinished job is never pruned")
        // The pruned job's key is free again.
        let reused = try await store.submit(try await spec(key: "k-done"))
        #expect(reused.created && reused.status.id != done)
    }

    static func orphans(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let id = try await submit(store)
        let lease = try #require(try await store.claim(worker: "w"))
        let running = try #require(try await store.status(id))
        #expect(running.orphaned != true && running.heartbeatAt != nil)
        try await harness.killWorker(holding: lease, in: store)
        #expect(try await store.status(id)?.orphaned == true)
        #expect(try await store.list(state: .exporting).first?.orphaned == true)
        #expect(try await store.rescueExpired() == 1)
        let rescued = try #require(try await store.status(id))
        #expect(rescued.state == .waiting && rescued.orphaned != true && rescued.heartbeatAt == nil)
    }

    static func summaryAgreesWithList(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        var ids: [String] = []
        for _ in 0..<7 { ids.append(try await submit(store, maxAttempts: 1)) }
        var leases: [Lease] = []
        for _ in 0..<5 { leases.append(try #require(try await store.claim(worker: "w"))) }
        #expect(try await store.finish(leases[0], .completed(emptyResult)))
        // Three failures at distinct times: the summary keeps the latest two, latest first.
        for lease in leases[1...3] {
            let failure = JobError(code: .internal, message: "failed \(lease.id)", retryable: false)
            #expect(try await store.finish(lease, .failed(failure)))
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await store.cancel(ids[6]) == .cancelled)
        let summary = try await store.summarizer().summarize(recentFailures: 2)
        let listed = QueueSummary(statuses: try await store.list(state: nil), recentFailures: 2)
        #expect(summary.counts == listed.counts)
        #expect(summary.counts[.completed] == 1 && summary.counts[.failed] == 3 && summary.counts[.exporting] == 1)
        #expect(summary.counts[.waiting] == 1 && summary.counts[.cancelled] == 1)
        #expect(summary.running.map(\.id) == [leases[4].id])
        #expect(summary.recentFailures.map(\.id) == [leases[3].id, leases[2].id])
        #expect(summary.recentFailures.map(\.id) == listed.recentFailures.map(\.id))
        #expect(summary.recentFailures.first?.error?.message == "failed \(leases[3].id)")
        try await store.checkReachable()
    }

    static func listing(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        let first = try await submit(store)
        let second = try await submit(store)
        let third = try await submit(store)
        #expect(try await store.cancel(second) == .cancelled)
        #expect(try await store.list(state: nil).map(\.id) == [first, second, third])
        #expect(try await store.list(state: .waiting).map(\.id) == [first, third])
        #expect(try await store.list(state: .cancelled).map(\.id) == [second])
        #expect(try await store.list(state: .completed).isEmpty)
    }
}
