import CFFmpeg

/// Receives encoded packets, ready for the muxer (stream index and time base already set).
typealias PacketSink = (Packet) throws(MediaError) -> Void

/// The video half of a transcode: decoder → scaler (→ rotation) → encoder, with timestamps carried
/// from the source (variable frame rate preserved) and an optional frame-rate cap.
final class VideoLane {
    let inputIndex: Int
    private let inputStream: UnsafeMutablePointer<AVStream>
    private let decoder: Decoder
    private let encoder: Encoder
    private let outputStream: UnsafeMutablePointer<AVStream>
    private let encoding: VideoEncoding
    private let outputFormat: AVPixelFormat
    private var scaler: Scaler?
    /// Scaled, not yet rotated (only when rotating).
    private var scaled: Frame?
    private let encodeFrame: Frame
    private let decoded: Frame
    private let encodedPacket: Packet
    private let timeBase: AVRational
    private let originPts: Int64
    private let endPts: Int64?
    /// Frames before this source time are decoded (as references) but not kept: start of a time range.
    private let dropBeforePts: Int64?
    private var lastPts: Int64 = Int64.min
    private var lastSourcePts: Int64 = Int64.min
    private var nextSlot: Double = -.infinity
    private var frameDuration: Int64
    private(set) var framesEncoded = 0
    private(set) var mediaSeconds = 0.0
    private(set) var finished = false

    init(
        input: InputFile, streamIndex: Int, encoding: VideoEncoding, output: OutputFile,
        originMicroseconds: Int64, endMicroseconds: Int64?, hasRangeStart: Bool
    ) throws(MediaError) {
        inputIndex = streamIndex
        inputStream = input.stream(streamIndex)
        self.encoding = encoding
        decoder = try Decoder(stream: inputStream, index: streamIndex)
        let timeBase = inputStream.pointee.time_base
        self.timeBase = timeBase
        let microseconds = reel_time_base_q()
        let origin = av_rescale_q(originMicroseconds, microseconds, timeBase)
        originPts = origin
        dropBeforePts = hasRangeStart ? origin : nil
        endPts = endMicroseconds.map { av_rescale_q($0, microseconds, timeBase) }
        decoded = try Frame()
        encodedPacket = try Packet()

        outputFormat = encoding.tenBit ? AV_PIX_FMT_YUV420P10LE : AV_PIX_FMT_YUV420P
        encoder = try Encoder(name: encoding.codec.encoderName)
        let context = encoder.context
        context.pointee.width = Int32(encoding.width)
        context.pointee.height = Int32(encoding.height)
        context.pointee.pix_fmt = outputFormat
        context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        context.pointee.time_base = timeBase
        var rate = av_guess_frame_rate(input.context, inputStream, nil)
        if rate.num <= 0 || rate.den <= 0 { rate = AVRational(num: 30, den: 1) }
        if let cap = encoding.maxFrameRate, av_q2d(rate) > cap + 0.01 {
            rate = av_d2q(cap, 1001 * 1000)
        }
        context.pointee.framerate = rate
        let ticks = av_rescale_q(1, av_inv_q(rate), timeBase)
        frameDuration = max(1, ticks)
        context.pointee.thread_count = 0
        if let maxBitrate = encoding.maxBitrate, let bufferSize = encoding.bufferSize {
            context.pointee.rc_max_rate = Int64(maxBitrate)
            context.pointee.rc_buffer_size = Int32(clamping: bufferSize)
        }
        let parameters = inputStream.pointee.codecpar.pointee
        switch encoding.color {
        case .bt709:
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
        if encoding.codec == .hevc { options.append(("x265-params", "log-level=error")) }
        try encoder.open(options: options)

        outputStream = try output.addStream()
        try check(
            avcodec_parameters_from_context(outputStream.pointee.codecpar, context), "avcodec_parameters_from_context")
        outputStream.pointee.time_base = context.pointee.time_base
        outputStream.pointee.avg_frame_rate = rate
        outputStream.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        if encoding.codec == .hevc {
            // Apple players accept HEVC in MP4/QuickTime only with the 'hvc1' sample entry.
            outputStream.pointee.codecpar.pointee.codec_tag = reel_mktag(0x68, 0x76, 0x63, 0x31)
        }
        if let language = readDictionary(inputStream.pointee.metadata)["language"] {
            av_dict_set(&outputStream.pointee.metadata, "language", language, 0)
        }
        encodeFrame = try Frame(width: Int32(encoding.width), height: Int32(encoding.height), format: outputFormat)
        if encoding.rotation == 90 || encoding.rotation == 270 {
            scaled = try Frame(width: Int32(encoding.height), height: Int32(encoding.width), format: outputFormat)
        } else if encoding.rotation == 180 {
            scaled = try Frame(width: Int32(encoding.width), height: Int32(encoding.height), format: outputFormat)
        }
    }

    /// Called once the header is written: the muxer may have changed the stream's time base.
    func outputStreamReady() {}

    /// Decodes one packet and encodes whatever frames it yields.
    func decode(_ packet: Packet, to sink: PacketSink) throws(MediaError) {
        // A corrupt packet is skipped, as ffmpeg does; a file with no decodable frame fails later.
        try decoder.feed(packet) { () throws(MediaError) in try drainDecoder(to: sink) }
    }

    /// Drains the decoder and the encoder at end of input.
    func flush(to sink: PacketSink) throws(MediaError) {
        if !finished {
            try decoder.feed(nil) { () throws(MediaError) in try drainDecoder(to: sink) }
        }
        finished = true
        try encoder.send(nil)
        try drainEncoder(to: sink)
    }

    private func drainDecoder(to sink: PacketSink) throws(MediaError) {
        while !finished {
            let result = try decoder.receive(decoded)
            guard result == .produced else { return }
            defer { decoded.unref() }
            try process(decoded.pointer, to: sink)
        }
    }

    private func process(_ frame: UnsafeMutablePointer<AVFrame>, to sink: PacketSink) throws(MediaError) {
        let pts = sane(frame.pointee.best_effort_timestamp)
            ?? (lastSourcePts == Int64.min ? originPts : lastSourcePts + frameDuration)
        lastSourcePts = pts
        if let endPts, pts >= endPts {
            finished = true
            return
        }
        // Frames before the start of a requested range are decoded (needed as references) but not kept.
        if let dropBeforePts, pts < dropBeforePts { return }
        if let cap = encoding.maxFrameRate {
            let time = seconds(pts, timeBase)
            if time + 1e-6 < nextSlot { return }
            nextSlot = (floor(time * cap + 1e-6) + 1) / cap
        }
        var outputPts = pts - originPts
        if lastPts != Int64.min, outputPts <= lastPts { outputPts = lastPts + 1 }
        if lastPts == Int64.min, outputPts < 0 { outputPts = 0 }
        lastPts = outputPts

        if scaler == nil || !scaler!.accepts(frame) {
            let (width, height) = scaled.map { ($0.pointer.pointee.width, $0.pointer.pointee.height) }
                ?? (Int32(encoding.width), Int32(encoding.height))
            scaler = try Scaler(
                from: frame, toWidth: width, height: height, format: outputFormat,
                keepColorSpace: encoding.color == .keepSource)
        }
        try encodeFrame.makeWritable()
        if let scaled {
            try scaled.makeWritable()
            try scaler!.scale(frame, into: scaled.pointer)
            Rotator.rotate(scaled.pointer, into: encodeFrame.pointer, degrees: encoding.rotation)
        } else {
            try scaler!.scale(frame, into: encodeFrame.pointer)
        }
        let target = encodeFrame.pointer
        target.pointee.pts = outputPts
        target.pointee.pict_type = AV_PICTURE_TYPE_NONE
        target.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        try encoder.send(target)
        framesEncoded += 1
        mediaSeconds = seconds(outputPts, timeBase)
        try drainEncoder(to: sink)
    }

    private func drainEncoder(to sink: PacketSink) throws(MediaError) {
        while true {
            let result = try encoder.receive(encodedPacket)
            guard result == .produced else { return }
            encodedPacket.pointer.pointee.stream_index = outputStream.pointee.index
            av_packet_rescale_ts(encodedPacket.pointer, encoder.context.pointee.time_base, outputStream.pointee.time_base)
            // The muxer takes the packet's data and leaves it blank.
            try sink(encodedPacket)
        }
    }
}
