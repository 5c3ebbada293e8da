import Foundation

extension Fixtures {
    /// 640x360 H.264 + stereo AAC, 7 s at 29.97 fps (30000/1001: segment boundaries fall between
    /// frames, so a rung cut at the wrong frame shows): the source of a ladder whose 1280x720 rung
    /// is above it.
    public static let ladderSource = Recipe(
        "ladder-source.mp4",
        ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30000/1001:duration=7"] + audio(seconds: 7)
            + ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"] + aac)

    /// 320x180 H.264 + stereo AAC, 2 s at 30 fps, tagged BT.709: a ladder source as small as they
    /// come, for what a ladder does when something fails.
    public static let ladderTiny = Recipe(
        "ladder-tiny.mp4", video("320x180", seconds: 2) + audio(seconds: 2) + h264 + bt709Tags + aac)
}

extension Fixtures {
    /// 640x360 HDR (`transfer`: `arib-std-b67` HLG, or `smpte2084` PQ with `hdr10SEI`'s mastering
    /// display and light levels), 10-bit HEVC Main 10 tagged BT.2020, 3 s at 30 fps, stereo AAC:
    /// testsrc2 placed at BT.2408 reference white as `hlg` and `pq` are made. The source of an HDR
    /// ladder with 1 s segments.
    static func ladderHDR(_ transfer: String) -> Recipe {
        Recipe(
            "ladder-\(transfer).mov",
            video("640x360", seconds: 3) + audio(seconds: 3) + [
                "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p,\(sdrTags),\(fromSDR(transfer))",
            ] + hdrHEVC(transfer: transfer, x265: transfer == "smpte2084" ? hdr10SEI : "") + aac)
    }

    /// `ladderHDR` in HLG.
    public static let ladderHLG = ladderHDR("arib-std-b67")
    /// `ladderHDR` in PQ/HDR10.
    public static let ladderPQ = ladderHDR("smpte2084")
}

extension Fixtures {
    /// BT.709 tags: an untagged stream's matrix is guessed from its size (BT.601 for 640x360 and
    /// 360x640: `Scaler.untaggedMatrix`), and a comparison with ffmpeg's frames should not hang on it.
    static let bt709Tags = ["-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709"]

    /// 640x360 H.264 + stereo AAC, 3 s at 30 fps, tagged BT.709: the base of `ladderPortraitRotated`.
    static let ladderLandscape3s = Recipe(
        "ladder-landscape-3s.mp4", video("640x360", seconds: 3) + audio(seconds: 3) + h264 + bt709Tags + aac)

    /// Phone footage held upright: `ladderLandscape3s`'s 640x360 stream with a quarter-turn display
    /// matrix (remuxed, as `rotated` is), shown as 360x640.
    public static let ladderPortraitRotated = Recipe(
        "ladder-portrait-rotated.mp4", ["-i", "$0", "-c", "copy", "-metadata:s:v:0", "rotate=90"],
        inputs: [ladderLandscape3s])

    /// A 360x640 stream with no rotation, 3 s at 30 fps, tagged BT.709 + stereo AAC: portrait in its
    /// pixels.
    public static let ladderPortrait = Recipe(
        "ladder-portrait.mp4", video("360x640", seconds: 3) + audio(seconds: 3) + h264 + bt709Tags + aac)
}

extension Fixtures {
    /// 320x180 testsrc2 under heavy moving noise (ffmpeg's `noise` filter, strength 60, temporal),
    /// tagged BT.709, 8 s at 30 fps, nearly lossless (x264 CRF 14) + AAC: a picture no CRF encode of
    /// it keeps under a ladder rung's bit-rate cap, so the cap decides every segment's size.
    public static let ladderNoise = Recipe(
        "ladder-noise.mp4",
        video("320x180", seconds: 8) + audio(seconds: 8) + ["-vf", "noise=alls=60:allf=t+u"]
            + ["-c:v", "libx264", "-preset", "ultrafast", "-crf", "14", "-pix_fmt", "yuv420p"] + bt709Tags + aac)

    /// `ladderNoise` as HLG (BT.2100, 10-bit HEVC Main 10), made as `hlg` is.
    public static let ladderNoiseHLG = Recipe(
        "ladder-noise-hlg.mov", ["-i", "$0", "-vf", fromSDR("arib-std-b67")] + hdrHEVC(transfer: "arib-std-b67"),
        inputs: [ladderNoise])
}
