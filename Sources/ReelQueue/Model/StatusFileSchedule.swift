import Foundation
import Synchronization

/// When a running job's status file is rewritten, for every store: with new progress at most every
/// `fastest` (a quarter of a second; the first progress after the claim at once), and without news at
/// least every `heartbeat` less one renewal interval, so that with renewals on time its `heartbeatAt`
/// is never older than 5 s, as `JobStatus.heartbeatAt` promises pollers. Time is the monotonic clock's,
/// or, for a store that stamps heartbeats with its own clock (PostgreSQL's `now()`), those stamps: a
/// renewal answered late (a loaded machine, a queued UPDATE) is then measured from when the database
/// recorded it, not from when its answer arrived, so the file's heartbeat is never more than the quiet
/// interval behind the database's, however late the answers come (answers measured on arrival let it
/// fall 5.3 s behind in a loaded test run).
package final class StatusFileSchedule: Sendable {
    /// The shortest time between two writes of a job's status file with progress.
    package static let fastest = Duration.milliseconds(250)
    /// The longest time a running job's status file goes unwritten (its `heartbeatAt` promise).
    package static let heartbeat = Duration.seconds(5)

    private let quiet: Duration
    /// When each lease's status file was last written, and last written with progress (nil until its
    /// first progress), by lease token.
    private let lastWrite = Mutex<[String: Written]>([:])

    /// A lease's last write: when (monotonic), when with progress, and the heartbeat it carried (a
    /// store's own stamp, when it gives one).
    private struct Written {
        var any: ContinuousClock.Instant
        var progress: ContinuousClock.Instant?
        var heartbeat: Date?
    }

    /// For a store whose workers renew every `renewInterval`.
    package init(renewInterval: Duration) {
        quiet = max(.zero, Self.heartbeat - renewInterval)
    }

    /// Whether a renewal of the lease with `token` rewrites its status file (with progress when
    /// `hasProgress`); when it does, the write is counted as made now. `heartbeat` is the store's own
    /// stamp of this renewal, when it has one: the quiet interval is then measured between stamps.
    package func isDue(
        _ token: String, hasProgress: Bool, heartbeat: Date? = nil, now: ContinuousClock.Instant = .now
    ) -> Bool {
        lastWrite.withLock { last in
            let previous = last[token]
            let due: Bool
            if hasProgress {
                due = previous?.progress.map { now - $0 >= Self.fastest } ?? true
            } else if let heartbeat, let written = previous?.heartbeat {
                due = heartbeat.timeIntervalSince(written) >= quiet / .seconds(1)
            } else {
                due = previous.map { now - $0.any >= quiet } ?? true
            }
            guard due else { return false }
            last[token] = Written(any: now, progress: hasProgress ? now : previous?.progress, heartbeat: heartbeat)
            return true
        }
    }

    /// The lease's status file was written now, without progress (its claim), with the store's
    /// heartbeat stamp when it has one.
    package func wrote(_ token: String, heartbeat: Date? = nil, now: ContinuousClock.Instant = .now) {
        lastWrite.withLock { $0[token] = Written(any: now, progress: nil, heartbeat: heartbeat) }
    }

    /// The lease ended (finished, lost or handed back): nothing more is written for it.
    package func forget(_ token: String) {
        _ = lastWrite.withLock { $0.removeValue(forKey: token) }
    }
}
