import Foundation
import ReelSystem
import Synchronization

/// A thread that runs one closure and hands what it returns to whoever joins it.
///
/// The closure is `@Sendable`, so it can only capture what may be shared; a value that is not
/// `Sendable` travels into it through a `Baton` and comes back out of `join()` as a `sending`
/// result, in a baton of its own. Ownership moves with it; nothing is reachable from both threads.
final class JoinableThread<Result>: Sendable {
    private let outcome = Mutex<Baton<Result>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread named `name`.
    init(name: String, stackSize: Int = 8 << 20, _ body: @escaping @Sendable () -> sending Result) {
        startThread(named: name, stackSize: stackSize) { [self] in
            let result = Baton(body())
            outcome.withLock { $0 = result }
            finished.signal()
        }
    }

    /// Waits for the thread's closure to return and takes its result. Call once.
    func join() -> sending Result {
        finished.wait()
        guard let result = outcome.withLock({ $0 })?.take() else { fatalError("JoinableThread.join() called twice") }
        return result
    }
}
