import Foundation

/// Runs blocking work (a pipeline, a watchdog) on a thread of its own and waits for it without
/// holding a thread of Swift's cooperative pool.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// Polls `condition` on the calling (non-cooperative) thread until it holds or `timeLimit` passes;
/// returns whether it held.
public func waitBlocking(within timeLimit: Duration = .seconds(60), until condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeLimit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        usleep(1_000)
    }
    return true
}
