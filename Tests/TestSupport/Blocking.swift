import Foundation
import ReelMedia
import ReelSystem
import Synchronization

/// Runs blocking work (a pipeline, a watchdog, a queue's waiting side) on a thread of its own and
/// waits for it without holding a thread of Swift's cooperative pool. Throws when the work outlives
/// `timeLimit` (its thread is left behind: a hung test fails instead of hanging the run).
public func onOwnThread<T: Sendable>(
    within timeLimit: Duration = .seconds(120), _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    let once = Once()
    return try await withCheckedThrowingContinuation { continuation in
        startThread(named: "reel-test-work", stackSize: 8 << 20) {
            let result = Result { try body() }
            if once.claim() { continuation.resume(with: result) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeLimit / .seconds(1)) {
            if once.claim() {
                continuation.resume(throwing: ToolFailure(message: "blocking work ran longer than \(timeLimit)"))
            }
        }
    }
}

/// Lets exactly one of several racing callers through.
private final class Once: Sendable {
    private let taken = Atomic<Bool>(false)
    func claim() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
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
