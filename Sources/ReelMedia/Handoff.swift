import Foundation

/// Carries a value that is not `Sendable` (a frame, a packet, an FFmpeg context's owner) from one
/// pipeline thread to another. Ownership travels with it: whoever hands a value over does not touch it
/// again until it is handed back. That discipline, not a lock, is what makes this safe, which is why
/// this is the one `@unchecked Sendable` wrapper in the pipeline.
/// A struct, so handing a frame over allocates nothing.
struct Handoff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A bounded first-in, first-out queue between two pipeline threads. `push` waits while the queue
/// is full and `pop` while it is empty, so memory stays flat however long the input is. Elements move
/// through it (see `Handoff`); all of its own state is guarded by one condition lock.
final class BoundedQueue<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Element] = []
    private var closed = false
    private var aborted = false
    let capacity: Int
    /// The `call` of the error every waiting side gets once the queue is aborted.
    static var abortCall: String { "pipeline" }

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Adds an element, waiting for room. Throws when the other side gave up.
    func push(_ element: Element) throws(MediaError) {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !aborted { condition.wait() }
        if aborted { throw MediaError(kind: .cancelled, call: "pipeline", message: "the pipeline stopped") }
        items.append(element)
        condition.broadcast()
    }

    /// Takes the oldest element, waiting for one; nil once the queue is closed and empty.
    func pop() throws(MediaError) -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed && !aborted { condition.wait() }
        if aborted { throw MediaError(kind: .cancelled, call: "pipeline", message: "the pipeline stopped") }
        if items.isEmpty { return nil }
        let element = items.removeFirst()
        condition.broadcast()
        return element
    }

    /// No more elements will come; `pop` returns nil once the queue is empty.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops both sides at once: every waiting and later call throws.
    func abort() {
        condition.lock()
        aborted = true
        condition.broadcast()
        condition.unlock()
    }
}
