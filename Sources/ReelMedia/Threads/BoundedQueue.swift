import Foundation

/// A bounded first-in, first-out queue between two pipeline threads. `push` waits while the queue
/// is full and `pop` while it is empty, so memory stays flat however long the input is.
///
/// Elements (frames, packets) *move* through it: whoever pushes one does not touch it again until it
/// comes back through a queue. That discipline, kept by the pipeline's two loops, is what makes
/// handing over elements that are not `Sendable` safe; the compiler cannot check it here (a frame's
/// buffers are passed to the scaler and the encoder as C pointers, which ties them to their stage
/// for the checker), so the elements are boxed unchecked while queued. The queue's own state is
/// guarded by one condition lock (`Synchronization` has no condition variable), which is why the
/// class is `@unchecked Sendable` too. A whole pipeline side moves through a `Baton`, checked.
final class BoundedQueue<Element>: @unchecked Sendable {
    /// An element between its push and its pop: owned by the queue alone.
    private struct Moving: @unchecked Sendable {
        let element: Element
    }

    private let condition = NSCondition()
    private var items: [Moving] = []
    private var closed = false
    private var aborted = false
    private var waiters = 0
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        items.reserveCapacity(self.capacity)
    }

    /// Adds an element, waiting for room. Throws `pipelineStopped` once the queue is aborted.
    func push(_ element: Element) throws(MediaError) {
        let moving = Moving(element: element)
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !aborted { wait() }
        if aborted { throw MediaError.pipelineStopped() }
        items.append(moving)
        condition.broadcast()
    }

    /// Takes the oldest element, waiting for one; nil once the queue is closed and empty. Throws
    /// `pipelineStopped` once the queue is aborted.
    func pop() throws(MediaError) -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed && !aborted { wait() }
        if aborted { throw MediaError.pipelineStopped() }
        if items.isEmpty { return nil }
        let moving = items.removeFirst()
        condition.broadcast()
        return moving.element
    }

    /// No more elements will come; `pop` returns nil once the queue is empty.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// How many threads are waiting in `push` or `pop` right now (a test sees a side blocked before
    /// it aborts the queue, so the abort's wake-up is what it proves).
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters
    }

    /// Waits for a change, counted in `waiting`; the condition lock is held.
    private func wait() {
        waiters += 1
        condition.wait()
        waiters -= 1
    }

    /// Stops both sides at once: every waiting and later `push` and `pop` throws `pipelineStopped`.
    func abort() {
        condition.lock()
        aborted = true
        condition.broadcast()
        condition.unlock()
    }
}
