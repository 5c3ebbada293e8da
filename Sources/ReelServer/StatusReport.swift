import Foundation
import ReelQueue

/// What `/status.json` answers (and the status page shows): this worker, the store's queue, the
/// running jobs with their progress, recent failures and throughput per preset.
struct StatusReport: Encodable {
    struct Worker: Encodable {
        var name: String
        var version: String
        var commit: String
        /// `running`, `draining`, `cancelling`, `stopped` (or `idle` before it starts).
        var state: String
        var startedAt: Date
        var slots: Int
        var busy: Int
        var store: String
    }

    struct Store: Encodable {
        /// Whether the last look at the store succeeded.
        var available: Bool
        var error: String?
        /// When the counts were taken (they are refreshed every `--stats-interval`).
        var sampledAt: Date?
        var sampleSeconds: Double?
        /// Jobs by state, every state present.
        var counts: [String: Int]
    }

    struct Job: Encodable {
        var id: String
        var preset: String
        var asset: String
        var output: String
        var attempt: Int
        var maxAttempts: Int
        var progress: Double
        var phase: String?
        var fps: Double?
        var etaSeconds: Double?
        var startedAt: Date?
        var worker: String?
        /// Running on this worker (its progress is live), not another.
        var here: Bool
        var orphaned: Bool
    }

    struct Failure: Encodable {
        var id: String
        var preset: String
        var asset: String
        var output: String
        var attempts: Int
        var failedAt: Date
        var code: String
        var message: String
    }

    var generatedAt: Date
    var worker: Worker
    var store: Store
    var running: [Job]
    var recentFailures: [Failure]
    var presets: [StatusBoard.PresetThroughput]
}

extension StatusReport {
    init(
        worker: Worker, snapshot: QueueMonitor.Snapshot?, local: [RunningJobInfo], board: StatusBoard,
        now: Date = Date()
    ) {
        generatedAt = now
        self.worker = worker
        let summary = snapshot?.summary
        store = Store(
            available: summary != nil, error: snapshot?.error, sampledAt: snapshot?.takenAt,
            sampleSeconds: snapshot.map {
                Double($0.duration.components.seconds) + Double($0.duration.components.attoseconds) / 1e18
            },
            counts: Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, summary?.counts[$0] ?? 0) }))
        // This worker's jobs with their live progress, then other workers' from the store's last look.
        var jobs = local.map { info -> Job in
            let spec = info.lease.spec
            return Job(
                id: info.lease.id, preset: spec.preset, asset: spec.asset, output: spec.output,
                attempt: info.lease.attempt, maxAttempts: spec.maxAttempts, progress: info.progress?.fraction ?? 0,
                phase: info.progress?.phase ?? "starting", fps: info.progress?.framesPerSecond,
                etaSeconds: info.progress?.secondsRemaining, startedAt: info.startedAt, worker: worker.name,
                here: true, orphaned: false)
        }
        let mine = Set(jobs.map(\.id))
        for status in summary?.running ?? [] where !mine.contains(status.id) {
            jobs.append(
                Job(
                    id: status.id, preset: status.preset, asset: status.asset, output: status.output,
                    attempt: status.attempts, maxAttempts: status.maxAttempts, progress: status.progress,
                    phase: status.phase, fps: status.fps, etaSeconds: status.etaSeconds, startedAt: status.startedAt,
                    worker: status.worker, here: false, orphaned: status.orphaned == true))
        }
        running = jobs
        recentFailures = (summary?.recentFailures ?? []).map { status in
            Failure(
                id: status.id, preset: status.preset, asset: status.asset, output: status.output,
                attempts: status.attempts, failedAt: status.finishedAt ?? status.updatedAt,
                code: status.error?.code.rawValue ?? "unknown", message: status.error?.message ?? "")
        }
        presets = board.throughput
    }
}
