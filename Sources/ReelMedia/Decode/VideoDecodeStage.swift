internal import CFFmpeg
internal import CFFmpegShim

/// The decoding half of the video path, run on a transcode's reader thread: decoder → scaler
/// (→ tone mapping) (→ mirror and rotation) into frames taken from a bounded pool, with timestamps
/// carried from the source (variable frame rate preserved) and an optional frame-rate cap. Ready
/// frames go to `emit`.
///
/// Tone mapping (HDR to SDR) runs after the scaler, on the picture at its output size: the scaler
/// writes 10-bit BT.2020 YCbCr, the `ToneMapper` turns it into 8-bit BT.709. SDR sources never take
/// that path.
final class VideoDecodeStage {
    let inputIndex: Int
    /// Keeps the context `inputStream` points into alive.
    private let input: InputFile
    private let inputStream: UnsafeMutablePointer<AVStream>
    private let decoder: Decoder
    private let encoding: VideoEncoding
    /// The frames' pixel format (8- or 10-bit 4:2:0).
    let outputFormat: AVPixelFormat
    private var scaler: Scaler?
    /// Flattens frames with transparency onto the background colour before they are scaled.
    private var flattener: AlphaFlattener?
    /// What the scaler writes when it does not write into the pool's frames: a picture still to be
    /// tone-mapped (10-bit) or oriented.
    private var scaled: Frame?
    /// Tone-mapped, not yet oriented (only when both happen).
    private var mapped: Frame?
    private let toneMapper: ToneMapper?
    /// Whether the pixels are mirrored or rotated.
    private let reorients: Bool
    private let decoded: Frame
    /// The source's time base, which the frames' timestamps keep.
    let timeBase: AVRational
    /// The output frame rate: the source's, capped by the preset.
    let frameRate: AVRational
    private let originPts: Int64
    private let endPts: Int64?
    /// Frames before this source time are decoded (as references) but not kept: start of a time range.
    private let dropBeforePts: Int64?
    private var lastPts: Int64 = Int64.min
    private var lastSourcePts: Int64 = Int64.min
    private var nextSlot: Double = -.infinity
    private let frameDuration: Int64
    /// Free frames of the output size; a frame comes back here once the encoder is done with it.
    private let pool: BoundedQueue<Frame>
    /// Receives each ready frame (its pts in `timeBase`); the frame is not touched again until it
    /// comes back through `pool`.
    private let emit: (Frame) throws(MediaError) -> Void
    private(set) var mediaSeconds = 0.0
    private(set) var finished = false
    /// Takes the export's poster from the frames on their way to the encoder, when asked.
    var poster: PosterGrab?

    /// Opens the decoder for stream `streamIndex` of `input` and fills `pool` with `poolSize` frames.
    init(
        input: InputFile, streamIndex: Int, encoding: VideoEncoding, window: TimeWindow, pool: BoundedQueue<Frame>,
        poolSize: Int, decoderThreads: Int, emit: @escaping (Frame) throws(MediaError) -> Void
    ) throws(MediaError) {
        self.input = input
        inputIndex = streamIndex
        inputStream = input.stream(streamIndex)
        self.encoding = encoding
        self.pool = pool
        self.emit = emit
        decoder = try Decoder(stream: inputStream, index: streamIndex, threads: decoderThreads)
        let timeBase = inputStream.pointee.time_base
        self.timeBase = timeBase
        let microseconds = reel_time_base_q()
        let origin = av_rescale_q(window.originMicroseconds, microseconds, timeBase)
        originPts = origin
        dropBeforePts = window.hasRangeStart ? origin : nil
        endPts = window.endMicroseconds.map { av_rescale_q($0, microseconds, timeBase) }
        decoded = try Frame()
        let format = encoding.tenBit ? AV_PIX_FMT_YUV420P10LE : AV_PIX_FMT_YUV420P
        outputFormat = format
        if case .toneMapped(let mapping) = encoding.color {
            guard !encoding.tenBit else {
                throw MediaError(
                    kind: .invalidArgument, call: "plan", message: "tone mapping to SDR makes 8-bit video, not 10-bit")
            }
            toneMapper = try ToneMapper(mapping)
        } else {
            toneMapper = nil
        }
        reorients = encoding.rotation != 0 || encoding.mirrored
        var rate = av_guess_frame_rate(input.context, inputStream, nil)
        if rate.num <= 0 || rate.den <= 0 { rate = AVRational(num: 30, den: 1) }
        if let cap = encoding.maxFrameRate, av_q2d(rate) > cap + 0.01 {
            rate = av_d2q(cap, 1001 * 1000)
        }
        frameRate = rate
        frameDuration = max(1, av_rescale_q(1, av_inv_q(rate), timeBase))
        for _ in 0..<poolSize {
            try pool.push(try Frame(width: Int32(encoding.width), height: Int32(encoding.height), format: format))
        }
        // Before a quarter turn, the picture has the output's height as its width.
        let turned = encoding.rotation == 90 || encoding.rotation == 270
        let width = Int32(turned ? encoding.height : encoding.width)
        let height = Int32(turned ? encoding.width : encoding.height)
        if toneMapper != nil {
            scaled = try Frame(width: width, height: height, format: ToneMapper.inputFormat)
            if reorients { mapped = try Frame(width: width, height: height, format: ToneMapper.outputFormat) }
        } else if reorients {
            scaled = try Frame(width: width, height: height, format: format)
        }
    }

    /// What the encoder needs to know of the source stream: its parameters (colours) and language.
    func describeSource() throws(MediaError) -> (parameters: CodecParameters, language: String?) {
        (try CodecParameters(copying: inputStream.pointee.codecpar), input.language(ofStream: inputIndex))
    }

    /// Decodes one packet and emits whatever frames it yields.
    func decode(_ packet: Packet) throws(MediaError) {
        // A corrupt packet is skipped, as ffmpeg does; a file with no decodable frame fails later.
        try decoder.feed(packet) { () throws(MediaError) in try drainDecoder() }
    }

    /// Drains the decoder at end of input.
    func flush() throws(MediaError) {
        if !finished {
            try decoder.feed(nil) { () throws(MediaError) in try drainDecoder() }
        }
        finished = true
    }

    private func drainDecoder() throws(MediaError) {
        while !finished {
            let result = try decoder.receive(decoded)
            guard result == .produced else { return }
            defer { decoded.unref() }
            try process(decoded.pointer)
        }
    }

    private func process(_ decodedFrame: UnsafeMutablePointer<AVFrame>) throws(MediaError) {
        var frame = decodedFrame
        if AlphaFlattener.hasAlpha(frame.pointee.format) {
            if flattener == nil { flattener = try AlphaFlattener(background: encoding.background) }
            frame = try flattener!.flatten(frame)
        }
        let pts =
            sane(frame.pointee.best_effort_timestamp)
            ?? (lastSourcePts == Int64.min ? originPts : lastSourcePts + frameDuration)
        lastSourcePts = pts
        if let endPts, pts >= endPts {
            finished = true
            return
        }
        // Frames before the start of a requested range are decoded (needed as references) but not kept.
        if let dropBeforePts, pts < dropBeforePts { return }
        // The frame's own duration (`FrameTiming`): its packet's (a GIF's delay), else one frame at
        // the nominal rate. The encode stage lets a frame last until the next one; this is what the
        // last one keeps.
        var own = FrameTiming.duration(own: sane(decodedFrame.pointee.pkt_duration) ?? 0, nominal: frameDuration)
        if let cap = encoding.maxFrameRate {
            let time = seconds(pts, timeBase)
            if time + 1e-6 < nextSlot { return }
            nextSlot = (floor(time * cap + 1e-6) + 1) / cap
            // A kept frame stands for the frames its slot drops after it.
            let slotEnd = Int64((nextSlot * Double(timeBase.den) / Double(timeBase.num)).rounded())
            own = max(own, slotEnd - pts)
        }
        // A range's end cuts the last frame short.
        if let endPts { own = max(1, min(own, endPts - pts)) }
        var outputPts = pts - originPts
        if lastPts != Int64.min, outputPts <= lastPts { outputPts = lastPts + 1 }
        if lastPts == Int64.min, outputPts < 0 { outputPts = 0 }
        lastPts = outputPts

        if scaler == nil || !scaler!.accepts(frame) {
            let (width, height) =
                scaled.map { ($0.pointer.pointee.width, $0.pointer.pointee.height) }
                ?? (Int32(encoding.width), Int32(encoding.height))
            let matrix: Scaler.Matrix
            switch encoding.color {
            case .bt709: matrix = .bt709
            case .keepSource: matrix = .source
            case .toneMapped: matrix = .bt2020
            }
            // One slice thread: the reader thread scales while x264's frame threads and the decoder's
            // use the other cores, so slice threads only add hand-offs (1080p→720p on 2 cores: 6% less
            // wall time than sws's automatic count).
            scaler = try Scaler(
                from: frame, toWidth: width, height: height,
                format: toneMapper != nil ? ToneMapper.inputFormat : outputFormat, matrix: matrix, threads: 1)
        }
        // A free frame from the pool; waits while the encoder holds them all (back-pressure).
        guard let target = try pool.pop() else {
            throw MediaError(kind: .internalFailure, call: "pipeline", message: "the frame pool was closed")
        }
        try target.makeWritable()
        if let scaled {
            try scaled.makeWritable()
            try scaler!.scale(frame, into: scaled.pointer)
            var oriented = scaled
            if let toneMapper {
                let destination = mapped ?? target
                try destination.makeWritable()
                try toneMapper.map(scaled.pointer, into: destination.pointer)
                oriented = destination
            }
            if reorients {
                try Rotator.rotate(
                    oriented.pointer, into: target.pointer, degrees: encoding.rotation, mirrored: encoding.mirrored)
            }
        } else {
            try scaler!.scale(frame, into: target.pointer)
        }
        target.pointer.pointee.pts = outputPts
        target.pointer.pointee.pkt_duration = own
        target.pointer.pointee.pict_type = AV_PICTURE_TYPE_NONE
        target.pointer.pointee.sample_aspect_ratio = encoding.avPixelAspect
        mediaSeconds = seconds(outputPts, timeBase)
        try poster?.offer(target.pointer, at: mediaSeconds)
        try emit(target)
    }
}
