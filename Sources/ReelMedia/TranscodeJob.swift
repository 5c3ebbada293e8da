internal import CFFmpeg
import Foundation
import Synchronization

/// One re-encoding export, as a two-stage pipeline so both cores stay busy:
///
/// - the **reader** (the calling thread) demuxes, decodes, scales and rotates video into frames from a
///   bounded pool, and decodes, resamples and encodes audio (cheap);
/// - the **encoder** thread encodes video frames and muxes every packet.
///
/// Frames and packets move between them through bounded queues (never copied, never shared), so
/// memory stays flat; in steady state nothing is allocated per frame. Only the encoder thread touches
/// the muxer and the video encoder while the pipeline runs; the reader takes the muxer back after
/// joining it, to write the trailer.
final class TranscodeJob {
    /// What travels from the reader to the encoder thread.
    enum Work {
        case frame(Frame)
        case packet(Packet)
    }

    private let plan: TranscodePlan
    private let input: InputFile
    private let output: OutputFile
    private let cancel: CancellationFlag
    private let progress: (TranscodeProgress) -> Void
    private let video: VideoLane?
    private let videoEncoder: VideoEncoderStage?
    private let audio: AudioLane?
    private let packet: Packet
    private let window: TimeWindow
    private var lastReported = -1.0
    private let work = BoundedQueue<Handoff<Work>>(capacity: 8)
    /// Empty packets for audio on its way to the muxer (returned after writing).
    private let packetPool = BoundedQueue<Handoff<Packet>>(capacity: 64)
    private let encodedFrames = Atomic<Int>(0)

    init(
        plan: TranscodePlan, input: InputFile, cancel: CancellationFlag, heartbeat: Heartbeat,
        progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) {
        self.plan = plan
        self.input = input
        self.cancel = cancel
        self.progress = progress
        packet = try Packet()
        let window = TimeWindow(plan: plan, info: input.info)
        self.window = window

        output = try OutputFile(path: plan.outputPath, muxer: plan.container.muxer)
        output.heartbeat = heartbeat
        if let index = plan.videoStream, let encoding = plan.video {
            // Single-threaded codecs (one job per core) need less slack between the stages: three
            // frames keep both busy and hold half the memory.
            let lane = try VideoLane(
                input: input, streamIndex: index, encoding: encoding, originMicroseconds: window.originMicroseconds,
                endMicroseconds: window.endMicroseconds, hasRangeStart: window.hasRangeStart,
                poolSize: plan.threads == 1 ? 3 : 6,
                decoderThreads: plan.threads)
            video = lane
            videoEncoder = try VideoEncoderStage(
                inputStream: lane.inputStream, encoding: encoding, format: lane.outputFormat, timeBase: lane.timeBase,
                frameRate: lane.frameRate, threads: plan.threads, output: output)
        } else {
            video = nil
            videoEncoder = nil
        }
        if let index = plan.audioStream, let encoding = plan.audio {
            audio = try AudioLane(
                input: input, streamIndex: index, encoding: encoding, output: output,
                originMicroseconds: window.originMicroseconds, endMicroseconds: window.endMicroseconds)
        } else {
            audio = nil
        }
        if video == nil && audio == nil {
            throw MediaError(
                kind: .invalidArgument, call: "plan", message: "nothing to export: no video or audio stream")
        }
        // Carriers for audio packets on their way to the encoder thread; audio alone needs none (`run`).
        if video != nil { for _ in 0..<64 { try packetPool.push(Handoff(try Packet())) } }
        try output.writeHeader(metadata: plan.metadata, options: Transcoder.muxerOptions(plan))
        let work = work
        video?.emit = { (frame: Frame) throws(MediaError) in try work.push(Handoff(.frame(frame))) }
    }

    func run() throws(MediaError) -> TranscodeOutcome {
        if video == nil {
            // Audio alone is one cheap stage: handing each packet to a second thread would cost more
            // (two futex wake-ups a packet) than the muxing it moves off this one.
            try read(muxingDirectly: true)
        } else {
            try runPipeline()
        }
        return try finish()
    }

    /// The reader on this thread, the encoder and muxer on another.
    private func runPipeline() throws(MediaError) {
        let finished = DispatchSemaphore(value: 0)
        let failure = Mutex<MediaError?>(nil)
        let stage = Handoff(self)
        let encoderThread = Thread {
            do throws(MediaError) {
                try stage.value.encodeAndMux()
            } catch {
                failure.withLock { $0 = error }
                // Wake and stop the reader wherever it waits.
                stage.value.work.abort()
                stage.value.video?.pool.abort()
                stage.value.packetPool.abort()
            }
            finished.signal()
        }
        encoderThread.name = "reel-encoder"
        encoderThread.stackSize = 8 << 20
        encoderThread.start()
        do throws(MediaError) {
            try read()
            work.close()
        } catch {
            work.abort()
            video?.pool.abort()
            packetPool.abort()
            finished.wait()
            // Whichever side failed first is the cause; the other side's "pipeline stopped" is only
            // the consequence of the abort.
            let encoderError = failure.withLock { $0 }
            if let encoderError, encoderError.call != BoundedQueue<Int>.abortCall { throw encoderError }
            throw error
        }
        finished.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func finish() throws(MediaError) -> TranscodeOutcome {
        if cancel.isRaised { throw MediaError.cancelled() }

        let frames = encodedFrames.load(ordering: .relaxed)
        if video != nil, frames == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no video frame could be decoded from the input")
        }
        if video == nil, let audio, audio.framesEncoded == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no audio could be decoded from the input")
        }
        Transcoder.reportFinalizing(
            output: output, share: Transcoder.finalizingShareTranscode, frames: frames,
            mediaSeconds: window.totalSeconds,
            progress: progress)
        try output.finish()
        output.onWrite = nil
        report(phase: .finalizing, fraction: 1)
        return TranscodeOutcome(bytes: output.bytesWritten, videoFrames: frames, audioFrames: audio?.framesEncoded ?? 0)
    }

    /// The reader: demux, decode, scale, and audio encoding; hands work to the encoder thread, or
    /// with `muxingDirectly` (no video) writes the audio packets itself.
    private func read(muxingDirectly: Bool = false) throws(MediaError) {
        if window.hasRangeStart { try input.seek(toMicroseconds: window.originMicroseconds) }
        report(phase: .transcoding, fraction: 0)
        let work = work
        let packetPool = packetPool
        let output = output
        let audioSink: PacketSink =
            muxingDirectly
            ? { (encoded: Packet) throws(MediaError) in try output.write(encoded) }
            : { (encoded: Packet) throws(MediaError) in
                guard let carrier = try packetPool.pop()?.value else { return }
                av_packet_move_ref(carrier.pointer, encoded.pointer)
                try work.push(Handoff(.packet(carrier)))
            }
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

    /// The encoder thread: encodes video frames, writes every packet, flushes the encoder at the end.
    private func encodeAndMux() throws(MediaError) {
        let write: PacketSink = { [output] (encoded: Packet) throws(MediaError) in try output.write(encoded) }
        while let item = try work.pop() {
            switch item.value {
            case .frame(let frame):
                try videoEncoder?.encode(frame, to: write)
                encodedFrames.wrappingAdd(1, ordering: .relaxed)
                try video?.pool.push(Handoff(frame))
            case .packet(let carrier):
                try output.write(carrier)
                try packetPool.push(Handoff(carrier))
            }
        }
        try videoEncoder?.flush(to: write)
    }

    private func reportTranscoding() {
        let done = max(video?.mediaSeconds ?? 0, audio?.mediaSeconds ?? 0)
        let fraction = min(1, done / window.totalSeconds) * (1 - Transcoder.finalizingShareTranscode)
        if fraction - lastReported >= 0.002 { report(phase: .transcoding, fraction: fraction) }
    }

    private func report(phase: TranscodeProgress.Phase, fraction: Double) {
        lastReported = fraction
        progress(
            TranscodeProgress(
                phase: phase, fraction: fraction, frames: encodedFrames.load(ordering: .relaxed),
                mediaSeconds: max(video?.mediaSeconds ?? 0, audio?.mediaSeconds ?? 0)))
    }
}
