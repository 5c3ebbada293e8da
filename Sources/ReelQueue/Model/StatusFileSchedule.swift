import Foundation
import Synchronization

/// When a running job's status file is rewritten, for every store: with new progress at most every
/// `fastest` (a quarter of a second; the first progress after the claim at once), and without news at
/// least every `heartbeat` less one renewal interval, so that with renewals on time its `heartbeatAt`
/// is never older than 5 s, as `JobStatus.heartbeatAt` promises pollers. Time is the monotonic clock's.
package final class StatusFileSchedule: Sendable {
    /// The shortest time between two writes of a job's status file with progress.
    package static let fastest = Duration.milliseconds(250)
    /// The longest time a running job's status file goes unwritten (its `heartbeatAt` promise).
    package static let heartbeat = Duration.seconds(5)

    private let quiet: Duration
    /// When each lease's status file was last written, and last written with progress (nil until its
    /// first progress), by lease token.
    private let lastWrite = Mutex<[String: (any: ContinuousClock.Instant, progress: ContinuousClock.Instant?)]>([:])

    /// For a store whose workers renew every `renewInterval`.
    package init(renewInterval: Duration) {
        quiet = max(.zero, Self.heartbeat - renewInterval)
    }

    /// Whether a renewal of the lease with `token` rewrites its status file (with progress when
    /// `hasProgress`); when it does, the write is counted as made now.
    package func isDue(_ token: String, hasProgress: Bool, now: ContinuousClock.Instant = .now) -> Bool {
        lastWrite.withLock { last in
            let previous = hasProgress ? last[token]?.progress : last[token]?.any
            let wait = hasProgress ? Self.fastest : quiet
            guard previous.map({ now - $0 >= wait }) ?? true else { return false }
            last[token] = (now, hasProgress ? now : last[token]?.progress)
            return true
        }
    }

    /// The lease's status file was written now, without progress (its claim).
    package func wrote(_ token: String, now: ContinuousClock.Instant = .now) {
        lastWrite.withLock { $0[token] = (now, nil) }
    }

    /// The lease ended (finished, lost or handed back): nothing more is written for it.
    package func forget(_ token: String) {
        _ = lastWrite.withLock { $0.removeValue(forKey: token) }
    }
}
