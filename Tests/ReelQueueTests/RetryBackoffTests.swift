import Foundation
import ReelQueue
import Testing

@Suite("Retry backoff", .timeLimit(.minutes(1)))
struct RetryBackoffTests {
    /// The standard policy: the n-th wait lies in [c/2, c] for the ceiling c = min(60, 2·2^(n-1)) s,
    /// and its jitter spreads (a thousand draws are not all one value).
    @Test func theStandardWaitDoublesUpToAMinuteWithJitter() {
        for attempts in 1...8 {
            let ceiling = min(60, 2 * pow(2, Double(attempts - 1)))
            let waits = (0..<1000).map { _ in RetryBackoff.standard.delay(afterAttempts: attempts) }
            #expect(waits.allSatisfy { $0 >= ceiling / 2 && $0 <= ceiling }, "attempt \(attempts)")
            #expect(Set(waits).count > 900, "attempt \(attempts): no jitter")
        }
        #expect(JobStatus.backoff(afterAttempts: 1) <= 2)
    }
    // That each store waits its own policy is the contract's "retryable failures back off" case, which
    // runs both stores with ten minutes and checks the recorded due time against it.
}
