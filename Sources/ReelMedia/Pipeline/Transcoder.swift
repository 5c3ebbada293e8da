internal import CFFmpegShim
import Foundation

/// Runs one `TranscodePlan` on the calling thread: a `TranscodePipeline` (demux → decode →
/// scale/rotate → encode → mux, and decode → resample → FIFO → AAC → mux) for `.transcode`, or a
/// `RemuxPipeline` for `.copy`.
///
/// Blocking: call it from a dedicated thread, never from Swift's cooperative pool. Raising `cancel`
/// stops it within one packet (and interrupts a blocking read). On any failure the partially written
/// file at `plan.outputPath` is left for the caller to remove.
public enum Transcoder {
    /// Share of the progress bar given to the trailer (the faststart rewrite) when re-encoding.
    static let finalizingShareTranscode = 0.03
    /// Share given to the trailer when only copying packets (the rewrite is then half the work).
    static let finalizingShareRemux = 0.45

    /// Executes the plan. Throws `MediaError`; `.cancelled` when `cancel` was raised.
    public static func run(
        _ plan: TranscodePlan, cancel: CancellationFlag, heartbeat: Heartbeat = Heartbeat(),
        progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) -> TranscodeOutcome {
        // The codecs' frames are freed by now; give their pages back, so a worker running exports
        // one after another in one process does not keep the largest one's footprint forever.
        defer { reel_trim_heap() }
        // Copying packets needs no decoded frames: the header suffices where it describes the streams.
        let analysis: InputFile.Analysis
        if case .copy = plan.mode { analysis = .headerSuffices } else { analysis = .full }
        let opening = ContinuousClock.now
        let input = try InputFile(
            path: plan.inputPath, policy: plan.policy, interrupt: cancel, analysis: analysis,
            byteRange: plan.inputByteRange)
        input.heartbeat = heartbeat
        let openSeconds = (ContinuousClock.now - opening) / .seconds(1)
        if cancel.isRaised { throw MediaError.cancelled() }
        try validate(plan, against: input.info)
        switch plan.mode {
        case .transcode(let video, let audio):
            let pipeline = try TranscodePipeline(
                plan: plan, video: video, audio: audio, input: input, cancel: cancel, heartbeat: heartbeat,
                progress: progress)
            var outcome = try pipeline.run()
            outcome.openSeconds = openSeconds
            return outcome
        case .copy(let streams):
            do {
                let pipeline = try RemuxPipeline(
                    plan: plan, streams: streams, input: input, cancel: cancel, heartbeat: heartbeat,
                    progress: progress)
                return try pipeline.run()
            } catch  where error.kind == .moovReservationTooSmall {
                // The moov did not fit the space reserved for it: copy again with the classic rewrite.
                unlink(plan.outputPath)
                let again = try InputFile(
                    path: plan.inputPath, policy: plan.policy, interrupt: cancel, analysis: analysis,
                    byteRange: plan.inputByteRange)
                again.heartbeat = heartbeat
                let pipeline = try RemuxPipeline(
                    plan: plan, streams: streams, input: again, cancel: cancel, heartbeat: heartbeat,
                    progress: progress, reserveMoov: false)
                return try pipeline.run()
            }
        }
    }

    /// Every stream the plan names exists and has the kind its role needs.
    static func validate(_ plan: TranscodePlan, against info: MediaInfo) throws(MediaError) {
        func require(_ index: Int?, _ kind: StreamKind?, _ role: String) throws(MediaError) {
            guard let index else { return }
            guard index >= 0, index < info.streams.count else {
                throw MediaError(
                    kind: .invalidArgument, call: "plan", message: "\(role) stream \(index) does not exist")
            }
            if let kind, info.streams[index].kind != kind {
                throw MediaError(
                    kind: .invalidArgument, call: "plan",
                    message: "stream \(index) is not \(role == "audio" ? "an" : "a") \(role) stream")
            }
        }
        switch plan.mode {
        case .transcode(let video, let audio):
            try require(video?.stream, .video, "video")
            try require(audio?.stream, .audio, "audio")
        case .copy(let streams):
            for index in streams { try require(index, nil, "copied") }
        }
    }

    /// The muxer options every export uses.
    /// With `reservedMoovBytes`, the moov is written into space reserved at the front instead of
    /// being moved there by rewriting the whole file (faststart).
    static func muxerOptions(_ plan: TranscodePlan, reservedMoovBytes: Int? = nil) -> [(String, String)] {
        var flags = ["use_metadata_tags"]
        if plan.faststart && reservedMoovBytes == nil { flags.append("faststart") }
        var options = [("movflags", flags.map { "+" + $0 }.joined())]
        if let brand = plan.container.brand { options.append(("brand", brand)) }
        if plan.faststart, let reservedMoovBytes { options.append(("moov_size", String(reservedMoovBytes))) }
        return options
    }

    /// Progress during `av_write_trailer`, from bytes written since it started.
    static func reportFinalizing(
        output: OutputFile, share: Double, frames: Int, mediaSeconds: Double,
        progress: @escaping (TranscodeProgress) -> Void
    ) {
        let startBytes = output.bytesWritten
        // The rewrite copies the whole file once more (plus the moov it moves in front).
        let expected = Double(max(startBytes, 1))
        var last = -1.0
        output.onWrite = { total in
            let done = min(1, Double(total - startBytes) / expected)
            if done - last >= 0.01 {
                last = done
                progress(
                    TranscodeProgress(
                        phase: .finalizing, fraction: (1 - share) + share * done, frames: frames,
                        mediaSeconds: mediaSeconds))
            }
        }
        progress(TranscodeProgress(phase: .finalizing, fraction: 1 - share, frames: frames, mediaSeconds: mediaSeconds))
    }
}
