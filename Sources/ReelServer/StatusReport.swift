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
        /// The export's phase (`ExportSession.Phase`), or `starting` before its first progress report.
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
    /// One consistent picture: the queue counts and the running table come from the same look at the
    /// store (`snapshot`), corrected by what this worker knows happened since, in both at once. A job
    /// this worker claimed after the look is moved from `waiting` to `exporting` and listed with its
    /// live progress; a job it finished since the look is moved to the state it ended in and is not
    /// listed as running. Other workers' jobs are as the look saw them, so `counts["exporting"]` is
    /// the number of rows in `running` whenever the store lists every running job.
    init(
        worker: Worker, snapshot: QueueMonitor.Snapshot?, local: [RunningJobInfo], board: StatusBoard,
        now: Date = Date()
    ) {
        generatedAt = now
        self.worker = worker
        let summary = snapshot?.summary
        var counts = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, summary?.counts[$0] ?? 0) })
        func move(_ from: JobState, to: JobState) {
            guard summary != nil, from != to else { return }
            counts[from] = max(0, (counts[from] ?? 0) - 1)
            counts[to, default: 0] += 1
        }
        let attempts = board.attempts
        let lookedAt = snapshot?.takenAt ?? .distantPast
        /// Whether this worker ended that attempt of the job (its row in the look is out of date).
        func endedHere(_ id: String, attempt: Int) -> JobState? {
            guard let known = attempts[id], known.attempt == attempt, known.endedAt != nil else { return nil }
            return known.endState
        }
        // This worker's running jobs, with their live progress (an attempt the board saw end since is
        // left out: it is no longer running).
        let live = local.filter { endedHere($0.lease.id, attempt: $0.lease.attempt) == nil }
        let liveByID = Dictionary(live.map { ($0.lease.id, $0) }) { first, _ in first }
        var jobs: [Job] = []
        var listed = Set<String>()
        for status in summary?.running ?? [] {
            if let info = liveByID[status.id] {
                jobs.append(Job(info, worker: worker.name))
                listed.insert(status.id)
            } else if let ended = endedHere(status.id, attempt: status.attempts) {
                // Finished here after the look: counted where it went, not listed.
                move(.exporting, to: ended)
            } else {
                jobs.append(
                    Job(
                        id: status.id, preset: status.preset, asset: status.asset, output: status.output,
                        attempt: status.attempts, maxAttempts: status.maxAttempts, progress: status.progress,
                        phase: status.phase?.rawValue, fps: status.fps, etaSeconds: status.etaSeconds,
                        startedAt: status.startedAt, worker: status.worker, here: false,
                        orphaned: status.orphaned == true))
            }
        }
        // Claimed here after the look: the look counted it waiting.
        for info in live where !listed.contains(info.lease.id) {
            jobs.append(Job(info, worker: worker.name))
            move(.waiting, to: .exporting)
        }
        // Claimed and ended here, both after the look: the look counted it waiting too.
        for (id, attempt) in attempts where !liveByID.keys.contains(id) {
            guard let ended = attempt.endState, attempt.startedAt > lookedAt,
                !(summary?.running ?? []).contains(where: { $0.id == id })
            else { continue }
            move(.waiting, to: ended)
        }
        running = jobs
        store = Store(
            available: summary != nil, error: snapshot?.error, sampledAt: snapshot?.takenAt,
            sampleSeconds: snapshot.map { $0.duration / .seconds(1) },
            counts: Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }))
        recentFailures = (summary?.recentFailures ?? []).map { status in
            Failure(
                id: status.id, preset: status.preset, asset: status.asset, output: status.output,
                attempts: status.attempts, failedAt: status.finishedAt ?? status.updatedAt,
                code: status.error?.code.rawValue ?? "unknown", message: status.error?.message ?? "")
        }
        presets = board.throughput
    }
}

extension StatusReport.Job {
    /// A job running on this worker, with its live progress.
    init(_ info: RunningJobInfo, worker: String) {
        let spec = info.lease.spec
        self.init(
            id: info.lease.id, preset: spec.preset, asset: spec.asset, output: spec.output,
            attempt: info.lease.attempt, maxAttempts: spec.maxAttempts, progress: info.progress?.fraction ?? 0,
            phase: info.progress?.phase.rawValue ?? "starting", fps: info.progress?.framesPerSecond,
            etaSeconds: info.progress?.secondsRemaining, startedAt: info.startedAt, worker: worker, here: true,
            orphaned: false)
    }
}
