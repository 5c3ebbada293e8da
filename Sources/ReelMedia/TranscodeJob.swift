import CFFmpeg

/// One re-encoding export: owns every FFmpeg object it uses and runs FFmpeg's transcode loop.
final class TranscodeJob {
    private let plan: TranscodePlan
    private let input: InputFile
    private let output: OutputFile
    private let cancel: CancellationFlag
    private let progress: (TranscodeProgress) -> Void
    private let video: VideoLane?
    private let audio: AudioLane?
    private let packet: Packet
    /// Source time (in AV_TIME_BASE units) that becomes 0 in the output.
    private let originMicroseconds: Int64
    private let endMicroseconds: Int64?
    private let totalSeconds: Double
    private var lastReported = -1.0

    init(
        plan: TranscodePlan, input: InputFile, cancel: CancellationFlag, heartbeat: Heartbeat,
        progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) {
        self.plan = plan
        self.input = input
        self.cancel = cancel
        self.progress = progress
        packet = try Packet()
        let info = input.info
        let start = saneStart(info.startSeconds)
        let rangeStart = Int64(((plan.startSeconds ?? 0) * Double(AV_TIME_BASE)).rounded())
        originMicroseconds = start + rangeStart
        endMicroseconds = plan.endSeconds.map { start + Int64(($0 * Double(AV_TIME_BASE)).rounded()) }
        let rangeEnd = plan.endSeconds.map { min($0, info.durationSeconds) } ?? info.durationSeconds
        totalSeconds = max(rangeEnd - (plan.startSeconds ?? 0), 0.001)

        output = try OutputFile(path: plan.outputPath, muxer: plan.container.muxer)
        output.heartbeat = heartbeat
        if let index = plan.videoStream, let encoding = plan.video {
            video = try VideoLane(
                input: input, streamIndex: index, encoding: encoding, output: output,
                originMicroseconds: originMicroseconds, endMicroseconds: endMicroseconds,
                hasRangeStart: (plan.startSeconds ?? 0) > 0)
        } else {
            video = nil
        }
        if let index = plan.audioStream, let encoding = plan.audio {
            audio = try AudioLane(
                input: input, streamIndex: index, encoding: encoding, output: output,
                originMicroseconds: originMicroseconds, endMicroseconds: endMicroseconds)
        } else {
            audio = nil
        }
        if video == nil && audio == nil {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "nothing to export: no video or audio stream")
        }
        try output.writeHeader(metadata: plan.metadata, options: Transcoder.muxerOptions(plan))
        video?.outputStreamReady()
        audio?.outputStreamReady()
    }

    func run() throws(MediaError) -> TranscodeOutcome {
        if let start = plan.startSeconds, start > 0 { try input.seek(toMicroseconds: originMicroseconds) }
        report(phase: .transcoding, fraction: 0)
        while true {
            if cancel.isRaised { throw MediaError.cancelled() }
            let more: Bool
            do {
                more = try input.read(into: packet)
            } catch where error.kind == .cancelled || cancel.isRaised {
                throw MediaError.cancelled()
            }
            if !more { break }
            defer { packet.unref() }
            let index = packet.streamIndex
            if let video, index == video.inputIndex, !video.finished {
                try video.decode(packet) { (encoded: Packet) throws(MediaError) in try output.write(encoded) }
            } else if let audio, index == audio.inputIndex, !audio.finished {
                try audio.decode(packet) { (encoded: Packet) throws(MediaError) in try output.write(encoded) }
            } else {
                continue
            }
            if (video?.finished ?? true) && (audio?.finished ?? true) { break }
            reportTranscoding()
        }
        try video?.flush { (encoded: Packet) throws(MediaError) in try output.write(encoded) }
        try audio?.flush { (encoded: Packet) throws(MediaError) in try output.write(encoded) }
        if cancel.isRaised { throw MediaError.cancelled() }
        if let video, video.framesEncoded == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no video frame could be decoded from the input")
        }
        if video == nil, let audio, audio.framesEncoded == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no audio could be decoded from the input")
        }
        let frames = video?.framesEncoded ?? 0
        Transcoder.reportFinalizing(
            output: output, share: Transcoder.finalizingShareTranscode, frames: frames, mediaSeconds: totalSeconds,
            progress: progress)
        try output.finish()
        output.onWrite = nil
        report(phase: .finalizing, fraction: 1)
        return TranscodeOutcome(
            bytes: output.bytesWritten, videoFrames: frames, audioFrames: audio?.framesEncoded ?? 0)
    }

    private func reportTranscoding() {
        let done = max(video?.mediaSeconds ?? 0, audio?.mediaSeconds ?? 0)
        let fraction = min(1, done / totalSeconds) * (1 - Transcoder.finalizingShareTranscode)
        if fraction - lastReported >= 0.002 { report(phase: .transcoding, fraction: fraction) }
    }

    private func report(phase: TranscodeProgress.Phase, fraction: Double) {
        lastReported = fraction
        progress(
            TranscodeProgress(
                phase: phase, fraction: fraction, frames: video?.framesEncoded ?? 0,
                mediaSeconds: max(video?.mediaSeconds ?? 0, audio?.mediaSeconds ?? 0)))
    }
}
