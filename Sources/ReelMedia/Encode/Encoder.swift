internal import CFFmpeg
internal import CFFmpegShim

/// Receives encoded packets, ready for the muxer (stream index and time base already set).
typealias PacketSink = (Packet) throws(MediaError) -> Void

/// Owns an encoding `AVCodecContext` (freed with `avcodec_free_context`).
final class Encoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let codec: UnsafePointer<AVCodec>

    /// Allocates a context for the named encoder (`libx264`, `libx265`, `aac`). Configure `context`,
    /// then call `open(options:)`.
    init(name: String) throws(MediaError) {
        FFmpegLog.installIfNeeded()
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw MediaError(
                kind: .unsupportedCodec, call: "avcodec_find_encoder_by_name",
                message: "the \(name) encoder is not available in this FFmpeg build")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(kind: .internalFailure, call: "avcodec_alloc_context3", message: "out of memory")
        }
        self.codec = codec
        self.context = context
    }

    deinit {
        // SVT-AV1 1.4 never returns from closing (nor from flushing) an encoder that has had no
        // picture: its deinit waits for a packet that never comes. One blank picture, not flushed
        // (its deinit then sends the end of stream itself and returns), lets it go: an export that
        // fails or is cancelled before its first frame must not hang its thread.
        if needsAPicture { sendBlankPicture() }
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&pointer)
    }

    /// Frames sent so far.
    private var framesSent = 0
    private var isOpen = false
    /// An open libsvtav1 encoder that has had no frame (see `deinit`).
    private var needsAPicture: Bool {
        isOpen && framesSent == 0 && String(cString: codec.pointee.name) == "libsvtav1"
    }

    /// Sends one black picture of the context's size and format, nothing else.
    private func sendBlankPicture() {
        guard let frame = av_frame_alloc() else { return }
        defer {
            var pointer: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&pointer)
        }
        frame.pointee.width = context.pointee.width
        frame.pointee.height = context.pointee.height
        frame.pointee.format = context.pointee.pix_fmt.rawValue
        frame.pointee.pts = 0
        guard av_frame_get_buffer(frame, 0) >= 0 else { return }
        let height = Int(frame.pointee.height)
        let planes = [
            (frame.pointee.data.0, frame.pointee.linesize.0, height),
            (frame.pointee.data.1, frame.pointee.linesize.1, (height + 1) / 2),
            (frame.pointee.data.2, frame.pointee.linesize.2, (height + 1) / 2),
        ]
        for (data, stride, rows) in planes {
            data?.initialize(repeating: 0, count: Int(stride) * rows)
        }
        _ = avcodec_send_frame(context, frame)
    }

    /// Opens the encoder with private options; an option the encoder did not recognise is an error.
    func open(options: [(String, String)]) throws(MediaError) {
        let dictionary = try OptionDictionary(options)
        let name = String(cString: codec.pointee.name)
        try check(
            avcodec_open2(context, codec, &dictionary.pointer), "avcodec_open2", kind: .invalidArgument,
            context: "cannot open the \(name) encoder")
        isOpen = true
        let leftover = dictionary.leftoverKeys
        if !leftover.isEmpty {
            throw MediaError(
                kind: .invalidArgument, call: "avcodec_open2",
                message: "the \(name) encoder did not recognise: \(leftover.joined(separator: ", "))")
        }
    }

    /// Whether `nil` was sent: the encoder is draining what it holds.
    private(set) var isFlushed = false

    /// Sends a frame (or `nil` to flush).
    func send(_ frame: UnsafeMutablePointer<AVFrame>?) throws(MediaError) {
        if frame == nil {
            isFlushed = true
            // SVT-AV1 would wait forever for the packets of a stream without pictures (`deinit`).
            if needsAPicture { return }
        } else {
            framesSent += 1
        }
        let code = avcodec_send_frame(context, frame)
        if code == reel_averror_eof() { return }
        try check(code, "avcodec_send_frame", kind: .internalFailure, context: "the encoder refused a frame")
    }

    /// Receives every packet the encoder has ready into `packet`, stamps it for `target` (stream
    /// index and time base) and hands it to `sink` (the muxer takes its data and leaves it blank).
    func drain(into packet: Packet, for target: StreamTarget, to sink: PacketSink) throws(MediaError) {
        while try receive(packet) == .produced {
            packet.pointer.pointee.stream_index = target.index
            av_packet_rescale_ts(packet.pointer, context.pointee.time_base, target.timeBase)
            try sink(packet)
        }
    }

    /// Receives one encoded packet.
    func receive(_ packet: Packet) throws(MediaError) -> ReceiveResult {
        let code = avcodec_receive_packet(context, packet.pointer)
        if code == reel_averror(EAGAIN) { return .needsMoreInput }
        if code == reel_averror_eof() { return .endOfStream }
        try check(code, "avcodec_receive_packet", kind: .internalFailure, context: "the encoder failed")
        return .produced
    }
}
