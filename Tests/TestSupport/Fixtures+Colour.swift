import Foundation

/// HDR, Dolby Vision and mirrored test media, made with Debian's ffmpeg (libx265, zimg) at test time.
///
/// The HDR clips follow ITU-R BT.2408: SDR content is placed at HDR reference white (203 cd/m²; 75 %
/// HLG, 58 % PQ) with zimg's exact BT.2100 maths (`agamma=0`), so the SDR original is the known
/// truth of a right HDR-to-SDR conversion.
extension Fixtures {
    /// The SDR tags of the original, given to zscale explicitly (a lavfi source carries none).
    static let sdrTags = "setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv"

    /// 1280x720 testsrc2, 0.5 s at 30 fps, BT.709 limited range, lossless (FFV1): the truth. At
    /// 640x360 testsrc2's detail is too fine for x264 at CRF 21 to keep 30 dB even from SDR.
    public static let sdrOriginal = Recipe(
        "sdr-original.mkv",
        video("1280x720", seconds: 0.5) + [
            "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p,\(sdrTags)", "-c:v", "ffv1",
            "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709", "-color_range", "tv",
        ])

    /// 1280x720 100 % colour bars (lavfi `pal100bars`: white, yellow, cyan, green, magenta, red,
    /// blue, black; each channel 0 or 100 %), 0.5 s at 30 fps, BT.709 limited range, lossless: the
    /// truth of `barsHLG` and `barsPQ`, whose every bar but black has its largest channel at
    /// reference white, and whose red and blue are where a hue shift shows most.
    public static let barsOriginal = Recipe(
        "bars-original.mkv",
        ["-f", "lavfi", "-i", "pal100bars=size=1280x720:rate=30:duration=0.5"] + [
            "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p,\(sdrTags)", "-c:v", "ffv1",
            "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709", "-color_range", "tv",
        ])

    /// The colour bars' left edges (pixels) in `barsOriginal` and what they are, for reading one bar.
    public static let bars: [(name: String, left: Int)] = [
        ("white", 0), ("yellow", 160), ("cyan", 320), ("green", 480), ("magenta", 640), ("red", 800),
        ("blue", 960), ("black", 1120),
    ]

    /// HEVC Main 10 encoding of a picture already in BT.2020 10-bit, with the transfer's tags. On one
    /// thread with no pool: x265's pool hand-offs wait for time slices on a machine the test run
    /// loads far past its cores (a 320x180 8 s clip ran past 300 s there; see `StageThreads`).
    static func hdrHEVC(transfer: String, x265: String = "") -> [String] {
        [
            "-c:v", "libx265", "-preset", "ultrafast", "-crf", "8", "-x265-params",
            "log-level=error:pools=none:frame-threads=1:colorprim=bt2020:transfer=\(transfer):colormatrix=bt2020nc:range=limited"
                + x265,
            "-color_primaries", "bt2020", "-color_trc", transfer, "-colorspace", "bt2020nc", "-color_range", "tv",
            "-tag:v", "hvc1",
        ]
    }

    /// HDR10 static metadata as x265 writes it into SEI: a P3-D65 1000 cd/m² mastering display,
    /// MaxCLL 1000, MaxFALL 400.
    public static let hdr10SEI =
        ":hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400"

    /// The SDR original converted to `transfer` (BT.2100, reference white at 203 cd/m²), in `format`
    /// (zimg makes it, undithered).
    static func fromSDR(_ transfer: String, format: String = "yuv420p10le") -> String {
        "zscale=tin=bt709:min=bt709:pin=bt709:rin=tv:t=linear:npl=203:agamma=0,format=gbrpf32le,"
            + "zscale=p=bt2020:t=\(transfer):m=bt2020nc:r=tv:npl=203:agamma=0,format=\(format)"
    }

    /// HLG (BT.2100, BT.2020) made from `sdrOriginal` with BT.2408's convention; no static metadata.
    public static let hlg = Recipe(
        "hlg.mov", ["-i", "$0", "-vf", fromSDR("arib-std-b67")] + hdrHEVC(transfer: "arib-std-b67"),
        inputs: [sdrOriginal])

    /// PQ/HDR10 made from `sdrOriginal` (reference white at 58 % PQ), with mastering display and
    /// content light level in SEI only (as x265 writes them; ffmpeg 5.1 writes no `mdcv`/`clli`).
    public static let pq = Recipe(
        "pq.mov", ["-i", "$0", "-vf", fromSDR("smpte2084")] + hdrHEVC(transfer: "smpte2084", x265: hdr10SEI),
        inputs: [sdrOriginal])

    /// `barsOriginal` as HLG, made like `hlg`.
    public static let barsHLG = Recipe(
        "bars-hlg.mov", ["-i", "$0", "-vf", fromSDR("arib-std-b67")] + hdrHEVC(transfer: "arib-std-b67"),
        inputs: [barsOriginal])

    /// `barsOriginal` as PQ/HDR10, made like `pq`.
    public static let barsPQ = Recipe(
        "bars-pq.mov", ["-i", "$0", "-vf", fromSDR("smpte2084")] + hdrHEVC(transfer: "smpte2084", x265: hdr10SEI),
        inputs: [barsOriginal])

    /// `pq` with `mdcv`/`clli` boxes in its sample entry as well, holding other values than its SEI
    /// (a 4000 cd/m² BT.2020 mastering display, MaxCLL 800, MaxFALL 300), so a reader shows which it used.
    public static let pqWithBoxes = Recipe(
        "pq-boxes.mov", ["-i", "$0", "-c", "copy"], inputs: [pq],
        patch: { url in
            try MP4Boxes.appendToVideoSampleEntry(
                url,
                boxes: [
                    MP4Boxes.masteringDisplayBox(
                        green: (8500, 39850), blue: (6550, 2300), red: (35400, 14600), white: (15635, 16450),
                        maxLuminance: 40_000_000, minLuminance: 50),
                    MP4Boxes.contentLightBox(maxCLL: 800, maxFALL: 300),
                ])
        })

    /// 640x360 PQ whose luma ramps left to right from 0 to 1000 cd/m² (0 to 75.2 % PQ signal, evenly
    /// in signal), neutral chroma; MaxCLL 1000; 0.5 s.
    public static let pqRamp = Recipe(
        "pq-ramp.mov",
        [
            "-f", "lavfi", "-i", "color=black:size=640x360:rate=30:duration=0.5", "-vf",
            "format=yuv420p10le,geq=lum='64+876*0.751827*X/(W-1)':cb=512:cr=512",
        ] + hdrHEVC(transfer: "smpte2084", x265: hdr10SEI))

    /// 640x360 8-bit H.264 tagged HLG (BT.2020): it fits the H.264 presets in every other way, so
    /// only its transfer keeps smart passthrough from copying it.
    public static let hlgH264 = Recipe(
        "hlg-h264.mp4",
        video("640x360", seconds: 0.5) + h264 + [
            "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc",
        ])

    /// `sdrOriginal` converted to HLG like `hlg`, but 8-bit: H.264 High (yuv420p, CRF 8) tagged BT.2020
    /// HLG, limited range. No preset keeps its HDR (HEVC presets keep only more than 8 bits), so each
    /// tone-maps it, and the SDR original is the truth of the result. zimg quantises to 8 bits itself:
    /// swscale's dither (`format=yuv420p` after a 10-bit zscale) is noise that x264 at CRF 21 pays for
    /// in detail (29.6 dB against the original instead of 30.7).
    public static let hlg8Bit = Recipe(
        "hlg-8bit.mp4",
        ["-i", "$0", "-vf", fromSDR("arib-std-b67", format: "yuv420p")] + [
            "-c:v", "libx264", "-preset", "ultrafast", "-crf", "8", "-color_primaries", "bt2020", "-color_trc",
            "arib-std-b67", "-colorspace", "bt2020nc", "-color_range", "tv",
        ], inputs: [sdrOriginal])

    /// Linear-light BT.2020 RGB of the six gamut patches, in 1/65535 of HDR reference white: BT.2020's
    /// red, green and blue primaries, then BT.709's, each at half of reference white.
    public static let gamutPatches: [(name: String, rgb: (Int, Int, Int))] = [
        ("bt2020-red", (32767, 0, 0)), ("bt2020-green", (0, 32767, 0)), ("bt2020-blue", (0, 0, 32767)),
        ("bt709-red", (20558, 2264, 537)), ("bt709-green", (10790, 30131, 2884)),
        ("bt709-blue", (1419, 372, 29346)),
    ]
    /// Width of one gamut patch (the clip is six patches wide and 96 pixels high).
    public static let gamutPatchWidth = 96

    /// Six vertical patches (`gamutPatches`) in `transfer` (HLG or PQ), BT.2020, 576x96.
    public static func gamut(_ transfer: String) -> Recipe {
        func expression(_ component: (Int, Int, Int)) -> String {
            gamutPatches.enumerated().reversed().reduce("0") { rest, item in
                let value = [item.element.rgb.0, item.element.rgb.1, item.element.rgb.2]
                return "if(lt(X,\((item.offset + 1) * gamutPatchWidth)),\(value[component.0]),\(rest))"
            }
        }
        let filter =
            "format=gbrp16le,geq=r='\(expression((0, 0, 0)))':g='\(expression((1, 1, 1)))':b='\(expression((2, 2, 2)))',"
            + "setparams=color_primaries=bt2020:color_trc=linear:colorspace=gbr:range=pc,"
            + "zscale=npl=203:agamma=0:t=\(transfer):p=bt2020:m=bt2020nc:r=tv,format=yuv420p10le"
        return Recipe(
            "gamut-\(transfer).mov",
            ["-f", "lavfi", "-i", "color=black:size=\(6 * gamutPatchWidth)x96:rate=30:duration=0.5", "-vf", filter]
                + hdrHEVC(transfer: transfer, x265: transfer == "smpte2084" ? hdr10SEI : ""))
    }

    // MARK: - Dolby Vision

    /// `hlg` signalled as Dolby Vision profile 8.4 (a `dvvC` box, as iPhones write), no RPUs.
    public static let dolbyVision84 = Recipe(
        "dv-8.4.mov", ["-i", "$0", "-c", "copy"], inputs: [hlg],
        patch: { url in
            try MP4Boxes.appendToVideoSampleEntry(
                url, boxes: [MP4Boxes.dolbyVisionBox(profile: 8, level: 1, compatibilityID: 4)])
        })

    /// `pq` signalled as Dolby Vision profile 8.1 (HDR10 base layer).
    public static let dolbyVision81 = Recipe(
        "dv-8.1.mov", ["-i", "$0", "-c", "copy"], inputs: [pq],
        patch: { url in
            try MP4Boxes.appendToVideoSampleEntry(
                url, boxes: [MP4Boxes.dolbyVisionBox(profile: 8, level: 1, compatibilityID: 1)])
        })

    /// Signalled as Dolby Vision profile 5 (`dvh1` sample entry with a `dvcC` box, no compatible base
    /// layer). The pictures are really `pq`'s; only the signalling matters for refusing it.
    public static let dolbyVision5 = Recipe(
        "dv-5.mov", ["-i", "$0", "-c", "copy"], inputs: [pq],
        patch: { url in
            try MP4Boxes.appendToVideoSampleEntry(
                url, boxes: [MP4Boxes.dolbyVisionBox(profile: 5, level: 1, compatibilityID: 0)], renameEntry: "dvh1")
        })

    /// `hlg`'s pictures as an Annex B HEVC stream with an access unit delimiter before every picture and
    /// a NAL unit of type 62 (where Dolby Vision carries its RPU) at the end of every access unit. The
    /// RPU payload is not a valid RPU: enough to recognise RPUs and to see that they are kept or dropped.
    public static let hevcWithRPU = Recipe(
        "dv-rpu.hevc",
        ["-i", "$0", "-vf", fromSDR("arib-std-b67")]
            + hdrHEVC(transfer: "arib-std-b67", x265: ":aud=1").filter {
                $0 != "-tag:v" && $0 != "hvc1"
            } + ["-f", "hevc"], inputs: [sdrOriginal],
        patch: { url in try insertFakeRPUs(url) })

    /// `hevcWithRPU` in a QuickTime file signalled as Dolby Vision 8.4 (`dvvC`).
    public static let dolbyVisionWithRPU = Recipe(
        "dv-rpu.mov", ["-framerate", "30", "-i", "$0", "-c", "copy", "-tag:v", "hvc1"], inputs: [hevcWithRPU],
        patch: { url in
            try MP4Boxes.appendToVideoSampleEntry(
                url, boxes: [MP4Boxes.dolbyVisionBox(profile: 8, level: 1, compatibilityID: 4)])
        })

    /// The fake RPU NAL unit: header (type 62, layer 0, temporal id 0), then a payload that starts
    /// like an RPU (prefix 25, `rpu_type` 2), says "REEL" and ends; FFmpeg's parser rejects it (a
    /// warning), which is all a test of recognising, keeping and dropping RPUs needs.
    public static let fakeRPU: [UInt8] = [0x7c, 0x01, 0x19, 0x08, 0x52, 0x45, 0x45, 0x4c, 0x80]

    /// Appends `fakeRPU` to every access unit of an Annex B HEVC file (access units begin with an
    /// access unit delimiter, NAL type 35).
    static func insertFakeRPUs(_ url: URL) throws {
        let data = [UInt8](try Data(contentsOf: url))
        var starts: [Int] = []
        var index = 0
        while index + 4 < data.count {
            if data[index] == 0, data[index + 1] == 0, data[index + 2] == 1 {
                if (data[index + 3] >> 1) & 0x3f == 35 {
                    // A 4-byte start code begins one byte earlier.
                    starts.append(index > 0 && data[index - 1] == 0 ? index - 1 : index)
                }
                index += 3
            } else {
                index += 1
            }
        }
        guard !starts.isEmpty else { throw ToolFailure(message: "no access unit delimiters in \(url.path)") }
        var output: [UInt8] = Array(data[0..<starts[0]])
        for (number, start) in starts.enumerated() {
            let end = number + 1 < starts.count ? starts[number + 1] : data.count
            output += data[start..<end]
            output += [0, 0, 0, 1] + fakeRPU
        }
        try Data(output).write(to: url)
    }

    // MARK: - Mirrors

    /// How a mirrored fixture's display matrix orients `upright`'s frames, and the ffmpeg filters that
    /// make the same picture from the upright frames.
    public enum Mirror: String, Sendable, CaseIterable {
        /// Left-right mirror (what a front camera may write).
        case horizontal
        /// Top-bottom mirror: a left-right mirror and a half turn.
        case vertical
        /// A left-right mirror, then a quarter turn clockwise.
        case horizontalThenClockwise = "horizontal-clockwise"

        /// The filters that turn the upright picture into what a player shows.
        public var filters: String {
            switch self {
            case .horizontal: "hflip"
            case .vertical: "vflip"
            case .horizontalThenClockwise: "hflip,transpose=clock"
            }
        }

        /// a, b, c, d, x, y of the `tkhd` matrix for a 480x270 picture.
        var matrix: (Int, Int, Int, Int, Int, Int) {
            switch self {
            case .horizontal: (-1, 0, 0, 1, 480, 0)
            case .vertical: (1, 0, 0, -1, 0, 270)
            // (p, q) → (−q + 270, −p + 480): the mirror H then the clockwise turn R is H·R.
            case .horizontalThenClockwise: (0, -1, -1, 0, 270, 480)
            }
        }
    }

    /// `upright` (480x270 H.264 + AAC) with a display matrix that mirrors it.
    public static func mirrored(_ mirror: Mirror) -> Recipe {
        Recipe(
            "mirrored-\(mirror.rawValue).mp4", ["-i", "$0", "-c", "copy"], inputs: [upright],
            patch: { url in
                let m = mirror.matrix
                try MP4Boxes.setDisplayMatrix(url, a: m.0, b: m.1, c: m.2, d: m.3, x: m.4, y: m.5)
            })
    }
}

extension Fixtures {
    /// Lossless 8-bit 4:2:0 H.264 (x264 at QP 0): a picture decoded from it is the one encoded, so
    /// two fixtures made of the same pixels decode to the same pixels.
    static let losslessH264 = ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-pix_fmt", "yuv420p"]

    /// 360x640 testsrc2 (portrait in its pixels), 1 s at 30 fps, lossless, with no colour tags at all:
    /// a phone picture stored upright whose matrix Reel must guess.
    public static let untaggedPortrait = Recipe("untagged-portrait.mp4", video("360x640") + losslessH264)

    /// `untaggedPortrait`'s pixels turned a quarter clockwise (640x360), lossless, untagged.
    static let untaggedSideways = Recipe(
        "untagged-sideways.mp4", ["-i", "$0", "-vf", "transpose=clock"] + losslessH264, inputs: [untaggedPortrait])

    /// The same picture as `untaggedPortrait`, stored sideways as phones store it: `untaggedSideways`
    /// with a quarter-turn display matrix (remuxed, as `rotated` is; ffmpeg shows it turned back, and
    /// its frames then equal `untaggedPortrait`'s exactly), shown as 360x640.
    public static let untaggedPortraitRotated = Recipe(
        "untagged-portrait-rotated.mp4", ["-i", "$0", "-c", "copy", "-metadata:s:v:0", "rotate=90"],
        inputs: [untaggedSideways])
}
