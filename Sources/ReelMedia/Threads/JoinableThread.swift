import Foundation

/// A thread that runs one closure and hands what it returns to whoever joins it.
///
/// The closure is `@Sendable`, so it can only capture what may be shared; a value that is not
/// `Sendable` travels into it through a `Baton` and comes back out of `join()` as a `sending`
/// result. Ownership moves with it; nothing is reachable from both threads.
final class JoinableThread<Result>: Sendable {
    private let outcome = Baton<Result>()
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread named `name`.
    init(name: String, stackSize: Int = 8 << 20, _ body: @escaping @Sendable () -> sending Result) {
        let outcome = outcome
        let finished = finished
        startThread(named: name, stackSize: stackSize) {
            outcome.put(body())
            finished.signal()
        }
    }

    /// Waits for the thread's closure to return and takes its result. Call once.
    func join() -> sending Result {
        finished.wait()
        guard let result = outcome.take() else { fatalError("JoinableThread.join() called twice") }
        return result
    }
}
