import Dispatch
import Foundation
internal import ReelMedia
import Synchronization

/// Runs blocking pipeline work on its own thread and watches its heartbeat: when the beat stands
/// still for `timeout`, it raises the cancel flag (FFmpeg's interrupt callback and the per-packet
/// checks then stop the work). Work that does not return within `grace` after a cancel (stuck inside
/// a codec) is abandoned: its thread is left to finish on its own and `run` returns nil.
///
/// Abandoning is the best a thread can do: the work keeps its core until it returns, and only a
/// process of its own (`reel work --isolate`) can really be stopped.
final class Watchdog: Sendable {
    let timeout: TimeInterval
    let grace: TimeInterval
    /// How often the heartbeat is looked at.
    let tick: TimeInterval
    private let cancel: CancellationFlag
    private let fired = Atomic<Bool>(false)
    private let looks = Atomic<Int>(0)

    /// `tick` defaults to a quarter of `timeout`, at most 0.25 s.
    init(timeout: TimeInterval, cancel: CancellationFlag, grace: TimeInterval = 10, tick: TimeInterval? = nil) {
        self.timeout = timeout
        self.cancel = cancel
        self.grace = grace
        self.tick = tick ?? min(0.25, timeout / 4)
    }

    /// Whether the watchdog stopped the work for lack of progress.
    var stalled: Bool { fired.load(ordering: .relaxed) }

    /// How many times the watchdog has looked at the heartbeat so far.
    var checks: Int { looks.load(ordering: .relaxed) }

    /// Runs `work` and returns its result, or nil when it had to be abandoned.
    func run(
        _ work: @escaping @Sendable (Heartbeat) throws(MediaError) -> Void
    ) -> Result<Void, MediaError>? {
        let heartbeat = Heartbeat()
        let box = Mutex<Result<Void, MediaError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let result: Result<Void, MediaError>
            do throws(MediaError) {
                try work(heartbeat)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            box.withLock { $0 = result }
            done.signal()
        }
        thread.name = "reel-pipeline"
        thread.stackSize = 8 << 20
        thread.start()
        var lastBeat = heartbeat.value
        var lastChange = Date()
        var cancelSeen: Date?
        while done.wait(timeout: .now() + tick) == .timedOut {
            let now = Date()
            let beat = heartbeat.value
            looks.wrappingAdd(1, ordering: .relaxed)
            if beat != lastBeat {
                lastBeat = beat
                lastChange = now
            } else if !cancel.isRaised, now.timeIntervalSince(lastChange) > timeout {
                fired.store(true, ordering: .relaxed)
                cancel.raise()
            }
            if cancel.isRaised {
                if let seen = cancelSeen {
                    if now.timeIntervalSince(seen) > grace { return nil }
                } else {
                    cancelSeen = now
                }
            }
        }
        return box.withLock { $0 }
    }
}
