import Foundation
import Synchronization

/// A store's queue at one moment, as a status page or a metrics scrape shows it: jobs by state, the
/// running jobs and the latest failures.
public struct QueueSummary: Sendable {
    /// How many jobs are in each state (every state present, zero when none).
    public var counts: [JobState: Int]
    /// Every exporting job, on any worker, oldest first.
    public var running: [JobStatus]
    /// The most recently failed jobs, latest first.
    public var recentFailures: [JobStatus]
    /// When it was taken.
    public var takenAt: Date

    /// A summary; `counts` gains a zero for every state it lacks.
    public init(counts: [JobState: Int], running: [JobStatus], recentFailures: [JobStatus], takenAt: Date) {
        var all = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, 0) })
        all.merge(counts) { $1 }
        self.counts = all
        self.running = running
        self.recentFailures = recentFailures
        self.takenAt = takenAt
    }

    /// Summarizes a list of statuses (what a store without a cheaper way does).
    public init(statuses: [JobStatus], recentFailures limit: Int, takenAt: Date = Date()) {
        var counts: [JobState: Int] = [:]
        for status in statuses { counts[status.state, default: 0] += 1 }
        self.init(
            counts: counts, running: statuses.filter { $0.state == .exporting },
            recentFailures: Array(
                statuses.filter { $0.state == .failed }
                    .sorted { $0.failedAt != $1.failedAt ? $0.failedAt > $1.failedAt : $0.id > $1.id }
                    .prefix(limit)),
            takenAt: takenAt)
    }
}

extension JobStatus {
    /// When a failed job failed (for ordering failures).
    var failedAt: Date { finishedAt ?? updatedAt }
}

/// Makes ``QueueSummary`` values of one store, as cheaply as the store allows. A summarizer may keep
/// state between calls (an index), so keep one per store and call it from one task at a time.
public protocol QueueSummarizer: Sendable {
    /// The queue now, with at most `recentFailures` failures.
    func summarize(recentFailures: Int) async throws -> QueueSummary
}

/// A store that can say more cheaply than `list` how its queue stands, and whether it is reachable.
/// Stores that do not adopt it are summarized from `list(state: nil)` and probed with `pendingWork()`.
public protocol JobStoreMonitoring: JobStore {
    /// A summarizer for this store (called once per monitor).
    func makeSummarizer() -> any QueueSummarizer
    /// Throws ``QueueError`` (`.unavailable`) when the store cannot be reached or used now.
    func checkAvailable() async throws
}

extension JobStore {
    /// A summarizer for this store: its own when it has one, else one that lists every job.
    public func summarizer() -> any QueueSummarizer {
        if let monitoring = self as? any JobStoreMonitoring { return monitoring.makeSummarizer() }
        return ListingSummarizer(store: self)
    }

    /// Throws when the store cannot be reached or used now (a health check).
    public func checkReachable() async throws {
        if let monitoring = self as? any JobStoreMonitoring {
            try await monitoring.checkAvailable()
        } else {
            _ = try await pendingWork()
        }
    }
}

/// Summarizes any store by listing every job.
struct ListingSummarizer: QueueSummarizer {
    let store: any JobStore

    func summarize(recentFailures: Int) async throws -> QueueSummary {
        QueueSummary(statuses: try await store.list(state: nil), recentFailures: recentFailures)
    }
}
