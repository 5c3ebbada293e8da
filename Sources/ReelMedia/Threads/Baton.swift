import Synchronization

/// Carries one value that is not `Sendable` from one thread to another: whoever takes it owns it.
///
/// `init` takes the value as `sending`, so the compiler checks at the call site that the giver keeps
/// no reference to it (nothing it still uses shares the value's region), and `take` returns it as
/// `sending` to its one new owner. Between the two the value sits in a `Mutex`, which is `Sendable`
/// whatever it holds and takes and gives values as `sending`: nothing here is unchecked. (A value
/// cannot be put into a baton after it is made: a closure's captures are the caller's, so a value
/// captured by `withLock` is not `sending`. Make a new baton instead; it is `Sendable`.)
final class Baton<Value>: Sendable {
    private let slot: Mutex<Value?>

    /// A baton holding `value`.
    init(_ value: sending Value) { slot = Mutex(value) }

    /// Takes the value out; nil when there is none (already taken).
    func take() -> sending Value? { slot.withLock { $0.take() } }
}
