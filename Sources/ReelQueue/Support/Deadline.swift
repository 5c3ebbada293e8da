import Foundation
import Synchronization

/// Runs an operation with a time limit that holds even when the operation cannot be interrupted
/// (a query on a connection whose peer vanished waits for TCP to notice): the operation runs in a
/// task of its own, and the caller gets `Expired` at the limit while that task is cancelled and left
/// to end on its own. (Package-wide: the fleet's queries and the worker's publish gate use it.)
package enum Deadline {
    package struct Expired: Error {}

    package static func run<T: Sendable>(
        within limit: Duration, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let slot = Slot<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                slot.set(continuation)
                let work = Task {
                    do {
                        slot.resume(with: .success(try await body()))
                    } catch {
                        slot.resume(with: .failure(error))
                    }
                }
                let timer = Task {
                    try? await Task.sleep(for: limit)
                    if slot.resume(with: .failure(Expired())) { work.cancel() }
                }
                slot.onResume { timer.cancel() }
                slot.cancelWork { work.cancel() }
            }
        } onCancel: {
            slot.cancel()
        }
    }

    /// Resumes a continuation exactly once, whoever comes first.
    private final class Slot<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var done = false
            var cancelled = false
            var onResume: (@Sendable () -> Void)?
            var cancelWork: (@Sendable () -> Void)?
        }
        private let state = Mutex(State())

        func set(_ continuation: CheckedContinuation<T, any Error>) {
            state.withLock { $0.continuation = continuation }
        }

        /// Returns whether this call resumed it.
        @discardableResult
        func resume(with result: Result<T, any Error>) -> Bool {
            let (continuation, hook) = state.withLock {
                state -> (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) in
                guard !state.done else { return (nil, nil) }
                state.done = true
                defer { state.continuation = nil }
                return (state.continuation, state.onResume)
            }
            guard let continuation else { return false }
            continuation.resume(with: result)
            hook?()
            return true
        }

        func onResume(_ hook: @escaping @Sendable () -> Void) {
            let runNow = state.withLock { state -> Bool in
                if state.done { return true }
                state.onResume = hook
                return false
            }
            if runNow { hook() }
        }

        func cancelWork(_ hook: @escaping @Sendable () -> Void) {
            let runNow = state.withLock { state -> Bool in
                state.cancelWork = hook
                return state.cancelled
            }
            if runNow { hook() }
        }

        func cancel() {
            let hook = state.withLock { state -> (@Sendable () -> Void)? in
                state.cancelled = true
                return state.cancelWork
            }
            hook?()
        }
    }
}

/// How long to wait before trying a store that is away again: a quarter of a second, doubling up to
/// 5 s; `reset()` after a success.
package struct Backoff: Sendable {
    package private(set) var delay = Backoff.first
    private static let first = Duration.milliseconds(250)

    package init() {}

    /// Sleeps for the current delay (less if the task is cancelled), then doubles it.
    package mutating func wait() async {
        try? await Task.sleep(for: next())
    }

    /// The current delay, doubled for next time: for a caller that waits in its own way.
    package mutating func next() -> Duration {
        defer { delay = min(delay * 2, .seconds(5)) }
        return delay
    }

    package mutating func reset() { delay = Backoff.first }
}
