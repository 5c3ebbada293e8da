/// libsvtav1's options (FFmpeg 5.1 with SVT-AV1 1.4).
///
/// What FFmpeg 5.1's wrapper passes on, and what goes through `svtav1-params` instead:
/// - `preset` (SVT's speed, 0 slowest to 13) and `crf` (1–63, whole numbers) are its own options;
///   the keyframe interval is `gop_size` (SVT's intra period, one less), the colours the context's.
/// - `rc_max_rate` with a CRF is SVT's capped CRF (its own window over the stream, not a VBV buffer
///   of `rc_buffer_size`; SVT logs "capped CRF" with the cap).
/// - The wrapper ignores `thread_count` (SVT's threads are its `lp`, "logical processors"), the
///   frames' HDR side data (mastering display and content light level go in as `mastering-display`
///   and `content-light`, with `enable-hdr`), and a frame's `pict_type` unless
///   `enable-force-key-frames` is on: only then does a forced I frame become a key frame.
extension VideoEncodeStage {
    /// The encoder options of an AV1 encode.
    static func svtOptions(_ encoding: VideoEncoding, threads: Int, hdrMetadata: HDRStaticMetadata?)
        -> [(String, String)]
    {
        var options: [(String, String)] = [
            ("preset", String(VideoEncoding.svtPreset(encoding.encoderPreset) ?? 8)),
            ("crf", String(VideoEncoding.svtCRF(encoding.crf))),
        ]
        // Scene-change keyframes are off (SVT's default too): keyframes come at the interval, and,
        // in a ladder, where the caller forces them, as closed-GOP key frames (`irefresh-type=2`).
        var parameters = ["scd=0"]
        if encoding.alignedKeyframes { parameters += ["enable-force-key-frames=1", "irefresh-type=2"] }
        if threads > 0 { parameters.append("lp=\(threads)") }
        if let hdrMetadata { parameters += svtParameters(hdrMetadata) }
        options.append(("svtav1-params", parameters.joined(separator: ":")))
        return options
    }

    /// `mastering-display=G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)` (chromaticities and cd/m² as decimals)
    /// and `content-light=MaxCLL,MaxFALL`, each only when the metadata has all its values.
    static func svtParameters(_ metadata: HDRStaticMetadata) -> [String] {
        var parameters: [String] = []
        func decimal(_ value: Double) -> String {
            var text = String(format: "%.5f", value)
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
            return text
        }
        if let display = metadata.masteringDisplay, let red = display.red, let green = display.green,
            let blue = display.blue, let white = display.whitePoint, let maximum = display.maxLuminance,
            let minimum = display.minLuminance
        {
            func point(_ name: String, _ value: Chromaticity) -> String {
                "\(name)(\(decimal(value.x)),\(decimal(value.y)))"
            }
            parameters.append(
                "mastering-display=" + point("G", green) + point("B", blue) + point("R", red) + point("WP", white)
                    + "L(\(decimal(maximum)),\(decimal(minimum)))")
        }
        if let level = metadata.contentLightLevel, level.maxContentLightLevel > 0 || level.maxFrameAverageLightLevel > 0
        {
            parameters.append("content-light=\(level.maxContentLightLevel),\(level.maxFrameAverageLightLevel)")
        }
        if !parameters.isEmpty { parameters.insert("enable-hdr=1", at: 0) }
        return parameters
    }
}

extension VideoEncoding {
    /// The SVT-AV1 preset an AV1 preset's `encoderPreset` names ("0" to "13"); nil for anything else.
    public static func svtPreset(_ name: String) -> Int? {
        guard let number = Int(name), (0...13).contains(number) else { return nil }
        return number
    }

    /// SVT-AV1's CRF for a constant rate factor: a whole number from 1 to 63.
    public static func svtCRF(_ crf: Double) -> Int { min(63, max(1, Int(crf.rounded()))) }
}
