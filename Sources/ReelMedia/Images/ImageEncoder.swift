internal import CFFmpeg
internal import CFFmpegShim

/// A still-image file format Reel writes thumbnails and posters in.
public enum ImageFormat: String, Sendable, Codable, CaseIterable {
    case jpeg, png, webp

    /// The file name extension (`jpg`, `png`, `webp`).
    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    /// The format a file name's extension names (`jpg`, `jpeg`, `png`, `webp`, any case), or nil.
    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        default: return nil
        }
    }

    /// The libavcodec encoder that writes this format.
    var encoderName: String {
        switch self {
        case .jpeg: "mjpeg"
        case .png: "png"
        case .webp: "libwebp"
        }
    }

    /// Whether this process's libavcodec has the encoder (WebP needs FFmpeg built with libwebp),
    /// checked at run time.
    public var isAvailable: Bool { avcodec_find_encoder_by_name(encoderName) != nil }
}

/// Owns an image encoder (`AVCodecContext`, freed with `avcodec_free_context`) and the swscale
/// conversion in front of it, for pictures of one size: 8-bit 4:2:0 BT.709 limited-range frames
/// (what `PictureRenderer` makes) in, one file's bytes out per frame.
///
/// Each format gets the YCbCr its readers assume, since none of them reads a matrix tag: JPEG
/// (JFIF) is BT.601 full range, so the picture is converted to that (not merely labelled, which
/// shows washed out); lossy WebP is BT.601 limited range; PNG is RGB.
///
/// Not `Sendable`: used on one thread.
final class ImageEncoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let converter: OpaquePointer
    private let converted: Frame
    private let packet: Packet
    let format: ImageFormat
    private var nextPts: Int64 = 0

    /// `quality` 1...100 (100 best): JPEG's quantiser scale 31...2, WebP's quality; PNG ignores it.
    init(format: ImageFormat, width: Int, height: Int, quality: Int) throws(MediaError) {
        guard let codec = avcodec_find_encoder_by_name(format.encoderName) else {
            throw MediaError(
                kind: .unsupportedCodec, call: "avcodec_find_encoder_by_name",
                message:
                    "this FFmpeg has no \(format.encoderName) encoder, so it cannot write \(format.rawValue) images")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(kind: .internalFailure, call: "avcodec_alloc_context3", message: "out of memory")
        }
        self.context = context
        self.format = format
        let quality = min(100, max(1, quality))
        // What the encoder is fed, and the matrix and range swscale converts to.
        let pixelFormat: AVPixelFormat
        let encoderFormat: AVPixelFormat
        let matrix: Int32
        let fullRange: Int32
        switch format {
        case .jpeg:
            // swscale writes plain yuv420p with full-range levels; the encoder takes it as the
            // full-range "yuvj" twin, the same memory layout (swscale warns on yuvj formats).
            (pixelFormat, encoderFormat, matrix, fullRange) = (
                AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P, SWS_CS_ITU601, 1
            )
        case .webp:
            (pixelFormat, encoderFormat, matrix, fullRange) = (AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV420P, SWS_CS_ITU601, 0)
        case .png:
            (pixelFormat, encoderFormat, matrix, fullRange) = (AV_PIX_FMT_RGB24, AV_PIX_FMT_RGB24, SWS_CS_ITU709, 1)
        }
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = encoderFormat
        context.pointee.time_base = AVRational(num: 1, den: 25)
        context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        if format == .jpeg {
            context.pointee.color_range = AVCOL_RANGE_JPEG
            context.pointee.colorspace = AVCOL_SPC_BT470BG
            // A fixed quantiser: quality 100 → 2 (ffmpeg's best), 1 → 31.
            let scale = 2 + Int32(((100 - Double(quality)) * 29 / 99).rounded())
            context.pointee.flags |= AV_CODEC_FLAG_QSCALE
            context.pointee.global_quality = scale * FF_QP2LAMBDA
        }
        converted = try Frame(width: Int32(width), height: Int32(height), format: pixelFormat)
        packet = try Packet()
        guard
            let converter = sws_getContext(
                Int32(width), Int32(height), AV_PIX_FMT_YUV420P, Int32(width), Int32(height), pixelFormat,
                SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil)
        else {
            var pointer: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&pointer)
            throw MediaError(kind: .internalFailure, call: "sws_getContext", message: "cannot convert to \(format)")
        }
        self.converter = converter
        // Source: BT.709 limited range. A negative result only means "no matrix" (RGB), never here.
        _ = sws_setColorspaceDetails(
            converter, sws_getCoefficients(SWS_CS_ITU709), 0, sws_getCoefficients(matrix), fullRange, 0, 1 << 16,
            1 << 16)
        let options = try OptionDictionary(format == .webp ? [("quality", String(quality))] : [])
        try check(
            avcodec_open2(context, codec, &options.pointer), "avcodec_open2", kind: .unsupportedCodec,
            context: "cannot open the \(format.encoderName) encoder")
    }

    deinit {
        sws_freeContext(converter)
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&pointer)
    }

    /// Encodes one picture (8-bit 4:2:0, BT.709 limited range, this encoder's size) as one file.
    func encode(_ picture: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> [UInt8] {
        try converted.makeWritable()
        let rows = sws_scale_frame(converter, converted.pointer, picture)
        if rows < 0 { throw MediaError(call: "sws_scale_frame", code: rows, context: "converting the picture") }
        let frame = converted.pointer
        frame.pointee.format = context.pointee.pix_fmt.rawValue
        frame.pointee.color_range = context.pointee.color_range
        frame.pointee.colorspace = context.pointee.colorspace
        // Encoders built on mpegvideo (mjpeg) refuse a timestamp that does not increase.
        frame.pointee.pts = nextPts
        nextPts += 1
        frame.pointee.quality = context.pointee.global_quality
        defer { frame.pointee.format = (format == .png ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_YUV420P).rawValue }
        try check(avcodec_send_frame(context, frame), "avcodec_send_frame", context: "encoding a \(format) image")
        var bytes: [UInt8] = []
        while true {
            let code = avcodec_receive_packet(context, packet.pointer)
            // Image encoders have no delay: the packet comes out at once, one per frame.
            if code == reel_averror(EAGAIN) { break }
            try check(code, "avcodec_receive_packet", context: "encoding a \(format) image")
            bytes += UnsafeBufferPointer(start: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
            packet.unref()
        }
        guard !bytes.isEmpty else {
            throw MediaError(
                kind: .internalFailure, call: "avcodec_receive_packet", message: "the \(format) encoder wrote nothing")
        }
        return bytes
    }
}
