import Foundation
import ReelExport
import ReelQueue
import Synchronization

/// What one worker has done since it started, kept from its pool's events for the status page:
/// throughput per preset, and its recent attempts (when each started and how it ended), which correct
/// a look at the store taken before they started or ended.
public final class StatusBoard: Sendable {
    /// One preset's work on this worker.
    public struct PresetThroughput: Sendable, Codable, Equatable {
        public var preset: String
        public var completed = 0
        public var failed = 0
        public var cancelled = 0
        /// Media seconds exported by completed jobs.
        public var mediaSeconds = 0.0
        /// Wall seconds those exports took.
        public var wallSeconds = 0.0
        public var bytes: Int64 = 0
        /// Media seconds per wall second (nil before the first completed job).
        public var realtimeFactor: Double? { wallSeconds > 0 ? mediaSeconds / wallSeconds : nil }

        public init(preset: String) { self.preset = preset }

        private enum CodingKeys: String, CodingKey {
            case preset, completed, failed, cancelled, mediaSeconds, wallSeconds, bytes, realtimeFactor
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            preset = try c.decode(String.self, forKey: .preset)
            completed = try c.decode(Int.self, forKey: .completed)
            failed = try c.decode(Int.self, forKey: .failed)
            cancelled = try c.decode(Int.self, forKey: .cancelled)
            mediaSeconds = try c.decode(Double.self, forKey: .mediaSeconds)
            wallSeconds = try c.decode(Double.self, forKey: .wallSeconds)
            bytes = try c.decode(Int64.self, forKey: .bytes)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(preset, forKey: .preset)
            try c.encode(completed, forKey: .completed)
            try c.encode(failed, forKey: .failed)
            try c.encode(cancelled, forKey: .cancelled)
            try c.encode(mediaSeconds, forKey: .mediaSeconds)
            try c.encode(wallSeconds, forKey: .wallSeconds)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(realtimeFactor, forKey: .realtimeFactor)
        }
    }

    /// One attempt this worker ran: when it started and, once ended, when and in which state it left
    /// the job.
    struct Attempt: Sendable, Equatable {
        var attempt: Int
        var startedAt: Date
        var endedAt: Date?
        /// `completed`, `failed`, `cancelled`, or `waiting` (a retry after a retryable failure, or a
        /// job handed back).
        var endState: JobState?
    }

    private struct State {
        var presets: [String: PresetThroughput] = [:]
        /// The latest attempt of each job this worker ran, by job id.
        var attempts: [String: Attempt] = [:]
    }

    /// Attempts are kept this long after they end: far longer than any look at the store is kept
    /// (`--stats-interval`, seconds to minutes).
    static let attemptMemory: TimeInterval = 3600

    private let presets: PresetLibrary
    private let state = Mutex(State())
    /// When this worker started.
    public let startedAt = Date()

    public init(presets: PresetLibrary) {
        self.presets = presets
    }

    /// Feeds a pool event in (``WorkerPool/Configuration/onEvent``).
    public func handle(_ event: WorkerPoolEvent) {
        switch event {
        case .stateChanged:
            break
        case .started(let lease, _):
            let now = Date()
            state.withLock { state in
                state.attempts[lease.id] = Attempt(attempt: lease.attempt, startedAt: now)
            }
        case .ended(let lease, let outcome, let elapsed):
            let name = presetName(lease.spec.preset)
            let seconds = elapsed / .seconds(1)
            let now = Date()
            state.withLock { state in
                let started = state.attempts[lease.id].flatMap { $0.attempt == lease.attempt ? $0.startedAt : nil }
                state.attempts[lease.id] = Attempt(
                    attempt: lease.attempt, startedAt: started ?? now.addingTimeInterval(-seconds), endedAt: now,
                    endState: StatusBoard.state(after: outcome, of: lease))
                state.attempts = state.attempts.filter {
                    ($0.value.endedAt.map { now.timeIntervalSince($0) } ?? 0) < StatusBoard.attemptMemory
                }
                var entry = state.presets[name] ?? PresetThroughput(preset: name)
                switch outcome {
                case .completed(let result):
                    entry.completed += 1
                    entry.mediaSeconds += max(0, result.durationSeconds)
                    entry.wallSeconds += seconds
                    entry.bytes += result.bytes
                case .failed:
                    entry.failed += 1
                case .cancelled:
                    entry.cancelled += 1
                case .handBack:
                    break
                }
                state.presets[name] = entry
            }
        }
    }

    /// This worker's recent attempts by job id (the latest of each job).
    var attempts: [String: Attempt] { state.withLock { $0.attempts } }

    /// The state a job is left in when an attempt ends so (the state machine's rule, `JobStatus.end`).
    static func state(after outcome: JobOutcome, of lease: Lease) -> JobState {
        switch outcome {
        case .completed: .completed
        case .failed(let error): error.retryable && lease.attempt < lease.spec.maxAttempts ? .waiting : .failed
        case .cancelled: .cancelled
        case .handBack: .waiting
        }
    }

    /// Throughput per preset, busiest first.
    public var throughput: [PresetThroughput] {
        state.withLock { Array($0.presets.values) }.sorted {
            $0.completed != $1.completed ? $0.completed > $1.completed : $0.preset < $1.preset
        }
    }

    private func presetName(_ name: String) -> String {
        (try? presets.preset(named: name))?.name ?? name
    }
}
