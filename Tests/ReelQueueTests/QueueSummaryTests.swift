import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import ReelQueue

/// The spool's summarizer agrees with `list`, and a pass over an unchanged spool reads no status file.
@Suite("Queue summaries", .timeLimit(.minutes(3)))
struct QueueSummaryTests {
    private func spec(_ n: Int, in folder: URL) -> JobSpec {
        JobSpec(
            asset: "/nonexistent/\(n).mov", preset: "LowQuality", outputType: .mp4,
            output: folder.appendingPathComponent("\(n).mp4").path, maxAttempts: 1)
    }

    private func expectAgrees(_ summary: QueueSummary, with store: SpoolStore) async throws {
        let listed = QueueSummary(statuses: try await store.list(state: nil), recentFailures: 5)
        #expect(summary.counts == listed.counts)
        #expect(summary.running.map(\.id) == listed.running.map(\.id))
        #expect(summary.recentFailures.map(\.id) == listed.recentFailures.map(\.id))
    }

    @Test func spoolSummaryFollowsEveryTransition() async throws {
        let outputs = Fixtures.scratchFolder("outputs")
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        var ids: [String] = []
        for n in 0..<12 { ids.append(try await store.submit(spec(n, in: outputs)).status.id) }
        let summarizer = try #require(store.summarizer() as? SpoolSummarizer)
        // Entries are trusted once read a while after their file changed (change times are coarse).
        let settle = Duration.milliseconds(SpoolSummarizer.settled / 1_000_000 + 50)
        try await Task.sleep(for: settle)
        var summary = try await summarizer.summarize(recentFailures: 5)
        #expect(summary.counts[.waiting] == 12 && summarizer.lastPassReads.load(ordering: .relaxed) == 12)

        // Unchanged: nothing read again.
        summary = try await summarizer.summarize(recentFailures: 5)
        #expect(summary.counts[.waiting] == 12 && summarizer.lastPassReads.load(ordering: .relaxed) == 0)

        // Claims, outcomes, a cancel: only the changed files are read.
        var leases: [Lease] = []
        for _ in 0..<4 { leases.append(try #require(try await store.claim(worker: "test:1"))) }
        let result = JobResult(
            bytes: 10, durationSeconds: 1, width: 2, height: 2, videoCodec: "h264", audioCodec: nil,
            networkOptimized: true, elapsedSeconds: 1)
        try await store.finish(leases[0], .completed(result))
        try await store.finish(
            leases[1], .failed(JobError(code: .init(.unreadableInput), message: "gone", retryable: false)))
        try await Task.sleep(for: .milliseconds(20))
        try await store.finish(leases[2], .failed(JobError(code: .internal, message: "later", retryable: false)))
        _ = try await store.cancel(ids[11])
        try await Task.sleep(for: settle)
        summary = try await summarizer.summarize(recentFailures: 5)
        #expect(summarizer.lastPassReads.load(ordering: .relaxed) == 5)
        summary = try await summarizer.summarize(recentFailures: 5)
        #expect(summarizer.lastPassReads.load(ordering: .relaxed) == 0)
        #expect(summary.counts[.completed] == 1 && summary.counts[.failed] == 2 && summary.counts[.exporting] == 1)
        #expect(summary.counts[.cancelled] == 1 && summary.counts[.waiting] == 7)
        #expect(summary.recentFailures.map(\.id) == [leases[2].id, leases[1].id])
        #expect(summary.running.map(\.id) == [leases[3].id])
        try await expectAgrees(summary, with: store)

        // A retry, a prune: counts follow, pruned jobs leave the index.
        _ = try await store.retry(leases[1].id)
        try await store.prune(finishedBefore: Date().addingTimeInterval(60), states: [.completed, .cancelled])
        summary = try await summarizer.summarize(recentFailures: 5)
        #expect(summary.counts[.completed] == 0 && summary.counts[.cancelled] == 0 && summary.counts[.failed] == 1)
        #expect(summary.counts[.waiting] == 8)
        try await expectAgrees(summary, with: store)
    }

    @Test func missingSpoolIsUnavailable() async throws {
        let root = Fixtures.scratchFolder("spool")
        let store = try SpoolStore(root: root)
        try await store.checkReachable()
        let away = root.deletingLastPathComponent().appendingPathComponent("moved-\(UUID().uuidString)")
        try FileManager.default.moveItem(at: root, to: away)
        defer { try? FileManager.default.moveItem(at: away, to: root) }
        await #expect(throws: QueueError.self) { try await store.checkReachable() }
        await #expect(throws: QueueError.self) { try await store.summarizer().summarize(recentFailures: 1) }
    }

    @Test(.timeLimit(.minutes(3)))
    func poolServiceDrainsOnGracefulShutdown() async throws {
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let states = Mutex<[WorkerPool.State]>([])
        var configuration = WorkerPool.Configuration(jobs: 1)
        configuration.onEvent = { event in
            if case .stateChanged(let state) = event { states.withLock { $0.append(state) } }
        }
        let pool = WorkerPool(store: store, configuration: configuration)
        let group = ServiceGroup(services: [WorkerPoolService(pool)], logger: .init(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await eventually(within: .seconds(120)) { pool.state == .running ? true : nil } == true)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(pool.state == .stopped)
        #expect(states.withLock { $0 } == [.running, .draining, .stopped])
    }
}
