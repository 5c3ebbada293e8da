internal import CFFmpeg

/// What this FFmpeg build can do, asked without opening any file.
public enum MediaCapabilities {
    /// Whether the named muxer (`mp4`, `mov`) can hold a stream of the named codec (`h264`, `vp9`)
    /// without re-encoding.
    public static func container(_ muxer: String, canHold codec: String) -> Bool {
        // FFmpeg 5.1's muxers list these but refuse them when the header is written: FLAC in MP4 is
        // experimental, FLAC, Opus and VP9 are "only supported in MP4" (AV1 "in MP4 and AVIF"), VP8 "is currently not
        // supported". Vorbis in MP4 is written, but with an object type no specification or player
        // knows: refused too.
        let refused: [String: Set<String>] = [
            "mp4": ["flac", "vp8", "vorbis"], "mov": ["av1", "flac", "opus", "vp8", "vp9", "vorbis"],
        ]
        if refused[muxer]?.contains(codec) == true { return false }
        guard let format = av_guess_format(muxer, nil, nil),
            let descriptor = avcodec_descriptor_get_by_name(codec)
        else { return false }
        return avformat_query_codec(format, descriptor.pointee.id, FF_COMPLIANCE_NORMAL) == 1
    }

    /// Whether the named pixel format (`bgra`, `yuva420p`) has an alpha channel.
    public static func pixelFormatHasAlpha(_ name: String) -> Bool {
        let format = av_get_pix_fmt(name)
        return format != AV_PIX_FMT_NONE && AlphaFlattener.hasAlpha(format.rawValue)
    }

    /// Whether a decoder exists for the named codec.
    public static func canDecode(_ codec: String) -> Bool {
        guard let descriptor = avcodec_descriptor_get_by_name(codec) else { return false }
        return avcodec_find_decoder(descriptor.pointee.id) != nil
    }
}
