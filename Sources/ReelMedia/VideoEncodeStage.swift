internal import CFFmpeg
internal import CFFmpegShim

/// The encoding half of the video path, run on a transcode's writer thread: takes scaled frames,
/// encodes them (libx264 or libx265) and hands packets to the muxer.
final class VideoEncodeStage {
    private let encoder: Encoder
    /// Keeps the context `outputStream` points into alive.
    private let output: OutputFile
    private let outputStream: UnsafeMutablePointer<AVStream>
    private let packet: Packet

    /// Opens the encoder for `encoding` and adds its stream to `output` (before the header is
    /// written). `source` describes the source stream (its colours), `language` is its tag; frames
    /// come in `format`, with timestamps in `timeBase`.
    init(
        encoding: VideoEncoding, source: CodecParameters, language: String?, format: AVPixelFormat,
        timeBase: AVRational, frameRate: AVRational, threads: Int, output: OutputFile
    ) throws(MediaError) {
        self.output = output
        packet = try Packet()
        encoder = try Encoder(name: encoding.codec.encoderName)
        let context = encoder.context
        context.pointee.width = Int32(encoding.width)
        context.pointee.height = Int32(encoding.height)
        context.pointee.pix_fmt = format
        context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        // The source's time base, so variable frame rates keep their exact timestamps.
        context.pointee.time_base = timeBase
        context.pointee.framerate = frameRate
        // libx264 takes thread_count as its frame threads; libx265 (5.1) ignores it, so its pool is
        // sized through x265-params below.
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
        if output.wantsGlobalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        var options: [(String, String)] = [("preset", encoding.encoderPreset), ("crf", String(encoding.crf))]
        if let profile = encoding.profile { options.append(("profile", profile)) }
        // HDR10 metadata goes with the source's transfer only; SDR output carries none.
        let hdrMetadata = encoding.color == .keepSource ? encoding.hdrMetadata : nil
        if encoding.codec == .hevc {
            var parameters = "log-level=error"
            // One thread means no pool at all: with `pools=1` x265 still hands every row of CTUs
            // between its API, frame and pool threads, and on a machine with more runnable threads
            // than cores each hand-off waits for a time slice: a 15-frame 720p encode that needs
            // 2.6 s of CPU took 351 s with 40 busy threads on 2 cores (none: 51 s, its fair share;
            // unloaded, two such jobs side by side take the same time either way).
            if threads == 1 {
                parameters += ":pools=none:frame-threads=1"
            } else if threads > 1 {
                parameters += ":pools=\(threads)"
            }
            // libx265 in FFmpeg 5.1 does not turn frame side data into SEI: the metadata goes through
            // its own parameters.
            if let hdrMetadata { parameters += VideoEncodeStage.x265Parameters(hdrMetadata) }
            options.append(("x265-params", parameters))
        }
        try encoder.open(options: options)

        outputStream = try output.addStream()
        try check(
            avcodec_parameters_from_context(outputStream.pointee.codecpar, context), "avcodec_parameters_from_context")
        outputStream.pointee.time_base = context.pointee.time_base
        outputStream.pointee.avg_frame_rate = frameRate
        outputStream.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        if encoding.codec == .hevc {
            // Apple players accept HEVC in MP4/QuickTime only with the 'hvc1' sample entry.
            outputStream.pointee.codecpar.pointee.codec_tag = reel_mktag(0x68, 0x76, 0x63, 0x31)
        }
        if let language {
            try check(av_dict_set(&outputStream.pointee.metadata, "language", language, 0), "av_dict_set")
        }
        // The MP4 muxer writes `mdcv` and `clli` from the stream's side data.
        if let hdrMetadata { try VideoEncodeStage.addSideData(hdrMetadata, to: outputStream) }
    }

    /// Encodes one frame (whose pts is in the encoder's time base) and writes what comes out.
    func encode(_ frame: Frame, to sink: PacketSink) throws(MediaError) {
        try encoder.send(frame.pointer)
        try encoder.drain(into: packet, for: StreamTarget(outputStream), to: sink)
    }

    /// Flushes the encoder at the end of the input.
    func flush(to sink: PacketSink) throws(MediaError) {
        try encoder.send(nil)
        try encoder.drain(into: packet, for: StreamTarget(outputStream), to: sink)
    }
}
