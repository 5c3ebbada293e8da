import ReelSystem

/// The writer side of a transcode: owns the output file and the video encode stage. While the
/// reader reads, it runs on its own thread, encoding the frames and writing every packet that comes
/// through the work queue; once joined, the reader finishes the file with it (the trailer).
final class TranscodeWriter {
    private let output: OutputFile
    private let video: VideoEncodeStage?
    private let queues: PipelineQueues
    /// Scores the encoded pictures against the ones sent (`TranscodePlan.measuresQuality`).
    private let scorer: EncodeScorer?
    /// The encoded video's score, once `encodeAndWrite` has flushed the encoder.
    private(set) var quality: QualityScore?
    /// Seconds the video encoder's flush took (`encodeAndWrite`) plus the trailer's (`finish`).
    private(set) var flushSeconds = 0.0

    init(output: OutputFile, video: VideoEncodeStage?, queues: PipelineQueues, scorer: EncodeScorer? = nil) {
        self.output = output
        self.scorer = scorer
        self.video = video
        self.queues = queues
    }

    /// What went into each stream (complete once `finish` returned).
    var written: [WrittenStream] { output.written }

    /// Holds the file's lock beyond the writer's life (`OutputLock`).
    func lock() throws(MediaError) -> OutputLock { try output.lock() }

    /// Hands a packet to the muxer (audio-only exports, where no writer thread runs).
    func write(_ packet: Packet) throws(MediaError) { try output.write(packet) }

    /// The writer thread: encodes video frames, writes every packet, and flushes the encoder once
    /// the reader closes the work queue.
    func encodeAndWrite() throws(MediaError) {
        let output = output
        let scorer = scorer
        let write: PacketSink = { (encoded: Packet) throws(MediaError) in
            // The decoder takes its own reference to the data the muxer then takes.
            try scorer?.take(encoded)
            try output.write(encoded)
        }
        while let item = try queues.work.pop() {
            switch item {
            case .frame(let frame):
                try scorer?.keep(frame)
                try video?.encode(frame, to: write)
                // A frame the encoder took is a sign of life, even while its lookahead holds packets back.
                output.heartbeat?.beat()
                queues.framesEncoded.wrappingAdd(1, ordering: .relaxed)
                try queues.freeFrames.push(frame)
            case .packet(let carrier):
                try output.write(carrier)
                try queues.freePackets.push(carrier)
            }
        }
        let flushing = ContinuousClock.now
        try video?.flush(to: write)
        quality = try scorer?.finish()
        flushSeconds += (ContinuousClock.now - flushing) / .seconds(1)
    }

    /// Writes the trailer (the faststart rewrite, reported as `finalizing` through `progress` from
    /// `share` of the bar) and syncs the file; returns the bytes written.
    func finish(
        share: Double, frames: Int, mediaSeconds: Double, progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) -> Int64 {
        let trailer = ContinuousClock.now
        defer { flushSeconds += (ContinuousClock.now - trailer) / .seconds(1) }
        Transcoder.reportFinalizing(
            output: output, share: share, frames: frames, mediaSeconds: mediaSeconds, progress: progress)
        try output.finish()
        output.onWrite = nil
        return output.bytesWritten
    }
}
