import Synchronization

/// Shares the machine's cores among the jobs a worker pool runs.
///
/// Every running job holds at least one unit. A video transcode that finds nothing else waiting
/// takes every free unit too, and its codecs use that many threads (`StageThreads`), so a lone 4K
/// encode still fills the machine. A backlog instead runs one
/// single-threaded job per unit side by side, which costs less CPU than frame-threaded jobs
/// contending for the same cores (measured in `Scripts/bench`'s batch case; see README). The pool
/// claims only when a unit is free, so a job holding the whole machine is not joined by another.
final class CoreBudget: Sendable {
    /// Units to share: the cores, or `slots` when the user asked for more jobs than cores.
    let total: Int
    /// Cores this process may use (`StageThreads.availableCores()`): no job's codecs get more.
    let cores: Int
    /// Jobs that may run at once (`reel work --jobs`).
    let slots: Int
    private struct State {
        var free: Int
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var hasRoom: Bool { free > 0 && running < slots }
        let slots: Int
    }
    private let state: Mutex<State>

    /// A budget of `cores` cores for at most `slots` jobs at once (each holds at least one unit, so
    /// more slots than cores gives every job a unit of its own).
    init(cores: Int, slots: Int) {
        self.cores = max(1, cores)
        self.slots = max(1, slots)
        total = max(self.cores, self.slots)
        state = Mutex(State(free: self.total, slots: self.slots))
    }

    /// Units not held by any job.
    var free: Int { state.withLock { $0.free } }

    /// Whether another job could start now (a unit and a slot are free).
    var hasRoom: Bool { state.withLock { $0.hasRoom } }

    /// Returns once another job could start (at once if one could). Takes nothing.
    func waitForRoom() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.hasRoom { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Takes a slot and one unit for a job, or every free unit when the job would use them
    /// (`allFree`) or takes the last slot (no job can start beside it, so they would stay idle:
    /// `--jobs 1` on 2 cores ran a backlog one single-threaded job at a time, 1.48x the wall time
    /// of a loop of ffmpeg in `Scripts/bench`'s phone case). Returns how many units it took (0,
    /// taking nothing, when there was no room).
    func take(allFree: Bool) -> Int {
        state.withLock { state in
            guard state.hasRoom else { return 0 }
            let units = allFree || state.running + 1 >= state.slots ? state.free : 1
            state.free -= units
            state.running += 1
            return units
        }
    }

    /// A job ended: gives its slot and units back and wakes whoever waits for room.
    func release(_ units: Int) {
        let waiters = state.withLock { state in
            state.free = min(total, state.free + units)
            state.running = max(0, state.running - 1)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The cores a job holding `units` may use (its `StageThreads` share): its part of the cores, at
    /// least one. A unit is a core unless the user asked for more jobs than cores (`--jobs 4` on 2
    /// cores: a unit is half a core, so a job holding 2 of the 4 units gets 1 thread, not 2 beside two
    /// others). Always a number: a job never lets its codecs count the machine's cores for themselves
    /// (x264 takes 1.5 threads per core, x265 a pool per core, libavcodec a thread per core, whatever
    /// else runs).
    func threads(holding units: Int) -> Int { max(1, min(cores, units * cores / total)) }
}
