internal import CFFmpeg

/// Flattens pictures with transparency (animated GIF and APNG frames) onto an opaque background
/// colour: converts the frame to 8-bit RGBA with swscale, then blends each pixel over the colour
/// (`out = a·c + (1 − a)·background`), leaving it opaque for the scaler, which ignores alpha.
final class AlphaFlattener {
    private var converter: OpaquePointer?
    private var converterKey: (Int32, Int32, Int32) = (0, 0, -1)
    private let flattened: Frame
    private let background: (red: UInt16, green: UInt16, blue: UInt16)

    /// `background` is 0xRRGGBB.
    init(background: UInt32) throws(MediaError) {
        flattened = try Frame()
        self.background = (
            UInt16((background >> 16) & 0xFF), UInt16((background >> 8) & 0xFF), UInt16(background & 0xFF)
        )
    }

    deinit { sws_freeContext(converter) }

    /// Whether frames of this pixel format carry an alpha channel.
    static func hasAlpha(_ format: Int32) -> Bool {
        guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: format)) else { return false }
        return (descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_ALPHA)) != 0
    }

    /// An opaque RGBA copy of `frame` (same size and timestamps), valid until the next call.
    func flatten(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> UnsafeMutablePointer<AVFrame> {
        let (width, height, format) = (frame.pointee.width, frame.pointee.height, frame.pointee.format)
        if converter == nil || converterKey != (width, height, format) {
            sws_freeContext(converter)
            converter = sws_getContext(
                width, height, AVPixelFormat(rawValue: format), width, height, AV_PIX_FMT_RGBA, SWS_POINT, nil, nil,
                nil)
            guard converter != nil else {
                let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: format)).map { String(cString: $0) } ?? "?"
                throw MediaError(
                    kind: .unsupportedCodec, call: "sws_getContext", message: "cannot convert pixel format \(name)")
            }
            converterKey = (width, height, format)
            flattened.unref()
            flattened.pointer.pointee.width = width
            flattened.pointer.pointee.height = height
            flattened.pointer.pointee.format = AV_PIX_FMT_RGBA.rawValue
            try check(av_frame_get_buffer(flattened.pointer, 0), "av_frame_get_buffer")
        }
        try flattened.makeWritable()
        let rows = sws_scale_frame(converter, flattened.pointer, frame)
        if rows < 0 {
            throw MediaError(call: "sws_scale_frame", code: rows, kind: .internalFailure, context: "alpha conversion")
        }
        guard let (bytes, stride) = flattened.plane(0) else {
            throw MediaError(kind: .internalFailure, call: "flatten", message: "no RGBA plane")
        }
        let (red, green, blue) = background
        for y in 0..<Int(height) {
            let row = bytes + y * stride
            for x in 0..<Int(width) {
                let pixel = row + x * 4
                let alpha = UInt16(pixel[3])
                if alpha == 255 { continue }
                let rest = 255 - alpha
                pixel[0] = UInt8((UInt16(pixel[0]) * alpha + red * rest + 127) / 255)
                pixel[1] = UInt8((UInt16(pixel[1]) * alpha + green * rest + 127) / 255)
                pixel[2] = UInt8((UInt16(pixel[2]) * alpha + blue * rest + 127) / 255)
                pixel[3] = 255
            }
        }
        av_frame_copy_props(flattened.pointer, frame)
        return flattened.pointer
    }
}
