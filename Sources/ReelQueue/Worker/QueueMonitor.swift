import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Watches a store every `interval`: takes a ``QueueSummary`` (kept for a status page) and records
/// it through swift-metrics, so a scrape reads the last values instead of the store:
///
/// | name | kind | labels | what |
/// |---|---|---|---|
/// | `reel_jobs` | gauge | state | jobs in the store by state (all workers) |
/// | `reel_store_up` | gauge | | 1 when the last look at the store succeeded, else 0 |
/// | `reel_queue_summary_seconds` | gauge | | how long the last look took |
///
/// A `Service`: `run()` looks until graceful shutdown or cancellation.
public final class QueueMonitor: Service, Sendable {
    /// The latest look at the store.
    public struct Snapshot: Sendable {
        /// The summary, when the store could be read.
        public var summary: QueueSummary?
        /// Why it could not, when it could not.
        public var error: String?
        /// When the look was taken.
        public var takenAt: Date
        /// How long it took.
        public var duration: Duration
    }

    /// The store it watches.
    public let store: any JobStore
    /// How often it looks.
    public let interval: Duration
    /// How many recent failures each summary keeps.
    public let recentFailures: Int
    private let summarizer: any QueueSummarizer
    private let logger: Logger
    private let latest = Mutex<Snapshot?>(nil)

    /// Watches `store` every `interval`, keeping the latest `recentFailures` failures of each look.
    public init(
        store: any JobStore, interval: Duration = .seconds(10), recentFailures: Int = 20,
        logger: Logger = Logger(label: "reel.monitor")
    ) {
        self.store = store
        self.interval = interval
        self.recentFailures = recentFailures
        self.logger = logger
        summarizer = store.summarizer()
    }

    /// The latest look, nil before the first.
    public var snapshot: Snapshot? { latest.withLock { $0 } }

    /// Looks at the store every `interval` until graceful shutdown or cancellation.
    public func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                await refresh()
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
            }
        } onGracefulShutdown: {
        }
    }

    /// Looks at the store now (`run()` does it every `interval`); returns the new snapshot.
    @discardableResult
    public func refresh() async -> Snapshot {
        let began = ContinuousClock.now
        var snapshot = Snapshot(summary: nil, error: nil, takenAt: Date(), duration: .zero)
        do {
            let summary = try await summarizer.summarize(recentFailures: recentFailures)
            snapshot.summary = summary
            for state in JobState.allCases {
                Gauge(label: "reel_jobs", dimensions: [("state", state.rawValue)]).record(summary.counts[state] ?? 0)
            }
        } catch {
            snapshot.error = "\(error)"
            logger.warning("cannot summarize the queue", metadata: ["store": "\(store.location)", "error": "\(error)"])
        }
        snapshot.duration = ContinuousClock.now - began
        Gauge(label: "reel_store_up").record(snapshot.summary == nil ? 0 : 1)
        Gauge(label: "reel_queue_summary_seconds").record(snapshot.duration / .seconds(1))
        let result = snapshot
        latest.withLock { $0 = result }
        return result
    }
}
