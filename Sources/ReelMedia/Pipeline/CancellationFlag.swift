internal import CFFmpeg
import Synchronization

/// A flag one thread raises and others poll, also read by FFmpeg's interrupt callback so a blocking
/// read returns promptly once the flag is up.
public final class CancellationFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    public init() {}

    /// Raises the flag. Idempotent.
    public func raise() { raised.store(true, ordering: .relaxed) }

    /// Whether the flag has been raised.
    public var isRaised: Bool { raised.load(ordering: .relaxed) }

    /// Makes `context`'s blocking calls (opening, reading) return `AVERROR_EXIT` once the flag is up.
    /// The callback holds the flag unretained: whoever owns `context` keeps the flag alive as long.
    func interrupts(_ context: UnsafeMutablePointer<AVFormatContext>) {
        context.pointee.interrupt_callback = AVIOInterruptCB(
            callback: interruptCallback, opaque: Unmanaged.passUnretained(self).toOpaque())
    }
}

/// FFmpeg's interrupt callback: non-zero stops the blocking call. `opaque` is a `CancellationFlag`.
private let interruptCallback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
    guard let opaque else { return 0 }
    return Unmanaged<CancellationFlag>.fromOpaque(opaque)._withUnsafeGuaranteedRef { $0.isRaised } ? 1 : 0
}
