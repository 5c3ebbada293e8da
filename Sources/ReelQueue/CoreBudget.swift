import Foundation

/// Shares the machine's cores among the jobs a worker pool runs.
///
/// Every running job holds at least one unit. A video transcode that finds nothing else waiting
/// takes every free unit too, and its codecs use that many threads (all of them: the codecs'
/// own choice), so a lone 4K encode still fills the machine. A backlog instead runs one
/// single-threaded job per unit side by side: in `Scripts/bench`'s batch (20 short clips, 2 cores)
/// that cut Reel's CPU time from 1.03× the sequential ffmpeg loop's (two frame-threaded jobs at once)
/// to 0.91–0.99×, and each job keeps fewer frames in memory. A worker that finds its pool's units all
/// taken waits for one before it claims, so a job holding the whole machine is not joined by another.
final class CoreBudget: @unchecked Sendable {
    let total: Int
    private let condition = NSCondition()
    private var free: Int

    init(total: Int) {
        self.total = max(1, total)
        free = self.total
    }

    enum Admission<Job> {
        /// A job with the units it holds (release them when it ends).
        case admitted(Job, units: Int)
        /// A unit was free but nothing was claimed.
        case nothingToDo
        /// No unit came free within the timeout.
        case busy
    }

    /// Waits at most `timeout` seconds for a free unit, then claims a job with it, all under the
    /// budget's lock: workers admit jobs one at a time, so a job that finds nothing else waiting
    /// takes the rest of the units before another worker can hold one only to find the queue empty.
    /// `scales` says whether a claimed job should take every free unit.
    func admit<Job>(timeout: TimeInterval, claim: () -> Job?, scales: (Job) -> Bool) -> Admission<Job> {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while free == 0 {
            if !condition.wait(until: deadline) { break }
        }
        guard free > 0 else { return .busy }
        guard let job = claim() else { return .nothingToDo }
        free -= 1
        var units = 1
        if scales(job) {
            units += free
            free = 0
        }
        return .admitted(job, units: units)
    }

    func release(_ units: Int) {
        condition.lock()
        free = min(total, free + units)
        condition.broadcast()
        condition.unlock()
    }

    /// The codec thread count for a job holding `units`: 0 (the codecs choose, i.e. every core) when
    /// it holds the whole budget, else the units.
    func threads(holding units: Int) -> Int { units >= total ? 0 : units }
}
