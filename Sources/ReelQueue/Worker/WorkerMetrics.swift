import Foundation
import Metrics

/// The metrics a worker pool records, through swift-metrics' API only: the host picks the backend
/// (`reel work --metrics-port` bootstraps Prometheus); with none bootstrapped they cost nothing.
///
/// Labels stay few and bounded: `preset` is the preset's canonical name (aliases and Apple's prefix
/// resolved; `unknown` when it does not resolve), `code` one of the documented error codes, `method`
/// `transcode`, `passthrough` or `smart-passthrough`.
///
/// | name | kind | labels | what |
/// |---|---|---|---|
/// | `reel_jobs_started_total` | counter | preset | attempts started by this worker |
/// | `reel_jobs_completed_total` | counter | preset, method | attempts that completed |
/// | `reel_jobs_failed_total` | counter | preset, code | attempts that failed (retryable ones run again while attempts remain) |
/// | `reel_jobs_cancelled_total` | counter | preset | jobs cancelled while running here |
/// | `reel_jobs_handed_back_total` | counter | preset | jobs handed back to the queue at shutdown |
/// | `reel_export_duration_seconds` | histogram | preset | wall time of completed exports |
/// | `reel_export_realtime_factor` | histogram | preset | media seconds exported per wall second |
/// | `reel_export_media_seconds_total` | counter | preset | media seconds exported |
/// | `reel_output_bytes_total` | counter | preset | bytes written to completed outputs |
/// | `reel_queue_wait_seconds` | histogram | preset | from submit to the first attempt's start |
/// | `reel_job_attempts` | histogram | outcome | the attempt a job ended on (completed, failed) |
/// | `reel_worker_slots` | gauge | | jobs this worker runs at once (`--jobs`) |
/// | `reel_worker_slots_busy` | gauge | | jobs it is running now |
public enum WorkerMetricNames {
    /// Attempts started (counter; preset).
    public static let started = "reel_jobs_started_total"
    /// Attempts completed (counter; preset, method).
    public static let completed = "reel_jobs_completed_total"
    /// Attempts failed (counter; preset, code).
    public static let failed = "reel_jobs_failed_total"
    /// Jobs cancelled while running (counter; preset).
    public static let cancelled = "reel_jobs_cancelled_total"
    /// Jobs handed back at shutdown (counter; preset).
    public static let handedBack = "reel_jobs_handed_back_total"
    /// Wall time of completed exports (timer: a histogram in seconds; preset).
    public static let exportDuration = "reel_export_duration_seconds"
    /// Media seconds per wall second of completed exports (histogram; preset).
    public static let realtimeFactor = "reel_export_realtime_factor"
    /// Media seconds exported (counter; preset).
    public static let mediaSeconds = "reel_export_media_seconds_total"
    /// Bytes of completed outputs (counter; preset).
    public static let outputBytes = "reel_output_bytes_total"
    /// Submit to first start (timer: a histogram in seconds; preset).
    public static let queueWait = "reel_queue_wait_seconds"
    /// The attempt jobs ended on (histogram; outcome).
    public static let attempts = "reel_job_attempts"
    /// Jobs the pool runs at once (gauge).
    public static let slots = "reel_worker_slots"
    /// Jobs it runs now (gauge).
    public static let slotsBusy = "reel_worker_slots_busy"
}

/// Records a pool's events as metrics.
struct WorkerMetrics: Sendable {
    typealias Names = WorkerMetricNames

    /// The preset label of a job: its canonical name.
    let presetName: @Sendable (JobSpec) -> String

    func slots(_ count: Int) {
        Gauge(label: Names.slots).record(count)
    }

    func busy(_ count: Int) {
        Gauge(label: Names.slotsBusy).record(count)
    }

    func started(_ lease: Lease, submittedAt: Date?, now: Date = Date()) {
        let preset = presetName(lease.spec)
        Counter(label: Names.started, dimensions: [("preset", preset)]).increment()
        if let submittedAt {
            Metrics.Timer(label: Names.queueWait, dimensions: [("preset", preset)])
                .recordSeconds(max(0, now.timeIntervalSince(submittedAt)))
        }
    }

    func ended(_ lease: Lease, _ outcome: JobOutcome, elapsed: Duration) {
        let preset = presetName(lease.spec)
        let dimensions = [("preset", preset)]
        switch outcome {
        case .completed(let result):
            let method = result.methodName
            Counter(label: Names.completed, dimensions: [("preset", preset), ("method", method)]).increment()
            Metrics.Timer(label: Names.exportDuration, dimensions: dimensions).recordSeconds(elapsed / .seconds(1))
            if elapsed > .zero {
                Recorder(label: Names.realtimeFactor, dimensions: dimensions)
                    .record(result.durationSeconds / (elapsed / .seconds(1)))
            }
            FloatingPointCounter(label: Names.mediaSeconds, dimensions: dimensions)
                .increment(by: max(0, result.durationSeconds))
            Counter(label: Names.outputBytes, dimensions: dimensions).increment(by: max(0, result.bytes))
            Recorder(label: Names.attempts, dimensions: [("outcome", "completed")]).record(lease.attempt)
        case .failed(let error):
            Counter(label: Names.failed, dimensions: [("preset", preset), ("code", error.code.rawValue)]).increment()
            if !error.retryable || lease.attempt >= lease.spec.maxAttempts {
                Recorder(label: Names.attempts, dimensions: [("outcome", "failed")]).record(lease.attempt)
            }
        case .cancelled:
            Counter(label: Names.cancelled, dimensions: dimensions).increment()
        case .handBack:
            Counter(label: Names.handedBack, dimensions: dimensions).increment()
        }
    }
}
