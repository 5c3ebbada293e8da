internal import CFFmpeg
internal import CFFmpegShim

/// The encoding half of the video path, run on a transcode's writer thread: takes scaled frames,
/// encodes them (libx264, libx265 or libsvtav1) and hands packets to the muxer.
final class VideoEncodeStage {
    private let encoder: Encoder
    /// Keeps the context `outputStream` points into alive.
    private let output: OutputFile
    private let outputStream: UnsafeMutablePointer<AVStream>
    private let packet: Packet
    /// Packets out of the encoder, in decode order, waiting for their decode times (`release`), their
    /// timestamps and durations already on the stream's clock.
    private var pending: [Packet] = []
    /// Carriers of written packets, for reuse.
    private var spare: [Packet] = []
    /// One frame at the nominal rate, in the encoder's time base.
    private let nominal: Int64
    /// How long each frame sent and not yet out of the encoder is shown (`FrameTiming`), by pts.
    private var shown: [Int64: Int64] = [:]
    private var lastSentPts: Int64?
    /// The first frame's time and where the last one sent ends, in the encoder's time base: the
    /// span the stream must cover.
    private var firstFramePts: Int64?
    private var framesEnd: Int64?
    /// The decode times given so far, on the stream's clock: the first and the latest.
    private var firstDts: Int64?
    private var lastDts: Int64?
    private let decodeTimes: DecodeTimes
    /// `.shown`: the decode time the next packet gets, before clamping to its pts.
    private var nextShownDts: Int64?

    /// How packets get their decode times (`release`).
    enum DecodeTimes {
        /// The latest decode time each packet can have: presentation starts at 0 with no edit
        /// list, and the MP4 muxer's sample durations add up to the frames' span (single MP4
        /// exports).
        case latest
        /// Each packet's decode time is the previous one's plus how long the previous packet's
        /// frame is shown, starting the encoder's reorder delay (`has_b_frames` frames) before the
        /// first frame: every sample's duration in a CMAF `trun` is its own frame's, so the last
        /// frame shown ends where the stream does (Chromium's MSE ends the buffered range at the
        /// highest pts plus that frame's sample duration; with `.latest` a P frame followed in
        /// decode order by B frames lasts one tick). At a constant rate this is x264's own
        /// `dts = pts - delay`. The track needs an edit list for presentation to start at 0.
        case shown
    }

    /// Packets a decode time waits for: more than x264's and x265's deepest reordering (16 B-frames).
    static let reorderWindow = 24

    init(
        encoding: VideoEncoding, source: CodecParameters, language: String?, format: AVPixelFormat,
        timeBase: AVRational, frameRate: AVRational, threads: Int, output: OutputFile,
        decodeTimes: DecodeTimes = .latest
    ) throws(MediaError) {
        self.output = output
        self.decodeTimes = decodeTimes
        packet = try Packet()
        nominal = FrameTiming.nominal(rate: frameRate, timeBase: timeBase)
        encoder = try VideoEncodeStage.openEncoder(
            encoding: encoding, source: source, format: format, timeBase: timeBase, frameRate: frameRate,
            threads: threads, globalHeader: output.wantsGlobalHeader)
        let context = encoder.context
        // HDR10 metadata goes with the source's transfer only; SDR output carries none.
        let hdrMetadata = encoding.color == .keepSource ? encoding.hdrMetadata : nil

        outputStream = try output.addStream()
        try check(
            avcodec_parameters_from_context(outputStream.pointee.codecpar, context), "avcodec_parameters_from_context")
        outputStream.pointee.time_base = context.pointee.time_base
        outputStream.pointee.avg_frame_rate = frameRate
        outputStream.pointee.sample_aspect_ratio = encoding.avPixelAspect
        output.declare(stream: outputStream.pointee.index, kind: .video, copied: false)
        if encoding.codec == .hevc {
            // Apple players accept HEVC in MP4/QuickTime only with the 'hvc1' sample entry.
            outputStream.pointee.codecpar.pointee.codec_tag = reel_mktag(0x68, 0x76, 0x63, 0x31)
        }
        // AV1's one sample entry, `av01` (with `av1C` from the encoder's sequence header), is the
        // muxer's own choice: no tag to set.
        if let language {
            try check(av_dict_set(&outputStream.pointee.metadata, "language", language, 0), "av_dict_set")
        }
        // The MP4 muxer writes `mdcv` and `clli` from the stream's side data.
        if let hdrMetadata { try VideoEncodeStage.addSideData(hdrMetadata, to: outputStream) }
    }

    /// The opened encoder's parameters (its extradata) and its packets' clock: what a decoder of
    /// its packets needs (`EncodeScorer`).
    func encodedStream() throws(MediaError) -> (parameters: CodecParameters, timeBase: AVRational) {
        (try CodecParameters(of: encoder.context), encoder.context.pointee.time_base)
    }

    /// Opens the encoder `encoding` asks for, for frames of `format` on `timeBase`: the export's
    /// own (`init`) and a quality search's sample encodes (`QualitySearch`), configured alike.
    /// `source`: the source stream's parameters (its colours, kept by `.keepSource`).
    static func openEncoder(
        encoding: VideoEncoding, source: CodecParameters, format: AVPixelFormat, timeBase: AVRational,
        frameRate: AVRational, threads: Int, globalHeader: Bool
    ) throws(MediaError) -> Encoder {
        let encoder = try Encoder(name: encoding.codec.encoderName)
        let context = encoder.context
        context.pointee.width = Int32(encoding.width)
        context.pointee.height = Int32(encoding.height)
        context.pointee.pix_fmt = format
        // x264 and x265 write it into the VUI; the MP4 muxer into `pasp`.
        context.pointee.sample_aspect_ratio = encoding.avPixelAspect
        // The source's time base, so variable frame rates keep their exact timestamps.
        context.pointee.time_base = timeBase
        context.pointee.framerate = frameRate
        // libx264 takes thread_count as its frame threads; libx265 (5.1) ignores it, so its pool is
        // sized through x265-params below (`StageThreads`).
        context.pointee.thread_count = Int32(threads)
        // libx264 and libx265 take gop_size as keyint (their minimum stays automatic).
        if let interval = encoding.keyframeInterval { context.pointee.gop_size = Int32(interval) }
        if let maxBitrate = encoding.maxBitrate, let bufferSize = encoding.bufferSize {
            context.pointee.rc_max_rate = Int64(maxBitrate)
            context.pointee.rc_buffer_size = Int32(clamping: bufferSize)
        }
        let parameters = source.pointer.pointee
        switch encoding.color {
        case .bt709, .toneMapped:
            context.pointee.color_primaries = AVCOL_PRI_BT709
            context.pointee.color_trc = AVCOL_TRC_BT709
            context.pointee.colorspace = AVCOL_SPC_BT709
            context.pointee.color_range = AVCOL_RANGE_MPEG
        case .keepSource:
            context.pointee.color_primaries = parameters.color_primaries
            context.pointee.color_trc = parameters.color_trc
            context.pointee.colorspace = parameters.color_space
            context.pointee.color_range = AVCOL_RANGE_MPEG
        }
        if globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        // HDR10 metadata goes with the source's transfer only; SDR output carries none.
        let hdrMetadata = encoding.color == .keepSource ? encoding.hdrMetadata : nil
        var options: [(String, String)]
        if encoding.codec == .av1 {
            options = VideoEncodeStage.svtOptions(encoding, threads: threads, hdrMetadata: hdrMetadata)
        } else {
            options = [("preset", encoding.encoderPreset), ("crf", String(encoding.crf))]
        }
        // SVT-AV1 chooses Main itself for 4:2:0 at 8 and 10 bits, the only profile AV1 presets name.
        if let profile = encoding.profile, encoding.codec != .av1 { options.append(("profile", profile)) }
        if encoding.alignedKeyframes, encoding.codec != .av1 {
            // A forced I frame as an IDR (not a recovery-point I frame, nor x265's open-GOP CRA), and
            // no scene-cut keyframes of the encoder's own: segments cut at the forced ones start
            // alike in every rung.
            options.append(("forced-idr", "1"))
            if encoding.codec == .h264 { options.append(("x264-params", "scenecut=0")) }
        }
        if encoding.codec == .hevc {
            var parameters = "log-level=error"
            if encoding.alignedKeyframes { parameters += ":scenecut=0:open-gop=0" }
            // Its pool and frame threads as the core budget says (`StageThreads.x265Parameters`).
            let threading = StageThreads(share: threads).x265
            if !threading.isEmpty { parameters += ":" + threading }
            // libx265 in FFmpeg 5.1 does not turn frame side data into SEI: the metadata goes through
            // its own parameters.
            if let hdrMetadata { parameters += VideoEncodeStage.x265Parameters(hdrMetadata) }
            options.append(("x265-params", parameters))
        }
        try encoder.open(options: options)
        return encoder
    }

    /// Encodes one frame (whose pts and own duration, `pkt_duration`, are in the encoder's time
    /// base) and writes what comes out.
    func encode(_ frame: Frame, to sink: PacketSink) throws(MediaError) {
        let pts = frame.pointer.pointee.pts
        // Frames come in presentation order: each is shown until the next, the last its own duration.
        if let lastSentPts { shown[lastSentPts] = pts - lastSentPts }
        let own = FrameTiming.duration(own: frame.pointer.pointee.pkt_duration, nominal: nominal)
        shown[pts] = own
        lastSentPts = pts
        firstFramePts = firstFramePts ?? pts
        framesEnd = pts + own
        try encoder.send(frame.pointer)
        try drain(to: sink)
    }

    /// Flushes the encoder at the end of the input and writes what it held back.
    func flush(to sink: PacketSink) throws(MediaError) {
        try encoder.send(nil)
        try drain(to: sink)
        while !pending.isEmpty { try release(to: sink) }
    }

    /// Receives every packet the encoder has ready, stamped with how long its frame is shown, and
    /// writes those whose decode time can be given.
    private func drain(to sink: PacketSink) throws(MediaError) {
        while try encoder.receive(packet) == .produced {
            packet.pointer.pointee.duration = shown.removeValue(forKey: packet.pointer.pointee.pts) ?? nominal
            let carrier: Packet
            if let reused = spare.popLast() { carrier = reused } else { carrier = try Packet() }
            av_packet_move_ref(carrier.pointer, packet.pointer)
            // Decode times are given on the stream's clock (see `release`).
            av_packet_rescale_ts(carrier.pointer, encoder.context.pointee.time_base, streamTimeBase)
            pending.append(carrier)
            if pending.count > Self.reorderWindow { try release(to: sink) }
        }
    }

    /// The output stream's time base, fixed once the header is written (the MP4 and QuickTime
    /// muxers count at least 10,000 ticks a second): pending packets' timestamps and durations are
    /// in it.
    private var streamTimeBase: AVRational { outputStream.pointee.time_base }

    /// `value`, a time or duration in the encoder's time base, on the stream's clock.
    private func onStreamClock(_ value: Int64) -> Int64 {
        av_rescale_q(value, encoder.context.pointee.time_base, streamTimeBase)
    }

    /// Gives the oldest pending packet its decode time (`DecodeTimes`) and writes it.
    ///
    /// Every rule below keeps decode times strictly increasing, one tick at least apart, and none
    /// after its own pts or, less one tick per packet in between, a later packet's within the
    /// window. That needs room: in the encoder's time base a coarse source (1/10, 125/2997, 1/30)
    /// has one tick a frame, so a run of P frames used the reorder delay up one tick at a time and
    /// the next B frames had none left (`pts < dts`, the muxer refused the stream). On the
    /// stream's clock a frame is hundreds of ticks, and a decode time that has to wait one tick a
    /// packet for `reorderWindow` packets can never overtake its pts: packets further on in
    /// decode order are at least `reorderWindow` minus the reorder depth frames later.
    ///
    /// `.latest`: the decode time is the latest one possible: no later than its own pts or, less one tick per
    /// packet in between, any later packet's. x264 shifts B-frame decode times back by the first
    /// frames' gaps instead, which with uneven frames (a GIF's delays) leaves the decode times far
    /// behind the frames; and FFmpeg's MP4 muxer (5.1) stores the samples' durations as decode-time
    /// gaps plus the last packet's duration, so a stream's frames would outlast its samples.
    private func release(to sink: PacketSink) throws(MediaError) {
        let next = pending.removeFirst()
        var dts = next.pointer.pointee.pts
        switch decodeTimes {
        case .latest:
            for (offset, later) in pending.enumerated() {
                dts = min(dts, later.pointer.pointee.pts - Int64(offset + 1))
            }
        case .shown:
            // The first packet is the first frame (an IDR, not reordered): its decode time is the
            // reorder delay before it. A variable rate may bring a packet's turn past its own pts.
            var shownDts: Int64
            if let nextShownDts {
                shownDts = nextShownDts
            } else {
                // The delay the encoder declares, or more when the packets waiting need more: each
                // must be decoded no later than it is shown. libx265 (FFmpeg 5.1) leaves
                // has_b_frames at 0 although it reorders, which gave a B frame a decode time past
                // its pts and the muxer refused the stream.
                let first = firstFramePts.map(onStreamClock) ?? dts
                shownDts = first - Int64(max(0, encoder.context.pointee.has_b_frames)) * onStreamClock(nominal)
                var elapsed: Int64 = 0
                for packet in [next] + pending {
                    shownDts = min(shownDts, packet.pointer.pointee.pts - elapsed)
                    elapsed += max(1, packet.pointer.pointee.duration)
                }
            }
            dts = min(dts, shownDts)
            nextShownDts = shownDts + max(1, next.pointer.pointee.duration)
            // Never later than `.latest` would give: then the one-tick steps below cannot run into a
            // later packet's pts either (a variable rate that outran the shown durations, a reorder
            // deeper than the first window showed).
            for (offset, later) in pending.enumerated() {
                dts = min(dts, later.pointer.pointee.pts - Int64(offset + 1))
            }
        }
        if let lastDts, dts <= lastDts { dts = lastDts + 1 }
        next.pointer.pointee.dts = dts
        firstDts = firstDts ?? dts
        lastDts = dts
        if pending.isEmpty, encoder.isFlushed, let firstFramePts, let framesEnd, let firstDts {
            // The last packet: its samples' durations must add up to the frames' span, and the
            // muxer's track length (latest pts plus duration) must reach the last frame's end.
            let needed = (onStreamClock(framesEnd) - onStreamClock(firstFramePts)) - (dts - firstDts)
            next.pointer.pointee.duration = max(next.pointer.pointee.duration, needed, 0)
        }
        next.pointer.pointee.stream_index = outputStream.pointee.index
        try sink(next)
        // The muxer took the data; whatever is left is dropped before the carrier is reused.
        next.unref()
        spare.append(next)
    }
}
