internal import CFFmpeg

/// HDR10 static metadata on the way out: x265's parameters for the SEI, stream side data for the
/// container's `mdcv`/`clli` boxes.
extension VideoEncodeStage {
    /// `:master-display=…:max-cll=…` for x265 (primaries and white point in 0.00002, luminance in
    /// 0.0001 cd/m²), each part only when the metadata has all its values.
    static func x265Parameters(_ metadata: HDRStaticMetadata) -> String {
        var text = ""
        if let display = metadata.masteringDisplay, let red = display.red, let green = display.green,
            let blue = display.blue, let white = display.whitePoint, let maximum = display.maxLuminance,
            let minimum = display.minLuminance
        {
            func point(_ name: String, _ value: Chromaticity) -> String {
                "\(name)(\(Int((value.x * 50000).rounded())),\(Int((value.y * 50000).rounded())))"
            }
            text +=
                ":master-display=" + point("G", green) + point("B", blue) + point("R", red) + point("WP", white)
                + "L(\(Int((maximum * 10000).rounded())),\(Int((minimum * 10000).rounded())))"
        }
        if let level = metadata.contentLightLevel, level.maxContentLightLevel > 0 || level.maxFrameAverageLightLevel > 0
        {
            text += ":max-cll=\(level.maxContentLightLevel),\(level.maxFrameAverageLightLevel)"
        }
        return text
    }

    /// Adds mastering display and content light level side data to `stream` (before the header).
    static func addSideData(_ metadata: HDRStaticMetadata, to stream: UnsafeMutablePointer<AVStream>)
        throws(MediaError)
    {
        if let display = metadata.masteringDisplay {
            guard let side = av_mastering_display_metadata_alloc() else {
                throw MediaError(
                    kind: .internalFailure, call: "av_mastering_display_metadata_alloc", message: "out of memory")
            }
            func rational(_ value: Double, _ denominator: Int32) -> AVRational {
                AVRational(num: Int32((value * Double(denominator)).rounded()), den: denominator)
            }
            if let red = display.red, let green = display.green, let blue = display.blue,
                let white = display.whitePoint
            {
                side.pointee.display_primaries = (
                    (rational(red.x, 50000), rational(red.y, 50000)),
                    (rational(green.x, 50000), rational(green.y, 50000)),
                    (rational(blue.x, 50000), rational(blue.y, 50000))
                )
                side.pointee.white_point = (rational(white.x, 50000), rational(white.y, 50000))
                side.pointee.has_primaries = 1
            }
            if let maximum = display.maxLuminance, let minimum = display.minLuminance {
                side.pointee.max_luminance = rational(maximum, 10000)
                side.pointee.min_luminance = rational(minimum, 10000)
                side.pointee.has_luminance = 1
            }
            try add(
                UnsafeMutableRawPointer(side), size: MemoryLayout<AVMasteringDisplayMetadata>.size,
                type: AV_PKT_DATA_MASTERING_DISPLAY_METADATA, to: stream)
        }
        if let level = metadata.contentLightLevel {
            var size = 0
            guard let side = av_content_light_metadata_alloc(&size) else {
                throw MediaError(
                    kind: .internalFailure, call: "av_content_light_metadata_alloc", message: "out of memory")
            }
            side.pointee.MaxCLL = UInt32(clamping: level.maxContentLightLevel)
            side.pointee.MaxFALL = UInt32(clamping: level.maxFrameAverageLightLevel)
            try add(UnsafeMutableRawPointer(side), size: size, type: AV_PKT_DATA_CONTENT_LIGHT_LEVEL, to: stream)
        }
    }

    /// Hands `data` (from av_malloc) to the stream, which frees it; frees it here when that fails.
    private static func add(
        _ data: UnsafeMutableRawPointer, size: Int, type: AVPacketSideDataType,
        to stream: UnsafeMutablePointer<AVStream>
    ) throws(MediaError) {
        let code = av_stream_add_side_data(stream, type, data.assumingMemoryBound(to: UInt8.self), size)
        if code < 0 { av_free(data) }
        try check(code, "av_stream_add_side_data")
    }
}
