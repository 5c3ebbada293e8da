import Synchronization

/// Counts signs of life of a running export: every packet read and every write to the output.
/// A watchdog that sees the count stand still for too long knows the export has stalled.
public final class Heartbeat: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    /// Records progress. Cheap enough for every packet.
    func beat() { count.wrappingAdd(1, ordering: .relaxed) }

    /// The number of beats so far.
    public var value: Int { count.load(ordering: .relaxed) }
}
