import CFFmpeg

/// What a receive call produced: a frame or packet, a request for more input, or the end.
enum ReceiveResult {
    case produced
    case needsMoreInput
    case endOfStream
}

/// Owns a decoding `AVCodecContext` (freed with `avcodec_free_context`) for one input stream.
final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let streamIndex: Int

    init(stream: UnsafeMutablePointer<AVStream>, index: Int, threads: Int = 0) throws(MediaError) {
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
        streamIndex = index
        try check(avcodec_parameters_to_context(context, parameters), "avcodec_parameters_to_context")
        context.pointee.pkt_timebase = stream.pointee.time_base
        if parameters.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            context.pointee.framerate = av_guess_frame_rate(nil, stream, nil)
            context.pointee.thread_count = Int32(threads)
            context.pointee.thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE
        }
        try check(
            avcodec_open2(context, codec, nil), "avcodec_open2", kind: .unsupportedCodec,
            context: "cannot open the \(name) decoder")
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&pointer)
    }

    /// Sends a packet (or `nil` to start draining). Corrupt packets are reported as `invalidData`
    /// so the caller can skip them instead of failing the whole file.
    func send(_ packet: Packet?) throws(MediaError) -> Bool {
        let code = avcodec_send_packet(context, packet?.pointer)
        if code == reel_averror(EAGAIN) || code == reel_averror_eof() { return true }
        if code == reel_averror_invaliddata() { return false }
        try check(code, "avcodec_send_packet", kind: .unreadableInput, context: "cannot decode the input")
        return true
    }

    /// Receives one decoded frame into `frame`.
    func receive(_ frame: Frame) throws(MediaError) -> ReceiveResult {
        let code = avcodec_receive_frame(context, frame.pointer)
        if code == reel_averror(EAGAIN) { return .needsMoreInput }
        if code == reel_averror_eof() { return .endOfStream }
        if code == reel_averror_invaliddata() { return .needsMoreInput }
        try check(code, "avcodec_receive_frame", kind: .unreadableInput, context: "cannot decode the input")
        return .produced
    }
}
