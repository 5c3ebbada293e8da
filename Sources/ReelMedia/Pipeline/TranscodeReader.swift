internal import CFFmpeg

/// The reader side of a transcode, run on the calling thread: demuxes, decodes, scales and rotates
/// video into frames from the free-frame queue, and decodes, resamples and encodes audio (cheap).
/// Owns the input file and the stages that read from it; touches nothing of the output but through
/// the queues it shares with the writer (or, with no video, a packet sink on its own thread).
final class TranscodeReader {
    private let input: InputFile
    let video: VideoDecodeStage?
    let audio: AudioStage?
    private let queues: PipelineQueues
    private let window: TimeWindow
    private let cancel: CancellationFlag
    private let progress: (TranscodeProgress) -> Void
    private let packet: Packet
    private var lastReported = -1.0

    init(
        input: InputFile, video: VideoDecodeStage?, audio: AudioStage?, queues: PipelineQueues, window: TimeWindow,
        cancel: CancellationFlag, progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) {
        self.input = input
        self.video = video
        self.audio = audio
        self.queues = queues
        self.window = window
        self.cancel = cancel
        self.progress = progress
        packet = try Packet()
    }

    /// Seconds of media read so far (the further of video and audio).
    var mediaSeconds: Double { max(video?.mediaSeconds ?? 0, audio?.mediaSeconds ?? 0) }

    /// A sink for audio packets that moves each into a carrier and sends it to the writer thread.
    func audioToWriter() -> PacketSink {
        let queues = queues
        return { (encoded: Packet) throws(MediaError) in
            guard let carrier = try queues.freePackets.pop() else { return }
            av_packet_move_ref(carrier.pointer, encoded.pointer)
            try queues.work.push(.packet(carrier))
        }
    }

    /// Demuxes and decodes to the end (of the input or the time range): frames go to the writer
    /// through the work queue, audio packets to `audioSink`. Throws `.cancelled` once cancelled.
    func read(audioTo audioSink: PacketSink) throws(MediaError) {
        if window.hasRangeStart { try input.seek(toMicroseconds: window.originMicroseconds) }
        report(phase: .transcoding, fraction: 0)
        while true {
            guard try input.read(into: packet, unless: cancel) else { break }
            defer { packet.unref() }
            let index = packet.streamIndex
            if let video, index == video.inputIndex, !video.finished {
                try video.decode(packet)
            } else if let audio, index == audio.inputIndex, !audio.finished {
                try audio.decode(packet, to: audioSink)
            } else {
                continue
            }
            if (video?.finished ?? true) && (audio?.finished ?? true) { break }
            reportTranscoding()
        }
        try video?.flush()
        try audio?.flush(to: audioSink)
        if cancel.isRaised { throw MediaError.cancelled() }
    }

    private func reportTranscoding() {
        let fraction = min(1, mediaSeconds / window.totalSeconds) * (1 - Transcoder.finalizingShareTranscode)
        if fraction - lastReported >= 0.002 { report(phase: .transcoding, fraction: fraction) }
    }

    func report(phase: TranscodeProgress.Phase, fraction: Double) {
        lastReported = fraction
        progress(
            TranscodeProgress(
                phase: phase, fraction: fraction, frames: queues.framesEncoded.load(ordering: .relaxed),
                mediaSeconds: mediaSeconds))
    }
}
