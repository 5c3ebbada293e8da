import Foundation
import Logging
import PostgresNIO
import ReelQueue
import Synchronization

/// The store's `LISTEN` side: one connection of its own (not the pool's), held for as long as a
/// worker runs, listening on `reel_jobs` (a job became claimable) and `reel_control` (a job was
/// cancelled; the payload is its id). It pings the server every few seconds, and when the connection
/// fails it reconnects with backoff and wakes every waiter so that they poll once: a notification
/// sent meanwhile was lost.
///
/// Notifications are only hints. Nothing waits for one without a time limit, and the worker pool
/// polls the database in any case, so a lost notification delays a claim by at most its poll.
/// The listener runs inside `run()` (the store's), from the first `start()` until `stop()`.
final class Notifications: Sendable {
    static let jobs = "reel_jobs"
    static let control = "reel_control"

    private struct State {
        var stopped = false
        var connected = false
        var nextWaiter = 0
        var workWaiters: [Int: Waiter] = [:]
        /// Waiters for news of one job, by job id.
        var jobWaiters: [String: [Int: Waiter]] = [:]
        /// Jobs this process runs, and those among them with news nobody has waited for yet.
        var watched: Set<String> = []
        var news: Set<String> = []
        /// Notifications delivered so far: work wake-ups, and news of a job (tests read these).
        var workNotices = 0
        var jobNotices = 0
    }

    /// One wait: woken once, by whoever comes first (a notification, its time limit, cancellation).
    private final class Waiter: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<Void, Never>?, woken: Bool)>((nil, false))

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.woken { return true }
                    state.continuation = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func wake() {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.woken { return nil }
                state.woken = true
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume()
        }
    }

    private let link: DatabaseLink
    private let logger: Logger
    /// Whether to listen at all (`PostgresStore.Options.listen`).
    let enabled: Bool
    private let state = Mutex(State())
    private let started = Latch()
    private let stopped = Latch()

    init(link: DatabaseLink, enabled: Bool, logger: Logger) {
        self.link = link
        self.enabled = enabled
        self.logger = logger
    }

    /// Whether `stop()` was called.
    var isStopped: Bool { stopped.isOpen }

    /// Whether the listener is connected now.
    var isConnected: Bool { state.withLock { $0.connected } }

    /// How many work wake-ups and job news the listener has delivered.
    var delivered: (work: Int, news: Int) { state.withLock { ($0.workNotices, $0.jobNotices) } }

    /// Starts listening (once; workers call it, clients never do), if enabled.
    func start() {
        if enabled { started.open() }
    }

    /// Listens from the first `start()` until `stop()` (or cancellation).
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                await self.started.wait()
                if !self.stopped.isOpen && !Task.isCancelled { await self.listen() }
            }
            await stopped.wait()
            group.cancelAll()
        }
    }

    /// Stops listening and wakes every waiter; waits after this return at once.
    func stop() {
        let waiters = state.withLock { state in
            state.stopped = true
            let waiters = Array(state.workWaiters.values) + state.jobWaiters.values.flatMap(\.values)
            state.workWaiters = [:]
            state.jobWaiters = [:]
            return waiters
        }
        stopped.open()
        for waiter in waiters { waiter.wake() }
    }

    // MARK: - Waiting

    /// Returns when a job may have become claimable, or after `timeout`.
    func waitForWork(timeout: Duration) async {
        await wait(timeout: timeout) { state, id, waiter in
            state.workWaiters[id] = waiter
            return true
        } unregister: { state, id in
            state.workWaiters.removeValue(forKey: id)
        }
    }

    /// Returns when something happened to job `id` (a cancel), or after `timeout`. News that came
    /// while nobody waited is returned at once.
    func waitForNews(of id: String, timeout: Duration) async {
        await wait(timeout: timeout) { state, waiter, entry in
            if state.news.remove(id) != nil { return false }
            state.jobWaiters[id, default: [:]][waiter] = entry
            return true
        } unregister: { state, waiter in
            state.jobWaiters[id]?.removeValue(forKey: waiter)
            if state.jobWaiters[id]?.isEmpty == true { state.jobWaiters.removeValue(forKey: id) }
        }
    }

    /// Keeps news of job `id` for its next wait (this process runs it).
    func watch(_ id: String) { _ = state.withLock { $0.watched.insert(id) } }

    func unwatch(_ id: String) {
        state.withLock { state in
            state.watched.remove(id)
            state.news.remove(id)
        }
    }

    /// Registers a waiter (`register` returning false: do not wait), then waits until it is woken or
    /// `timeout` passes, and unregisters it.
    private func wait(
        timeout: Duration, register: (inout State, Int, Waiter) -> Bool, unregister: (inout State, Int) -> Void
    ) async {
        let waiter = Waiter()
        let (id, registered) = state.withLock { state -> (Int, Bool) in
            state.nextWaiter += 1
            return (state.nextWaiter, !state.stopped && register(&state, state.nextWaiter, waiter))
        }
        guard registered else { return }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            waiter.wake()
        }
        await withTaskCancellationHandler {
            await waiter.wait()
        } onCancel: {
            waiter.wake()
        }
        timer.cancel()
        state.withLock { unregister(&$0, id) }
    }

    // MARK: - Notifying

    /// Wakes every worker waiting for work.
    func wakeWorkers() {
        let waiters = state.withLock { state in
            state.workNotices += 1
            defer { state.workWaiters = [:] }
            return Array(state.workWaiters.values)
        }
        for waiter in waiters { waiter.wake() }
    }

    /// Tells whoever watches job `id` that it changed.
    func tell(_ id: String) {
        let waiters = state.withLock { state -> [Waiter] in
            state.jobNotices += 1
            guard let waiters = state.jobWaiters.removeValue(forKey: id) else {
                if state.watched.contains(id) { state.news.insert(id) }
                return []
            }
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.wake() }
    }

    // MARK: - The listener

    private func listen() async {
        var backoff = Backoff()
        while !Task.isCancelled {
            do {
                try await link.withOwnConnection { connection in
                    try await self.serve(connection)
                }
            } catch {
                if Task.isCancelled { break }
                logger.debug("notification listener lost its connection", metadata: ["error": "\(error)"])
            }
            let wasConnected = state.withLock { state in
                defer { state.connected = false }
                return state.connected
            }
            // A connection that was up starts the backoff over.
            if wasConnected { backoff.reset() }
            // Whatever was notified while the connection was down is lost: everyone polls once.
            wakeWorkers()
            let watched = state.withLock { $0.watched }
            for id in watched { tell(id) }
            await backoff.wait()
        }
        state.withLock { $0.connected = false }
    }

    /// Listens on both channels on one connection and pings it every 5 s; returns (throws) when the
    /// connection fails.
    private func serve(_ connection: PostgresConnection) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await connection.listen(on: Self.jobs) { notifications in
                    for try await _ in notifications { self.wakeWorkers() }
                }
            }
            group.addTask {
                try await connection.listen(on: Self.control) { notifications in
                    for try await notification in notifications { self.tell(notification.payload) }
                }
            }
            group.addTask {
                // LISTEN is in place once a query after it has completed on the same connection.
                try await self.ping(connection)
                self.state.withLock { $0.connected = true }
                self.wakeWorkers()
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(5))
                    try await self.ping(connection)
                }
            }
            // Any of them ending means the connection is gone (or we were cancelled).
            _ = try await group.next()
            group.cancelAll()
            throw CancellationError()
        }
    }

    /// A round trip on the listening connection, so a half-open connection is noticed.
    private func ping(_ connection: PostgresConnection) async throws {
        try await Deadline.run(within: .seconds(10)) { () -> Void in
            _ = try await connection.checkedQuery("SELECT 1", logger: self.logger)
        }
    }
}
