import CFFmpeg

/// A flag one thread raises and another polls, also readable by FFmpeg's interrupt callback so a
/// blocking read returns promptly once the flag is up.
///
/// Thread-safe: the flag is a single `int` read and written only with atomic operations, and the
/// storage lives as long as the object. That is why this one type is `@unchecked Sendable`.
public final class CancellationFlag: @unchecked Sendable {
    let storage: UnsafeMutablePointer<Int32>

    public init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: 0)
    }

    deinit { storage.deallocate() }

    /// Raises the flag. Idempotent.
    public func raise() { reel_atomic_store_int(storage, 1) }

    /// Whether the flag has been raised.
    public var isRaised: Bool { reel_atomic_load_int(storage) != 0 }
}
