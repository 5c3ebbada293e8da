internal import CFFmpegShim
import Foundation
import Synchronization

/// Writeback and the closing fsync of one output file, on a thread of its own, for a writer that
/// only moves bytes (a remux): `sync_file_range` builds and queues the block I/O on the calling
/// thread (about 0.5 ms per 8 MiB here, up to 12 ms when the device queue is full), which is
/// work the copy then waits for; and the closing fsync (the tail of the file, 10–25 ms on a
/// 129 MB remux) can run while the caller reads the file back from the page cache to verify it.
///
/// Owns a duplicate of the file's descriptor, closed when the thread ends, so the writer may close
/// its own. The guarantee is unchanged: `PendingSync.wait()` returns only once fsync succeeded, and
/// the file is published only after that.
final class BackgroundSync: Sendable {
    private struct State {
        /// The range written since the last writeback request was taken (empty when none).
        var from: Int64 = .max
        var to: Int64 = 0
        /// Set by `finish` (sync, then end) or `abandon` (end without syncing).
        var ending: Ending?
    }
    private enum Ending { case sync, abandon }

    /// What the thread and the writer share.
    private final class Shared: Sendable {
        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()
    private let thread: JoinableThread<Int32>

    /// Starts the thread for the file open at `descriptor` (duplicated). Nil when it cannot be
    /// duplicated: the caller then syncs on its own thread, as before.
    init?(descriptor: Int32) {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return nil }
        let shared = shared
        thread = JoinableThread(name: "reel-writeback", stackSize: 256 << 10) {
            defer { close(copy) }
            while true {
                shared.wake.wait()
                let (range, ending) = shared.state.withLock { state -> (Range<Int64>?, Ending?) in
                    let range = state.from < state.to ? state.from..<state.to : nil
                    state.from = .max
                    state.to = 0
                    return (range, state.ending)
                }
                if ending == .abandon { return 0 }
                if let range, ending == nil {
                    _ = reel_start_writeback(copy, range.lowerBound, Int64(range.count))
                }
                if ending == .sync {
                    while fsync(copy) != 0 {
                        if errno != EINTR { return errno }
                    }
                    return 0
                }
            }
        }
    }

    /// Asks for writeback of bytes `range` of the file (they have been written); returns at once.
    func startWriteback(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        shared.state.withLock { state in
            state.from = min(state.from, range.lowerBound)
            state.to = max(state.to, range.upperBound)
        }
        shared.wake.signal()
    }

    /// Everything is written: fsyncs the file on the thread; `PendingSync.wait()` says how it went.
    func finish() -> PendingSync {
        shared.state.withLock { $0.ending = $0.ending ?? .sync }
        shared.wake.signal()
        return PendingSync(thread)
    }

    /// Ends the thread without syncing (the file failed and will be removed). Idempotent.
    func abandon() {
        shared.state.withLock { $0.ending = $0.ending ?? .abandon }
        shared.wake.signal()
    }
}

/// The fsync of a finished output file, running on a thread of its own (`BackgroundSync`).
public final class PendingSync: Sendable {
    private let thread: JoinableThread<Int32>
    private let outcome = Mutex<Int32?>(nil)

    fileprivate init(_ thread: JoinableThread<Int32>) { self.thread = thread }

    /// Waits for the fsync; throws `.outputFailed` (or `.noSpace`) with its errno when it failed.
    /// May be called more than once.
    public func wait() throws(MediaError) {
        let code = outcome.withLock { known in
            if let known { return known }
            let code = thread.join()
            known = code
            return code
        }
        if code != 0 {
            throw MediaError(
                call: "fsync", code: reel_averror(code), kind: code == ENOSPC ? .noSpace : .outputFailed,
                context: "cannot write the output")
        }
    }
}
