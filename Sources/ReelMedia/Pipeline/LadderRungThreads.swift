internal import CFFmpeg
import Foundation
import ReelSystem
import Synchronization

/// One rung's encoder and CMAF track: where its frames are encoded and its packets cut into
/// segments (a keyframe at or after the next multiple of the segment length starts one). Owned by
/// one thread at a time: the ladder's fan-out thread, or the rung's own (`RungThreads`), which it
/// moves to and back from in a `Baton`.
final class RungOutput {
    let encode: VideoEncodeStage
    let track: SegmentedTrack
    /// How errors name the rung: `rendition v1 (640x360)`.
    private let label: String
    private let segmentSeconds: Double
    /// The next segment boundary, in seconds.
    private var nextBoundary = 0.0
    /// Frames given to the encoder so far.
    private var frames = 0
    /// The frame (counted from 1) at which the encoder is made to fail (`LadderPlan.rungFault`).
    private let failAtFrame: Int?

    init(
        encode: VideoEncodeStage, track: SegmentedTrack, size: (width: Int, height: Int), segmentSeconds: Double,
        failAtFrame: Int? = nil
    ) {
        self.encode = encode
        self.track = track
        label = "rendition \(track.name) (\(size.width)x\(size.height))"
        self.segmentSeconds = segmentSeconds
        self.failAtFrame = failAtFrame
    }

    /// Encodes one frame and writes what comes out. Errors name the rendition.
    func encode(_ frame: Frame) throws(MediaError) {
        frames += 1
        do throws(MediaError) {
            #if DEBUG
                if frames == failAtFrame {
                    throw MediaError(
                        kind: .internalFailure, call: "avcodec_send_frame",
                        message: "the encoder refused frame \(frames): a fault injected by a test")
                }
            #endif
            try encode.encode(frame, to: sink)
        } catch {
            throw named(error)
        }
    }

    /// Flushes the encoder at the end of the input and writes what it held back. Errors name the
    /// rendition.
    func flush() throws(MediaError) {
        do throws(MediaError) { try encode.flush(to: sink) } catch { throw named(error) }
    }

    /// `error` with the rendition named first (one line still): a ladder's encoders and tracks fail
    /// alike, and the message says which. The pipeline's own signals are left as they are.
    private func named(_ error: MediaError) -> MediaError {
        if error.kind == .pipelineStopped || error.kind == .cancelled { return error }
        return MediaError(kind: error.kind, call: error.call, code: error.code, message: "\(label): \(error.message)")
    }

    /// Where the packets go: a keyframe at or after the next boundary starts a segment.
    private var sink: PacketSink {
        { [self] (packet: Packet) throws(MediaError) in
            let raw = packet.pointer.pointee
            let time = track.seconds(ofPts: raw.pts)
            let starts = raw.flags & AV_PKT_FLAG_KEY != 0 && time >= nextBoundary - 1e-6
            if starts { nextBoundary = LadderPipeline.boundary(after: time, segment: segmentSeconds) }
            try track.write(packet, startsSegment: starts)
        }
    }
}

/// What the fan-out thread and one rung's own thread share: the frames on their way to the rung's
/// encoder (`work`, in presentation order) and the frames coming back for the fan-out to fill
/// (`free`), both bounded, so a rung holds at most `depth` frames however long the input; and how
/// far its track is written, for progress.
final class RungLane: Sendable {
    let work: BoundedQueue<Frame>
    let free: BoundedQueue<Frame>
    /// Whether the lane's frames have buffers of their own (a lower rung's, scaled into by the
    /// fan-out) rather than references to the decoded frames (the first rung's, dropped once encoded).
    let ownsPictures: Bool
    private let written = Atomic<Int>(0)

    /// Frames in flight per rung: one being encoded, one waiting, one being filled.
    static let depth = 3

    /// A lane whose free frames are `frames`.
    init(frames: [Frame], ownsPictures: Bool) throws(MediaError) {
        work = BoundedQueue(capacity: frames.count)
        free = BoundedQueue(capacity: frames.count)
        self.ownsPictures = ownsPictures
        for frame in frames { try free.push(frame) }
    }

    /// Seconds of media the rung's track holds (microsecond steps).
    var writtenSeconds: Double { Double(written.load(ordering: .relaxed)) / 1e6 }

    func record(writtenSeconds seconds: Double) {
        written.store(Int((seconds * 1e6).rounded()), ordering: .relaxed)
    }

    /// Wakes and stops both sides wherever they wait.
    func abort() {
        work.abort()
        free.abort()
    }
}

/// Runs rungs' encoders on threads of their own, one per rung, fed by the ladder's fan-out thread
/// through each rung's `RungLane`: so single-threaded encoders (x265 with one core a rung, no pool,
/// `StageThreads.x265Parameters`) encode side by side instead of in turn on the fan-out thread.
///
/// `gate` holds as many permits as the encoders that may run at once (the core budget): a rung's
/// thread holds one while it encodes each frame, so a ladder with more rungs than cores never has more
/// encoders runnable than cores (x265's hand-offs wait for a time slice when it does). Each rung
/// encodes the same frames in the same order with the same settings whatever the threads'
/// timing, so what it writes does not depend on them.
final class RungThreads {
    private var threads: [(rung: Int, thread: JoinableThread<(RungOutput?, MediaError?)>)] = []

    /// Starts one thread per `(rung, lane, output)`; each takes its output out of the baton.
    init(_ rungs: [(index: Int, lane: RungLane, output: Baton<RungOutput>)], gate: EncoderGate) {
        for (index, lane, baton) in rungs {
            let thread = JoinableThread(name: "reel-rung-\(index)") { () -> sending (RungOutput?, MediaError?) in
                nameThisThread("reel-rung-\(index)")
                guard let output = baton.take() else { return (nil, MediaError.pipelineStopped()) }
                do throws(MediaError) {
                    try RungThreads.encode(lane: lane, output: output, gate: gate)
                    return (output, nil)
                } catch {
                    // Wakes and stops the fan-out wherever it waits for this rung.
                    lane.abort()
                    return (output, error)
                }
            }
            threads.append((index, thread))
        }
    }

    /// A rung's thread: encodes each frame of its lane, gives it back, and flushes the encoder once
    /// the lane's work is closed.
    private static func encode(lane: RungLane, output: RungOutput, gate: EncoderGate) throws(MediaError) {
        while let frame = try lane.work.pop() {
            try gate.run { () throws(MediaError) in try output.encode(frame) }
            lane.record(writtenSeconds: output.track.writtenSeconds)
            // The first rung's frame referenced the decoded picture: the decoder may have it back.
            if !lane.ownsPictures { frame.unref() }
            try lane.free.push(frame)
        }
        try gate.run { () throws(MediaError) in try output.flush() }
        lane.record(writtenSeconds: output.track.writtenSeconds)
    }

    /// Waits for every thread and returns each rung's output by rung index, with the error that
    /// stopped the first rung that failed for a reason of its own (a rung stopped only because
    /// another side aborted its lane reports `pipelineStopped`), if any.
    func join() -> (outputs: [Int: RungOutput], error: MediaError?) {
        var outputs: [Int: RungOutput] = [:]
        var stopped: MediaError?
        var cause: MediaError?
        for (rung, thread) in threads {
            let (output, error) = thread.join()
            if let output { outputs[rung] = output }
            if let error {
                if error.kind == .pipelineStopped { stopped = stopped ?? error } else { cause = cause ?? error }
            }
        }
        threads = []
        return (outputs, cause ?? stopped)
    }
}

/// The permits `RungThreads`' encoders take: at most `permits` encode at once; counts the most that did.
final class EncoderGate: Sendable {
    private let semaphore: DispatchSemaphore
    private let running = Atomic<Int>(0)
    private let peak = Atomic<Int>(0)

    init(permits: Int) { semaphore = DispatchSemaphore(value: max(1, permits)) }

    /// Runs `body` holding a permit, waiting for one first.
    func run(_ body: () throws(MediaError) -> Void) throws(MediaError) {
        semaphore.wait()
        defer { semaphore.signal() }
        let now = running.add(1, ordering: .relaxed).newValue
        defer { running.subtract(1, ordering: .relaxed) }
        var seen = peak.load(ordering: .relaxed)
        while now > seen {
            let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
            if exchanged { break }
            seen = original
        }
        try body()
    }

    /// The most encoders that held a permit at once.
    var mostAtOnce: Int { peak.load(ordering: .relaxed) }
}
