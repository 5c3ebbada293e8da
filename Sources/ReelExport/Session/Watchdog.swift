import Foundation
internal import ReelMedia
import ReelSystem
import Synchronization

/// Runs blocking pipeline work on its own thread and watches its heartbeat: when the beat stands
/// still for `timeout`, it raises the cancel flag (FFmpeg's interrupt callback and the per-packet
/// checks then stop the work). Work that does not return within `grace` after a cancel (stuck inside
/// a codec) is abandoned: its thread is left to finish on its own and `run` returns nil.
///
/// Abandoning is the best a thread can do: the work keeps its core until it returns, and only a
/// process of its own (`reel work --isolate`) can really be stopped.
///
/// Time is measured, and waited for, on the monotonic clock: a step of the wall clock (NTP, a person
/// setting the date) can neither make moving work look stalled nor hide a stall.
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
        let done = MonotonicSignal()
        startThread(named: "reel-pipeline", stackSize: 8 << 20) {
            // The kernel's name too, which the threads the work starts inherit: `top -H`, gdb and
            // the clock-step test tell the pipeline's threads from the watching one by it.
            nameThisThread("reel-pipeline")
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
        let timeout = Duration.seconds(self.timeout)
        let grace = Duration.seconds(self.grace)
        var lastBeat = heartbeat.value
        var lastChange = ContinuousClock.now
        var cancelSeen: ContinuousClock.Instant?
        while !done.wait(seconds: tick) {
            let now = ContinuousClock.now
            let beat = heartbeat.value
            looks.wrappingAdd(1, ordering: .relaxed)
            if beat != lastBeat {
                lastBeat = beat
                lastChange = now
            } else if !cancel.isRaised, now - lastChange > timeout {
                fired.store(true, ordering: .relaxed)
                cancel.raise()
            }
            if cancel.isRaised {
                if let seen = cancelSeen {
                    if now - seen > grace { return nil }
                } else {
                    cancelSeen = now
                }
            }
        }
        return box.withLock { $0 }
    }
}

/// A signal one thread raises once and another waits for, with a time limit on the monotonic clock.
/// (`DispatchSemaphore.wait(timeout:)` waits until a wall-clock deadline on Linux, `sem_timedwait`:
/// a step of the clock back lengthens the wait by the step, and the watchdog would look away.)
///
/// `@unchecked Sendable`: its pthread mutex and condition (clocked on `CLOCK_MONOTONIC`) are allocated
/// once and never move, and `raised` is read and written only with the mutex held.
final class MonotonicSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var raised = false

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func signal() {
        pthread_mutex_lock(mutex)
        raised = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Whether it was raised, waiting at most `seconds` for it.
    func wait(seconds: TimeInterval) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int((max(0, seconds) * 1e9).rounded())
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !raised {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        return raised
    }
}
