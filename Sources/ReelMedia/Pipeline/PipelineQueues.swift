import Synchronization

/// What a transcode's reader and writer threads share: the queues between them and a count.
///
/// Frames and packets move through the queues (never copied, never shared), so memory stays flat
/// and in steady state nothing is allocated per frame: the reader takes a free frame, fills it and
/// sends it as work; the writer encodes it and returns it to the free frames. Audio packets travel
/// the same way in carriers from `freePackets`.
final class PipelineQueues: Sendable {
    /// What travels from the reader to the writer.
    enum Work {
        /// A scaled video frame to encode; it goes back to `freeFrames` afterwards.
        case frame(Frame)
        /// An encoded audio packet to write; its carrier goes back to `freePackets` afterwards.
        case packet(Packet)
    }

    let work = BoundedQueue<Work>(capacity: 8)
    /// Frames of the output size that the reader may fill.
    let freeFrames: BoundedQueue<Frame>
    /// Empty carriers for audio packets on their way to the writer.
    let freePackets = BoundedQueue<Packet>(capacity: 64)
    /// Video frames the writer has encoded (for progress, read by the reader).
    let framesEncoded = Atomic<Int>(0)

    init(frames: Int) { freeFrames = BoundedQueue(capacity: frames) }

    /// Wakes and stops both sides wherever they wait: every later push and pop throws `pipelineStopped`.
    func abort() {
        work.abort()
        freeFrames.abort()
        freePackets.abort()
    }
}
