import Foundation
import ReelSystem
import Synchronization

/// Wakes waiting workers when a file appears in a folder (inotify), so new jobs start at once while an
/// idle worker uses no CPU. One long-lived thread per watcher waits on inotify and wakes every task
/// that waits; a task that waits with a timeout is woken by its own timer otherwise. Where inotify is
/// unavailable, waits simply last their timeout.
final class DirectoryWatcher: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
        /// Waits whose timer fired before they were registered.
        var expired: Set<UInt64> = []
        /// Something was created while nobody waited: the next wait returns at once (as a poll of the
        /// inotify descriptor would).
        var pending = false
    }
    private let state = Mutex(State())

    init(path: String) {
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { return }
        if inotify_add_watch(fd, path, UInt32(IN_CREATE | IN_MOVED_TO)) < 0 {
            close(fd)
            return
        }
        // The thread owns the descriptor and lives as long as the process (a spool is opened once
        // per worker process).
        startThread(named: "reel-spool-watch") { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return }
                wakeAll()
            }
        }
    }

    /// Returns when something was created in the folder or after `timeout`.
    func wait(timeout: Duration) async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        let timer = Task { [self] in
            do { try await Task.sleep(for: timeout) } catch { return }
            wake(id)
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.expired.remove(id) != nil || state.pending {
                    state.pending = false
                    return true
                }
                state.waiters[id] = Waiter(continuation: continuation)
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
        // A timer that fired as something else woke this wait leaves a mark; it goes with the wait.
        await timer.value
        _ = state.withLock { $0.expired.remove(id) }
    }

    private func wake(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
            state.expired.insert(id)
            return nil
        }
        waiter?.continuation.resume()
    }

    private func wakeAll() {
        let waiters = state.withLock { state -> [Waiter] in
            defer { state.waiters.removeAll() }
            if state.waiters.isEmpty { state.pending = true }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume() }
    }
}
