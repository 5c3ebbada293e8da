internal import CFFmpeg
internal import CFFmpegShim
import Foundation

/// Runs one `LadderPlan` on the calling thread: the source is read and decoded once (scaled,
/// rotated and tone-mapped to the first rung by `VideoDecodeStage`), every other rung scales that
/// frame down with its own `Scaler`, and every rung has its own x264 encoder and CMAF track
/// (`SegmentedTrack`); audio is decoded and encoded once (`AudioStage`). SDR rungs beside HDR ones
/// (`LadderPlan.sdrRungs`) take the first rung's frame tone-mapped once (`ToneMapper`, at the first
/// SDR rung's size), the lower ones scaled from that.
///
/// Parallelism: H.264 rungs run on x264's own frame threads (the core budget split between the
/// rungs, at least two each so a rung's encode runs beside the others rather than in turn). HEVC
/// rungs, and the H.264 SDR rungs beside them, get their share of the budget and never more (one
/// core each is x265 with no pool, or x264 with one thread, which encode on the thread that calls
/// them), so each has a thread of its own (`RungThreads`), fed through a bounded lane, with at most
/// as many encoding at once as the budget has cores. The scaling of the lower rungs and the tone
/// mapping run on the calling thread.
///
/// Keyframes: the first frame at or after every multiple of the segment length is sent as an I
/// frame to every rung (`alignedKeyframes`: an IDR, no scene cuts), and each track cuts a fragment
/// right before that IDR's packet, so every rung's segment k starts with an IDR at the same time.
/// Audio is cut at the AAC frame nearest each multiple. Blocking; raising `cancel` stops it within
/// a packet. On failure the folder's contents are left for the caller to remove.
public enum LadderTranscoder {
    /// Share of the progress bar given to splitting the tracks into segment files.
    static let finalizingShare = 0.03

    public static func run(
        _ plan: LadderPlan, cancel: CancellationFlag, heartbeat: Heartbeat = Heartbeat(),
        progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) -> LadderOutcome {
        defer { reel_trim_heap() }
        guard !plan.rungs.isEmpty else {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "a ladder needs at least one rung")
        }
        guard plan.segmentSeconds > 0, plan.segmentSeconds.isFinite else {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "the segment duration must be positive")
        }
        for rung in plan.rungs
        where !rung.alignedKeyframes || (rung.codec == .h264 && rung.tenBit) || rung.codec != plan.rungs[0].codec
            || rung.tenBit != plan.rungs[0].tenBit || rung.color != plan.rungs[0].color
        {
            throw MediaError(
                kind: .invalidArgument, call: "plan",
                message:
                    "ladder rungs are 8-bit H.264, HEVC or AV1, alike in codec, depth and colour, with aligned keyframes"
            )
        }
        if let first = plan.sdrRungs.first {
            guard plan.rungs[0].codec != .h264, plan.rungs[0].color == .keepSource,
                case .toneMapped = first.color,
                plan.sdrRungs.allSatisfy({
                    $0.codec == .h264 && !$0.tenBit && $0.alignedKeyframes && $0.color == first.color
                })
            else {
                throw MediaError(
                    kind: .invalidArgument, call: "plan",
                    message:
                        "SDR rungs are 8-bit H.264 tone-mapped alike, with aligned keyframes, beside HEVC or AV1 rungs keeping HDR"
                )
            }
        }
        let input = try InputFile(
            path: plan.inputPath, policy: plan.policy, interrupt: cancel, analysis: .full,
            byteRange: plan.inputByteRange)
        input.heartbeat = heartbeat
        if cancel.isRaised { throw MediaError.cancelled() }
        let streams = input.info.streams
        guard streams.indices.contains(plan.videoStream), streams[plan.videoStream].kind == .video else {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "stream \(plan.videoStream) is not video")
        }
        if let audio = plan.audio, !streams.indices.contains(audio.stream) || streams[audio.stream].kind != .audio {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "stream \(audio.stream) is not audio")
        }
        let pipeline = try LadderPipeline(
            plan: plan, input: input, cancel: cancel, heartbeat: heartbeat, progress: progress)
        return try pipeline.run()
    }
}

/// The state of one run of `LadderTranscoder`.
final class LadderPipeline {
    /// One rung as the fan-out sees it: its size, where its pictures come from, its scaler (none for
    /// the first), and either its encoder and track (`output`, encoded on the fan-out thread) or the
    /// lane to its own thread.
    final class Rung {
        /// Where a rung's pictures come from (rungs by index in the fan-out's order).
        enum Feed {
            /// The decoded pictures themselves: the first rung.
            case decoded
            /// Scaled from that rung's picture: a lower rung from the first, a lower SDR rung from
            /// the first SDR rung.
            case scaled(from: Int)
            /// Tone-mapped to SDR from that rung's picture: the first SDR rung, from the first rung.
            case toneMapped(from: Int)
        }

        let encoding: VideoEncoding
        /// The track's folder (`v0`, `v1`, …; `s0`, `s1`, … for SDR rungs beside HDR ones).
        let name: String
        let feed: Feed
        /// Whether later rungs are made from this rung's picture: its lane's frame is handed over
        /// only once they are.
        let readByOthers: Bool
        /// The encoder and track, while this thread holds them (not while the rung's own thread does).
        var output: RungOutput?
        /// Where the frames go when the rung has a thread of its own; `threadOutput` until it starts.
        let lane: RungLane?
        var threadOutput: Baton<RungOutput>?
        /// A lower rung's own picture, scaled from the first rung's (encoded on this thread).
        let frame: Frame?
        var scaler: Scaler?

        init(
            encoding: VideoEncoding, name: String, feed: Feed, readByOthers: Bool, output: RungOutput, frame: Frame?
        ) {
            self.encoding = encoding
            self.name = name
            self.feed = feed
            self.readByOthers = readByOthers
            self.output = output
            self.frame = frame
            lane = nil
        }

        init(
            encoding: VideoEncoding, name: String, feed: Feed, readByOthers: Bool, lane: RungLane,
            output: Baton<RungOutput>
        ) {
            self.encoding = encoding
            self.name = name
            self.feed = feed
            self.readByOthers = readByOthers
            self.lane = lane
            threadOutput = output
            frame = nil
        }

        /// Seconds of media its track holds, for progress.
        var writtenSeconds: Double { lane?.writtenSeconds ?? output?.track.writtenSeconds ?? 0 }
    }

    /// Fans each decoded frame out to the rungs. Shared by the decode stage's `emit` and the pipeline.
    final class Fanout {
        var rungs: [Rung] = []
        var segmentSeconds = 6.0
        var timeBase = AVRational(num: 1, den: 1)
        var nextForced = 0.0
        var frames = 0
        var pool: BoundedQueue<Frame>?
        /// Maps the first rung's pictures to SDR for the first SDR rung (nil: no SDR rungs).
        var toneMapper: ToneMapper?
        /// The matrix the first rung's pictures are in (the source's), written on them so a scaler
        /// reading them converts from the right one.
        var hdrMatrix = AVCOL_SPC_BT2020_NCL
        /// The first rung's picture as the tone mapper reads it (10-bit BT.2020 at the first SDR
        /// rung's size), when it is not that already; and the scaler that makes it.
        var toneMapInput: Frame?
        private var toneMapScaler: Scaler?

        func take(_ frame: Frame) throws(MediaError) {
            let picture = frame.pointer
            let time = seconds(picture.pointee.pts, timeBase)
            if time >= nextForced - 1e-6 {
                picture.pointee.pict_type = AV_PICTURE_TYPE_I
                nextForced = LadderPipeline.boundary(after: time, segment: segmentSeconds)
            }
            if toneMapper != nil {
                picture.pointee.colorspace = hdrMatrix
                picture.pointee.color_range = AVCOL_RANGE_MPEG
            }
            // Each rung's picture so far, by index, for the rungs made from it; and the lanes' frames
            // held back until those are made.
            var pictures: [UnsafeMutablePointer<AVFrame>] = []
            var held: [(lane: RungLane, frame: Frame)] = []
            for rung in rungs {
                let target: Frame
                if let lane = rung.lane {
                    // A free frame of the rung's; waits while its encoder holds them all (back-pressure).
                    guard let spare = try lane.free.pop() else { throw MediaError.pipelineStopped() }
                    target = spare
                } else {
                    target = rung.frame ?? frame
                }
                switch rung.feed {
                case .decoded:
                    // The decoded picture itself, by reference: the decoder copies it before it writes
                    // into it again while the encoder still holds it (`makeWritable`). Other rungs read
                    // `picture`, which stays this thread's until the frame goes back to the pool.
                    if rung.lane != nil { try target.reference(frame) }
                    pictures.append(picture)
                case .scaled(let from):
                    try scale(pictures[from], into: target, for: rung)
                    pictures.append(target.pointer)
                case .toneMapped(let from):
                    try toneMap(pictures[from], into: target, for: rung)
                    pictures.append(target.pointer)
                }
                if let lane = rung.lane {
                    if rung.readByOthers { held.append((lane, target)) } else { try lane.work.push(target) }
                } else if let output = rung.output {
                    try output.encode(target)
                }
            }
            for (lane, target) in held { try lane.work.push(target) }
            frames += 1
            try pool?.push(frame)
        }

        /// Tone-maps the first rung's picture (10-bit, the source's colours) into the first SDR rung's
        /// frame, 8-bit BT.709, by the exports' own tone mapper; converted first to what the tone
        /// mapper reads when it is not that already (`toneMapInput`).
        private func toneMap(
            _ picture: UnsafeMutablePointer<AVFrame>, into own: Frame, for rung: Rung
        ) throws(MediaError) {
            guard let toneMapper else { throw MediaError.pipelineStopped() }
            var input = picture
            if let toneMapInput {
                if toneMapScaler == nil || !toneMapScaler!.accepts(picture) {
                    toneMapScaler = try Scaler(
                        from: picture, toWidth: Int32(rung.encoding.width), height: Int32(rung.encoding.height),
                        format: ToneMapper.inputFormat, matrix: .bt2020, threads: 1)
                }
                try toneMapInput.makeWritable()
                try toneMapScaler!.scale(picture, into: toneMapInput.pointer)
                input = toneMapInput.pointer
            }
            try own.makeWritable()
            try toneMapper.map(input, into: own.pointer)
            own.pointer.pointee.pts = picture.pointee.pts
            own.pointer.pointee.pkt_duration = picture.pointee.pkt_duration
            own.pointer.pointee.pict_type = picture.pointee.pict_type
            own.pointer.pointee.sample_aspect_ratio = rung.encoding.avPixelAspect
            own.pointer.pointee.color_primaries = AVCOL_PRI_BT709
            own.pointer.pointee.color_trc = AVCOL_TRC_BT709
            own.pointer.pointee.colorspace = AVCOL_SPC_BT709
            own.pointer.pointee.color_range = AVCOL_RANGE_MPEG
        }

        /// Scales the first rung's picture into a lower rung's frame, with its timing and colours.
        private func scale(
            _ picture: UnsafeMutablePointer<AVFrame>, into own: Frame, for rung: Rung
        ) throws(MediaError) {
            if rung.scaler == nil || !rung.scaler!.accepts(picture) {
                rung.scaler = try Scaler(
                    from: picture, toWidth: Int32(rung.encoding.width), height: Int32(rung.encoding.height),
                    format: AVPixelFormat(rawValue: picture.pointee.format), matrix: .source, threads: 1)
            }
            try own.makeWritable()
            try rung.scaler!.scale(picture, into: own.pointer)
            own.takeProperties(of: picture, pixelAspect: rung.encoding.avPixelAspect)
        }
    }

    private let input: InputFile
    private let plan: LadderPlan
    private let fanout: Fanout
    private let decode: VideoDecodeStage
    private let audio: AudioStage?
    private let audioTrack: SegmentedTrack?
    private var nextAudioBoundary = 0.0
    private let window: TimeWindow
    private let cancel: CancellationFlag
    private let progress: (TranscodeProgress) -> Void
    private let frameRate: Double
    /// How many rungs may encode at once when they have threads of their own (`RungThreads`).
    private let gate: EncoderGate

    init(
        plan: LadderPlan, input: InputFile, cancel: CancellationFlag, heartbeat: Heartbeat,
        progress: @escaping (TranscodeProgress) -> Void
    ) throws(MediaError) {
        self.plan = plan
        self.input = input
        self.cancel = cancel
        self.progress = progress
        let window = TimeWindow(
            startSeconds: plan.startSeconds, endSeconds: plan.endSeconds, sourceStartSeconds: input.info.startSeconds,
            durationSeconds: input.info.durationSeconds)
        self.window = window
        let fanout = Fanout()
        fanout.segmentSeconds = plan.segmentSeconds
        let pool = BoundedQueue<Frame>(capacity: 2)
        fanout.pool = pool
        let budget = plan.threads == 0 ? StageThreads.availableCores() : plan.threads
        // The HDR rungs, then the SDR rungs beside them.
        let encodings = plan.rungs + plan.sdrRungs
        let rungThreads = plan.threads == 1 ? 1 : max(2, (budget + encodings.count - 1) / encodings.count)
        // x265 rungs get their share of the cores and never more: x265 hands rows of CTUs between its
        // frame and pool threads, and with more runnable threads than cores each hand-off waits for a
        // time slice (a 3 s 640x360 two-rung HEVC ladder with pools of 2 ran past 300 s while the
        // test suite loaded both cores; `StageThreads.x265Parameters`). One core each is no pool. The
        // H.264 SDR rungs beside them take the same share (x264 with one thread has no frame or
        // lookahead threads and encodes on the thread that calls it), so every encoder's threads are
        // within the gate's count.
        let share = max(1, budget / encodings.count)
        // So each HEVC rung's encoder has a thread of its own, at most `budget` of them encoding at
        // once: with one core a rung (two rungs on two cores), x265 has no pool and encodes on the
        // thread that calls it, and on the fan-out thread the rungs took turns (one core busy).
        let encodersAtOnce = min(budget, encodings.count)
        gate = EncoderGate(permits: encodersAtOnce)
        // (SVT-AV1 rungs too: each encoder runs threads of its own, fed from the thread that calls it.)
        let ownThreads = plan.rungs[0].codec != .h264 && encodersAtOnce >= 2
        let decode = try VideoDecodeStage(
            input: input, streamIndex: plan.videoStream, encoding: plan.rungs[0], window: window, pool: pool,
            poolSize: 2, decoderThreads: plan.threads,
            emit: { (frame: Frame) throws(MediaError) in try fanout.take(frame) })
        fanout.timeBase = decode.timeBase
        frameRate = av_q2d(decode.frameRate)
        let source = try decode.describeSource()
        let hdrCount = plan.rungs.count
        if let sdrTop = plan.sdrRungs.first, case .toneMapped(let mapping) = sdrTop.color {
            fanout.toneMapper = try ToneMapper(mapping)
            fanout.hdrMatrix = LadderPipeline.matrix(of: source.parameters.pointer)
            let top = plan.rungs[0]
            // The first rung's pictures are what the tone mapper reads when they are 10-bit BT.2020 at
            // the first SDR rung's size (a ladder's two sets share their boxes): else converted first.
            if sdrTop.width != top.width || sdrTop.height != top.height
                || decode.outputFormat != ToneMapper.inputFormat || fanout.hdrMatrix != AVCOL_SPC_BT2020_NCL
            {
                fanout.toneMapInput = try Frame(
                    width: Int32(sdrTop.width), height: Int32(sdrTop.height), format: ToneMapper.inputFormat)
            }
        }
        for (index, var encoding) in encodings.enumerated() {
            // A keyframe at least every segment (x264's own keyint), the forced ones at the boundaries.
            encoding.keyframeInterval = max(1, Int((plan.segmentSeconds * frameRate).rounded(.up)))
            let sdr = index >= hdrCount
            let name = sdr ? "s\(index - hdrCount)" : "v\(index)"
            let feed: Rung.Feed =
                index == 0 ? .decoded : index == hdrCount ? .toneMapped(from: 0) : .scaled(from: sdr ? hdrCount : 0)
            // The first SDR rung's picture is what the lower SDR rungs are scaled from.
            let readByOthers = sdr && index == hdrCount && encodings.count > hdrCount + 1
            let format = sdr ? ToneMapper.outputFormat : decode.outputFormat
            let threads = plan.rungs[0].codec != .h264 ? share : rungThreads
            func output() throws(MediaError) -> sending RungOutput {
                try LadderPipeline.rungOutput(
                    name, encoding: encoding, plan: plan, source: source, format: format,
                    timeBase: decode.timeBase, frameRate: decode.frameRate, threads: threads, heartbeat: heartbeat,
                    failAtFrame: index == encodings.count - 1 ? plan.rungFault : nil)
            }
            if ownThreads {
                var frames: [Frame] = []
                for _ in 0..<RungLane.depth {
                    frames.append(
                        index == 0
                            ? try Frame()
                            : try Frame(width: Int32(encoding.width), height: Int32(encoding.height), format: format))
                }
                let lane = try RungLane(frames: frames, ownsPictures: index != 0)
                // Made straight into its baton: nothing here keeps a reference to what moves.
                fanout.rungs.append(
                    Rung(
                        encoding: encoding, name: name, feed: feed, readByOthers: readByOthers, lane: lane,
                        output: Baton(try output())))
            } else {
                let own =
                    index == 0
                    ? nil : try Frame(width: Int32(encoding.width), height: Int32(encoding.height), format: format)
                fanout.rungs.append(
                    Rung(
                        encoding: encoding, name: name, feed: feed, readByOthers: readByOthers, output: try output(),
                        frame: own))
            }
        }
        self.fanout = fanout
        self.decode = decode
        if let audio = plan.audio {
            // The edit list trims the AAC encoder's priming (see `SegmentedTrack`).
            let track = try SegmentedTrack(root: plan.outputFolder, name: "a", withEditList: true)
            track.output.heartbeat = heartbeat
            let encoder = try AudioStage.openEncoder(audio.encoding, globalHeader: track.output.wantsGlobalHeader)
            let stream = try track.output.addStream(
                describedBy: try CodecParameters(of: encoder.context), timeBase: encoder.context.pointee.time_base,
                language: input.language(ofStream: audio.stream))
            try track.writeHeader()
            self.audio = try AudioStage(
                input: input, streamIndex: audio.stream, encoder: encoder,
                target: track.output.target(ofStream: stream),
                window: window)
            audioTrack = track
        } else {
            self.audio = nil
            audioTrack = nil
        }
    }

    /// A rung's track (folder `name`), its header written, and its encoder: made apart from the
    /// pipeline's other state, so a rung encoded on its own thread can be moved there whole.
    private static func rungOutput(
        _ name: String, encoding: VideoEncoding, plan: LadderPlan,
        source: (parameters: CodecParameters, language: String?), format: AVPixelFormat, timeBase: AVRational,
        frameRate: AVRational, threads: Int, heartbeat: Heartbeat, failAtFrame: Int?
    ) throws(MediaError) -> sending RungOutput {
        // The edit list presents the first frame at 0, its decode time a reorder delay before it.
        let track = try SegmentedTrack(root: plan.outputFolder, name: name, withEditList: true)
        track.output.heartbeat = heartbeat
        let encode = try VideoEncodeStage(
            encoding: encoding, source: source.parameters, language: source.language, format: format,
            timeBase: timeBase, frameRate: frameRate, threads: threads, output: track.output, decodeTimes: .shown)
        try track.writeHeader()
        return RungOutput(
            encode: encode, track: track, size: (encoding.width, encoding.height), segmentSeconds: plan.segmentSeconds,
            failAtFrame: failAtFrame)
    }

    /// The first multiple of `segment` after `time` (a time at a multiple counts as reaching it).
    static func boundary(after time: Double, segment: Double) -> Double {
        ((time / segment + 1e-6).rounded(.down) + 1) * segment
    }

    /// Audio packets: a segment starts at the AAC frame nearest each boundary.
    private func writeAudio(_ packet: Packet) throws(MediaError) {
        guard let track = audioTrack else { return }
        let raw = packet.pointer.pointee
        let time = track.seconds(ofPts: raw.pts)
        let half = track.seconds(ofPts: max(1, raw.duration)) / 2
        let starts = !track.hasSegments || time >= nextAudioBoundary - half
        if starts {
            // The encoder's priming packet (before 0) starts the first segment, not one of its own.
            nextAudioBoundary = LadderPipeline.boundary(after: max(0, time + half), segment: plan.segmentSeconds)
        }
        try track.write(packet, startsSegment: starts)
    }

    /// Runs the ladder to its end. Call once.
    func run() throws(MediaError) -> LadderOutcome {
        // The rungs with threads of their own start now; they end when their lanes are closed (all
        // frames sent) or aborted (a failure on either side, a cancel).
        var threaded: [(index: Int, lane: RungLane, output: Baton<RungOutput>)] = []
        for (index, rung) in fanout.rungs.enumerated() {
            if let lane = rung.lane, let output = rung.threadOutput {
                threaded.append((index, lane, output))
                rung.threadOutput = nil
            }
        }
        let threads = RungThreads(threaded, gate: gate)
        let failure: MediaError?
        do throws(MediaError) {
            try transcode()
            for (_, lane, _) in threaded { lane.work.close() }
            failure = nil
        } catch {
            for (_, lane, _) in threaded { lane.abort() }
            failure = error
        }
        let (outputs, threadFailure) = threads.join()
        for (index, output) in outputs { fanout.rungs[index].output = output }
        // Whichever side failed first is the cause; the other side's `pipelineStopped` is only the
        // consequence of the abort.
        if let threadFailure, threadFailure.kind != .pipelineStopped || failure == nil { throw threadFailure }
        if let failure { throw failure }
        return try finish()
    }

    /// Reads, decodes and fans out every frame, encodes the audio, and flushes the encoders this
    /// thread holds.
    private func transcode() throws(MediaError) {
        let packet = try Packet()
        if window.hasRangeStart { try input.seek(toMicroseconds: window.originMicroseconds) }
        report(.transcoding, 0)
        var lastReported = 0.0
        let audioSink: PacketSink = { [self] (encoded: Packet) throws(MediaError) in try writeAudio(encoded) }
        while true {
            guard try input.read(into: packet, unless: cancel) else { break }
            defer { packet.unref() }
            let index = packet.streamIndex
            if index == decode.inputIndex, !decode.finished {
                try decode.decode(packet)
            } else if let audio, index == audio.inputIndex, !audio.finished {
                try audio.decode(packet, to: audioSink)
            } else {
                continue
            }
            if decode.finished && (audio?.finished ?? true) { break }
            let fraction = min(1, mediaSeconds / window.totalSeconds) * (1 - LadderTranscoder.finalizingShare)
            if fraction - lastReported >= 0.002 {
                lastReported = fraction
                report(.transcoding, fraction)
            }
        }
        if cancel.isRaised { throw MediaError.cancelled() }
        try decode.flush()
        try audio?.flush(to: audioSink)
        for rung in fanout.rungs { try rung.output?.flush() }
    }

    /// Checks what was encoded and splits every track into its segment files.
    private func finish() throws(MediaError) -> LadderOutcome {
        if cancel.isRaised { throw MediaError.cancelled() }
        if fanout.frames == 0 {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no video frame could be decoded from the input")
        }
        report(.finalizing, 1 - LadderTranscoder.finalizingShare)
        var video: [LadderTrack] = []
        for rung in fanout.rungs {
            guard let track = rung.output?.track else { throw MediaError.pipelineStopped() }
            let stream = track.output.context.pointee.streams[0]!
            let files = try track.finish()
            // SVT-AV1 gives its sequence header as extradata; the muxer writes the `av1C` record the
            // codec string is read from, so AV1's is read back from the init segment.
            let codecs =
                stream.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_AV1
                ? try CodecString.ofInitSegment(at: plan.outputFolder + "/" + track.name + "/" + files.initFile)
                : try CodecString.of(stream.pointee.codecpar)
            video.append(
                LadderTrack(
                    folder: track.name, files: files, codecs: codecs, width: rung.encoding.width,
                    height: rung.encoding.height, frameRate: frameRate,
                    videoRange: LadderPipeline.videoRange(stream.pointee.codecpar.pointee.color_trc),
                    colour: LadderTrack.Colour(stream.pointee.codecpar.pointee)))
        }
        var audioOutcome: LadderTrack?
        if let audioTrack, let encoding = plan.audio?.encoding {
            var files = try audioTrack.finish()
            // The last AAC frame is padded to 1024 samples: the playlist ends the audio at the video's
            // end (Apple: audio and video playlists cover the same duration) when that padding is all
            // that runs past it.
            let frame = 1024 / Double(max(1, encoding.sampleRate))
            if let last = files.segments.last, let videoEnd = video.first?.files.segments.last,
                case let end = last.startSeconds + last.durationSeconds,
                case let limit = videoEnd.startSeconds + videoEnd.durationSeconds,
                end > limit, end - limit < frame + 1e-6, limit > last.startSeconds
            {
                files.segments[files.segments.count - 1].durationSeconds = limit - last.startSeconds
            }
            audioOutcome = LadderTrack(
                folder: audioTrack.name, files: files, codecs: "mp4a.40.2",
                channels: encoding.channels, sampleRate: encoding.sampleRate)
        }
        report(.finalizing, 1)
        return LadderOutcome(
            video: video, audio: audioOutcome, frames: fanout.frames, mostEncodingAtOnce: gate.mostAtOnce)
    }

    private var mediaSeconds: Double { max(decode.mediaSeconds, audio?.mediaSeconds ?? 0) }

    private func report(_ phase: TranscodeProgress.Phase, _ fraction: Double) {
        // Each rendition by what its own encoder has written; all of them done once the tracks are split.
        let done = phase == .finalizing && fraction >= 1
        let share = 1 - LadderTranscoder.finalizingShare
        func part(_ written: Double) -> Double {
            done ? 1 : min(1, written / max(window.totalSeconds, 1e-3)) * share
        }
        var renditions = fanout.rungs.map {
            TranscodeProgress.Rendition(
                name: $0.name, width: $0.encoding.width, height: $0.encoding.height, fraction: part($0.writtenSeconds))
        }
        if let audioTrack {
            renditions.append(.init(name: audioTrack.name, fraction: part(audioTrack.writtenSeconds)))
        }
        progress(
            TranscodeProgress(
                phase: phase, fraction: fraction, frames: fanout.frames, mediaSeconds: mediaSeconds,
                renditions: renditions))
    }

    /// The YCbCr matrix a source's decoded pictures are in, as the decode's scaler keeps it for HDR
    /// rungs (`Scaler.Matrix.source`): its tagged one, else what `Scaler` takes an untagged one to be
    /// (`Scaler.untaggedMatrix`, the one guess), as `Scaler` reads any other.
    static func matrix(of parameters: UnsafePointer<AVCodecParameters>) -> AVColorSpace {
        let tagged = parameters.pointee.color_space
        let known = [
            AVCOL_SPC_BT709, AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M, AVCOL_SPC_SMPTE240M, AVCOL_SPC_FCC,
            AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL,
        ]
        if known.contains(tagged) { return tagged }
        switch Scaler.untaggedMatrix(width: Int(parameters.pointee.width), height: Int(parameters.pointee.height)) {
        case .bt709: return AVCOL_SPC_BT709
        case .bt601: return AVCOL_SPC_BT470BG
        }
    }

    /// HLS's VIDEO-RANGE for a stream tagged with `transfer`.
    static func videoRange(_ transfer: AVColorTransferCharacteristic) -> String {
        switch transfer {
        case AVCOL_TRC_SMPTE2084: "PQ"
        case AVCOL_TRC_ARIB_STD_B67: "HLG"
        default: "SDR"
        }
    }

    /// `avc1.PPCCLL` from the stream's SPS: profile_idc, the constraint flags and level_idc, read
    /// from an `avcC` record (its bytes 1-3) or from the first SPS NAL unit of Annex B extradata.
    static func avcCodecs(_ parameters: UnsafeMutablePointer<AVCodecParameters>) throws(MediaError) -> String {
        let size = Int(parameters.pointee.extradata_size)
        guard let data = parameters.pointee.extradata, size >= 4 else {
            throw MediaError(kind: .internalFailure, call: "codecs", message: "the H.264 stream has no parameter sets")
        }
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        var sps: ArraySlice<UInt8>?
        if bytes[0] == 1 {
            sps = bytes[1...3]
        } else {
            var index = 0
            while index + 6 < bytes.count {
                if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1, bytes[index + 3] & 0x1F == 7 {
                    sps = bytes[(index + 4)...(index + 6)]
                    break
                }
                index += 1
            }
        }
        guard let sps else {
            throw MediaError(kind: .internalFailure, call: "codecs", message: "no SPS in the H.264 parameter sets")
        }
        return "avc1." + sps.map { String(format: "%02x", $0) }.joined()
    }
}
