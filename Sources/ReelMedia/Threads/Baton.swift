import Synchronization

/// Carries one value that is not `Sendable` from one thread to another: whoever takes it owns it.
///
/// `init` and `put` take the value as `sending`, so the compiler checks at the call site that the
/// giver keeps no reference to it (nothing it still uses shares the value's region), and `take`
/// returns it as `sending` to its one new owner. Between the two the value sits in a box no thread
/// can reach but through the mutex: the one unchecked wrapper this relies on.
final class Baton<Value>: Sendable {
    private struct Box: @unchecked Sendable {
        var value: Value?
    }
    private let slot: Mutex<Box>

    /// A baton holding `value`.
    init(_ value: sending Value) { slot = Mutex(Box(value: value)) }

    /// An empty baton, for a value that comes later.
    init() { slot = Mutex(Box(value: nil)) }

    /// Hands `value` over (replacing anything not taken).
    func put(_ value: sending Value) {
        let box = Box(value: value)
        slot.withLock { $0 = box }
    }

    /// Takes the value out; nil when there is none (never put, or already taken).
    func take() -> sending Value? { slot.withLock { $0.value.take() } }
}
