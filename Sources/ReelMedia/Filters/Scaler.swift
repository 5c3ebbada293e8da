internal import CFFmpeg

/// Owns a swscale context (freed with `sws_freeContext`) that converts frames of one size and pixel
/// format into another, also converting the colour matrix (to BT.709 unless told otherwise) and the
/// range (always to limited).
final class Scaler {
    /// The YCbCr matrix of the scaled frames.
    enum Matrix {
        /// BT.709: SDR output.
        case bt709
        /// The source's own (HDR kept in HEVC).
        case source
        /// BT.2020 non-constant luminance: what the tone mapper reads.
        case bt2020
    }

    private let context: OpaquePointer
    let sourceWidth: Int32
    let sourceHeight: Int32
    let sourceFormat: AVPixelFormat
    let sourceColorSpace: AVColorSpace
    let sourceRange: AVColorRange

    /// `matrix` is the scaled frames' YCbCr matrix.
    init(
        from frame: UnsafeMutablePointer<AVFrame>, toWidth width: Int32, height: Int32, format: AVPixelFormat,
        matrix: Matrix = .bt709, threads: Int = 0
    ) throws(MediaError) {
        sourceColorSpace = frame.pointee.colorspace
        sourceRange = frame.pointee.color_range
        sourceWidth = frame.pointee.width
        sourceHeight = frame.pointee.height
        let rawFormat = AVPixelFormat(rawValue: frame.pointee.format)
        sourceFormat = rawFormat
        // The deprecated full-range "yuvj" formats are their plain twins with a full-range flag.
        var (inputFormat, fullRange) = Scaler.unJ(rawFormat)
        if frame.pointee.color_range == AVCOL_RANGE_JPEG { fullRange = true }
        guard let allocated = sws_alloc_context() else {
            throw MediaError(kind: .internalFailure, call: "sws_alloc_context", message: "out of memory")
        }
        context = allocated
        let options: [(String, Int64)] = [
            ("srcw", Int64(sourceWidth)), ("srch", Int64(sourceHeight)), ("src_format", Int64(inputFormat.rawValue)),
            ("dstw", Int64(width)), ("dsth", Int64(height)), ("dst_format", Int64(format.rawValue)),
            ("sws_flags", Int64(SWS_BICUBIC)),  // what ffmpeg's scale filter uses by default
            ("threads", Int64(threads)),
        ]
        for (name, value) in options {
            // On a throw, deinit frees the context (every stored property is set by now).
            try check(
                av_opt_set_int(UnsafeMutableRawPointer(allocated), name, value, 0), "av_opt_set_int", context: name)
        }
        let code = sws_init_context(allocated, nil, nil)
        if code < 0 {
            let name = av_get_pix_fmt_name(inputFormat).map { String(cString: $0) } ?? "unknown"
            throw MediaError(
                call: "sws_init_context", code: code, kind: .unsupportedCodec,
                context: "cannot convert pixel format \(name)")
        }
        let sourceSpace = Scaler.colorSpace(of: frame)
        let coefficientsIn = sws_getCoefficients(sourceSpace)
        let outputSpace: Int32
        switch matrix {
        case .bt709: outputSpace = SWS_CS_ITU709
        case .source: outputSpace = sourceSpace
        case .bt2020: outputSpace = SWS_CS_BT2020
        }
        let coefficientsOut = sws_getCoefficients(outputSpace)
        // Fails (harmlessly) for RGB sources, where there is no matrix to convert.
        _ = sws_setColorspaceDetails(
            allocated, coefficientsIn, fullRange ? 1 : 0, coefficientsOut, 0, 0, 1 << 16, 1 << 16)
    }

    deinit { sws_freeContext(context) }

    /// Whether this scaler was made for frames like `frame`.
    func accepts(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        frame.pointee.width == sourceWidth && frame.pointee.height == sourceHeight
            && frame.pointee.format == sourceFormat.rawValue && frame.pointee.colorspace == sourceColorSpace
            && frame.pointee.color_range == sourceRange
    }

    /// Scales `source` into `destination`'s buffers.
    func scale(_ source: UnsafeMutablePointer<AVFrame>, into destination: UnsafeMutablePointer<AVFrame>)
        throws(MediaError)
    {
        let rows = sws_scale_frame(context, destination, source)
        if rows < 0 {
            throw MediaError(call: "sws_scale_frame", code: rows, kind: .internalFailure, context: "scaling failed")
        }
    }

    private static func unJ(_ format: AVPixelFormat) -> (AVPixelFormat, Bool) {
        switch format {
        case AV_PIX_FMT_YUVJ420P: return (AV_PIX_FMT_YUV420P, true)
        case AV_PIX_FMT_YUVJ422P: return (AV_PIX_FMT_YUV422P, true)
        case AV_PIX_FMT_YUVJ444P: return (AV_PIX_FMT_YUV444P, true)
        case AV_PIX_FMT_YUVJ440P: return (AV_PIX_FMT_YUV440P, true)
        case AV_PIX_FMT_YUVJ411P: return (AV_PIX_FMT_YUV411P, true)
        default: return (format, false)
        }
    }

    private static func colorSpace(of frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        switch frame.pointee.colorspace {
        case AVCOL_SPC_BT709: return SWS_CS_ITU709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M: return SWS_CS_ITU601
        case AVCOL_SPC_SMPTE240M: return SWS_CS_SMPTE240M
        case AVCOL_SPC_FCC: return SWS_CS_FCC
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: return SWS_CS_BT2020
        default:
            switch untaggedMatrix(width: Int(frame.pointee.width), height: Int(frame.pointee.height)) {
            case .bt601: return SWS_CS_ITU601
            case .bt709: return SWS_CS_ITU709
            }
        }
    }

    /// The YCbCr matrix a stream that names none (or says "unspecified") is taken to have.
    enum UntaggedMatrix: Equatable {
        case bt601
        case bt709
    }

    /// Reel's one guess for a stream whose matrix is untagged, made here for every picture Reel
    /// converts (exports, every ladder rung, thumbnails, posters read from the source, the tone
    /// mapper's input): BT.709 for HD pictures, BT.601 for SD ones, SD being at most 1024 pixels on
    /// its long side and 576 on its short side (PAL's 576 lines, NTSC's 480; 1024x576 is PAL 16:9
    /// in square pixels). Judged on the sides, not on width and height, so a phone's picture gets
    /// the same colours whether it was stored upright (360x640) or sideways with a quarter-turn
    /// display matrix (640x360). Landscape pictures get what they got before (width over 1024 or
    /// height over 576); mpv and libplacebo draw the line at 1280 wide, on the stored size, and
    /// FFmpeg's scale filter takes BT.601 at any size.
    static func untaggedMatrix(width: Int, height: Int) -> UntaggedMatrix {
        max(width, height) > 1024 || min(width, height) > 576 ? .bt709 : .bt601
    }
}
