import Foundation
import Logging
import ReelExport

/// The job state machine, in one place for every store:
///
/// ```
/// waiting ──claim──▶ exporting ──completed──▶ completed
///    ▲                  │ ├──failed, retryable, attempts left──▶ waiting (after a backoff)
///    │                  │ ├──failed otherwise──▶ failed
///    │                  │ ├──cancelled──▶ cancelled
///    │                  │ ├──handed back (shutdown; the attempt is not counted)──▶ waiting
///    │                  │ └──worker died──▶ waiting, or failed (attempts used up), or cancelled (asked)
///    └──retry── failed / cancelled          waiting ──cancel──▶ cancelled
/// ```
extension JobStatus {
    /// Where a transition leaves the job.
    public enum Next: Sendable, Equatable {
        /// Completed, failed or cancelled: it never runs again unless retried.
        case ended
        /// Waiting, claimable at once.
        case waiting
        /// Waiting, claimable from this time (a retry backing off).
        case waitingUntil(Date)
    }

    /// A worker starts an attempt.
    public mutating func beginAttempt(worker: String, now: Date) {
        state = .exporting
        attempts += 1
        progress = 0
        phase = .transcoding
        fps = nil
        etaSeconds = nil
        renditions = nil
        items = nil
        startedAt = now
        updatedAt = now
        notBefore = nil
        heartbeatAt = now
        self.worker = worker
    }

    /// A running job reports progress.
    public mutating func record(_ report: JobProgress, now: Date) {
        progress = (report.fraction * 1000).rounded() / 1000
        phase = report.phase
        fps = report.framesPerSecond.map { ($0 * 10).rounded() / 10 }
        etaSeconds = report.secondsRemaining.map { ($0 * 10).rounded() / 10 }
        renditions = report.renditions.isEmpty ? nil : ExportSession.RenditionProgress.rounded(report.renditions)
        items = report.items
        updatedAt = now
        heartbeatAt = now
    }

    /// An attempt ended. `backoff` gives the wait before the next attempt after `attempts` attempts.
    public mutating func end(_ outcome: JobOutcome, now: Date, backoff: (Int) -> TimeInterval) -> Next {
        leaveWorker(now: now)
        switch outcome {
        case .completed(let result):
            state = .completed
            progress = 1
            // Every rendition was written in full: the result lists its files.
            if var done = renditions {
                for index in done.indices { done[index].fraction = 1 }
                renditions = done
            }
            if let cache = result.cache { items = JobItems(done: cache.total, total: cache.total) }
            self.result = result
            error = nil
            finishedAt = now
            return .ended
        case .failed(let failure):
            error = failure
            if failure.retryable && attempts < maxAttempts {
                let due = now.addingTimeInterval(backoff(attempts))
                state = .waiting
                progress = 0
                renditions = nil
                items = nil
                notBefore = due
                return .waitingUntil(due)
            }
            state = .failed
            finishedAt = now
            return .ended
        case .cancelled:
            markCancelled(now: now)
            return .ended
        case .handBack:
            state = .waiting
            progress = 0
            renditions = nil
            items = nil
            attempts = max(0, attempts - 1)
            return .waiting
        }
    }

    /// The worker running the job died (or its lease expired) without recording an outcome.
    public mutating func orphaned(cancelRequested: Bool, now: Date) -> Next {
        leaveWorker(now: now)
        if state.isTerminal { return .ended }
        if cancelRequested {
            markCancelled(now: now)
            return .ended
        }
        if attempts >= maxAttempts {
            state = .failed
            finishedAt = now
            error = JobError.workerCrashed(attempts: attempts)
            return .ended
        }
        state = .waiting
        progress = 0
        renditions = nil
        items = nil
        error = JobError.requeuedAfterCrash(attempt: attempts)
        return .waiting
    }

    /// A waiting job is cancelled before it ever ran again.
    public mutating func cancelWhileWaiting(now: Date) {
        leaveWorker(now: now)
        markCancelled(now: now)
    }

    /// A failed or cancelled job goes back in the queue with a fresh set of attempts.
    public mutating func requeue(now: Date) {
        state = .waiting
        attempts = 0
        progress = 0
        renditions = nil
        items = nil
        phase = nil
        fps = nil
        etaSeconds = nil
        worker = nil
        heartbeatAt = nil
        error = nil
        result = nil
        finishedAt = nil
        startedAt = nil
        notBefore = nil
        updatedAt = now
    }

    private mutating func markCancelled(now: Date) {
        state = .cancelled
        error = JobError.cancelledOnRequest
        finishedAt = now
    }

    /// Clears what only a running job has.
    private mutating func leaveWorker(now: Date) {
        worker = nil
        heartbeatAt = nil
        phase = nil
        fps = nil
        etaSeconds = nil
        updatedAt = now
    }

    /// How long a retryable failure waits before the next attempt, with the standard policy.
    public static func backoff(afterAttempts attempts: Int) -> TimeInterval {
        RetryBackoff.standard.delay(afterAttempts: attempts)
    }
}

/// How long a retryable failure waits before its next attempt: exponential (`first` doubling, at most
/// `maximum`) with equal jitter (half fixed, half random), so retries of many jobs spread out. Both
/// stores take one (`SpoolStore.init(retryBackoff:)`, `PostgresStore.Options.retryBackoff`).
public struct RetryBackoff: Sendable, Equatable {
    /// The wait's ceiling after the first attempt (the wait itself lies between half of it and all of it).
    public var first: TimeInterval
    /// The largest ceiling, however many attempts.
    public var maximum: TimeInterval

    public init(first: TimeInterval, maximum: TimeInterval) {
        precondition(first > 0 && maximum >= first, "a backoff needs 0 < first <= maximum")
        self.first = first
        self.maximum = maximum
    }

    /// 2 s doubling, at most 60 s: the first retry comes 1–2 s after the failure.
    public static let standard = RetryBackoff(first: 2, maximum: 60)

    /// The wait after `attempts` attempts.
    public func delay(afterAttempts attempts: Int) -> TimeInterval {
        let base = min(maximum, first * pow(2.0, Double(max(0, attempts - 1))))
        return base / 2 + Double.random(in: 0...(base / 2))
    }
}

extension Logger {
    /// The line every store writes once it has recorded how an attempt ended (`finish`).
    package func recordedOutcome(_ status: JobStatus) {
        debug(
            "finished",
            metadata: [
                "job": "\(status.id)", "state": "\(status.state.rawValue)",
                "error": "\(status.error?.code.rawValue ?? "-")",
            ])
    }
}
