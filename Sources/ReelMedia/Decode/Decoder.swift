internal import CFFmpeg
internal import CFFmpegShim

/// What a receive call produced: a frame or packet, a request for more input, or the end.
enum ReceiveResult {
    case produced
    case needsMoreInput
    case endOfStream
}

/// Owns a decoding `AVCodecContext` (freed with `avcodec_free_context`) for one input stream
/// (`index` names it in errors).
final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>

    /// `strict` makes the decoder fail on damage it would otherwise conceal (`AV_EF_EXPLODE`) and skip
    /// the deblocking filter (which cannot fail, and is a quarter of H.264's decoding time): for
    /// checking a file rather than looking at it.
    init(stream: UnsafeMutablePointer<AVStream>, index: Int, threads: Int = 0, strict: Bool = false) throws(MediaError)
    {
        let parameters = stream.pointee.codecpar!
        let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            throw MediaError(
                kind: .unsupportedCodec, call: "avcodec_find_decoder",
                message: "no decoder for \(name) (stream \(index))")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(kind: .internalFailure, call: "avcodec_alloc_context3", message: "out of memory")
        }
        self.context = context
        try check(avcodec_parameters_to_context(context, parameters), "avcodec_parameters_to_context")
        context.pointee.pkt_timebase = stream.pointee.time_base
        if parameters.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            context.pointee.framerate = av_guess_frame_rate(nil, stream, nil)
            context.pointee.thread_count = Int32(threads)
            context.pointee.thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE
        }
        if strict {
            context.pointee.err_recognition |= AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_EXPLODE
            context.pointee.skip_loop_filter = AVDISCARD_ALL
        }
        try check(
            avcodec_open2(context, codec, nil), "avcodec_open2", kind: .unsupportedCodec,
            context: "cannot open the \(name) decoder")
    }

    /// A single-purpose video decoder for packets an encoder of this process made (`EncodeScorer`):
    /// `parameters` are the opened encoder's (its extradata), `timeBase` its packets' clock.
    init(parameters: CodecParameters, timeBase: AVRational, threads: Int) throws(MediaError) {
        let name = String(cString: avcodec_get_name(parameters.pointer.pointee.codec_id))
        guard let codec = avcodec_find_decoder(parameters.pointer.pointee.codec_id) else {
            throw MediaError(kind: .unsupportedCodec, call: "avcodec_find_decoder", message: "no decoder for \(name)")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(kind: .internalFailure, call: "avcodec_alloc_context3", message: "out of memory")
        }
        self.context = context
        try check(avcodec_parameters_to_context(context, parameters.pointer), "avcodec_parameters_to_context")
        context.pointee.pkt_timebase = timeBase
        context.pointee.thread_count = Int32(threads)
        try check(
            avcodec_open2(context, codec, nil), "avcodec_open2", kind: .unsupportedCodec,
            context: "cannot open the \(name) decoder")
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&pointer)
    }

    /// What sending a packet did.
    enum SendResult {
        /// Taken (or, at end of stream, nothing more to take).
        case accepted
        /// The decoder is full: receive its frames, then send the same packet again.
        case full
        /// The packet is corrupt and was skipped, as ffmpeg does.
        case skipped
    }

    /// Packets refused in a row; past `maxRefusedInARow` the stream is taken as undecodable.
    private var refusedInARow = 0
    private let maxRefusedInARow = 200

    /// Sends a packet (or `nil` to start draining).
    func send(_ packet: Packet?) throws(MediaError) -> SendResult {
        let code = avcodec_send_packet(context, packet?.pointer)
        if code == reel_averror(EAGAIN) { return .full }
        if code == reel_averror_eof() { return .accepted }
        if code >= 0 {
            refusedInARow = 0
            return .accepted
        }
        // Like ffmpeg, a damaged packet costs a frame, not the export; running out of memory, an
        // interrupt, or a stream that refuses everything is a failure.
        if code != reel_averror(ENOMEM), code != reel_averror_exit(), packet != nil, refusedInARow < maxRefusedInARow {
            refusedInARow += 1
            return .skipped
        }
        try check(code, "avcodec_send_packet", kind: .unreadableInput, context: "cannot decode the input")
        return .accepted
    }

    /// Sends a packet, draining frames through `drain` whenever the decoder is full. A decoder that
    /// stays full (its stage stopped taking frames at the end of a time range) drops the packet.
    func feed(_ packet: Packet?, drain: () throws(MediaError) -> Void) throws(MediaError) {
        for _ in 0..<64 {
            switch try send(packet) {
            case .accepted:
                try drain()
                return
            case .skipped: return
            case .full: try drain()
            }
        }
    }

    /// Receives one decoded frame into `frame`. A corrupt frame is skipped (up to a limit in a row,
    /// so a broken decoder cannot loop forever).
    func receive(_ frame: Frame) throws(MediaError) -> ReceiveResult {
        var code = avcodec_receive_frame(context, frame.pointer)
        var corrupt = 0
        while code == reel_averror_invaliddata() && corrupt < 100 {
            corrupt += 1
            code = avcodec_receive_frame(context, frame.pointer)
        }
        if code == reel_averror(EAGAIN) { return .needsMoreInput }
        if code == reel_averror_eof() { return .endOfStream }
        try check(code, "avcodec_receive_frame", kind: .unreadableInput, context: "cannot decode the input")
        return .produced
    }
}
