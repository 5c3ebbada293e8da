import Foundation
import PostgresNIO
import ReelExport
import ReelQueue

extension PostgresStore: JobStoreMonitoring {
    public func makeSummarizer() -> any QueueSummarizer { PostgresSummarizer(store: self) }

    /// The database is usable when it answers a query within 5 s (a health check, and a starting
    /// worker's, which a stop must not wait out for the full request timeout).
    public func checkAvailable() async throws {
        try await perform("reach the database", within: .seconds(5)) {
            _ = try await self.client.checkedRows("SELECT 1", logger: self.logger)
        }
    }
}

/// Summarizes the queue with three small queries instead of reading every row (which every worker's
/// monitor would otherwise do every few seconds, jsonb and all): counts by state from the listing
/// index, the running jobs, and the latest failures (the finished-jobs index).
struct PostgresSummarizer: QueueSummarizer {
    let store: PostgresStore

    func summarize(recentFailures limit: Int) async throws -> QueueSummary {
        try await store.perform("summarize the queue") {
            var counts: [JobState: Int] = [:]
            let grouped = try await store.client.checkedRows(
                "SELECT state, count(*) FROM reel_jobs GROUP BY state", logger: store.logger)
            for row in grouped {
                let (state, count) = try row.decode((String, Int).self)
                if let state = JobState(rawValue: state) { counts[state] = count }
            }
            let running = try await store.rows(
                """
                SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE state = 'exporting'
                ORDER BY coalesce(started_at, created_at), seq
                """)
            let failed =
                limit > 0
                ? try await store.rows(
                    """
                    SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE state = 'failed'
                    ORDER BY coalesce(finished_at, updated_at) DESC, id DESC LIMIT \(limit)
                    """) : []
            return QueueSummary(
                counts: counts, running: running.map(\.status), recentFailures: failed.map(\.status),
                takenAt: Date())
        }
    }
}
