import Foundation
import ReelExport
import TestSupport
import Testing

/// HLG and PQ sources under 8-bit presets come out as SDR BT.709 that looks like the SDR original
/// they were made from (BT.2408: reference white to SDR white), checked on the pixels with ffmpeg's
/// filters, and with no HDR signalling left.
@Suite("HDR to SDR", .tags(.media), .timeLimit(.minutes(10)))
struct HDRToSDRTests {
    /// BT.709 SDR tags, 8-bit 4:2:0, and no HDR side data on the stream or its first frame.
    static func expectSDR(_ url: URL) async throws {
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.pix_fmt == "yuv420p")
        #expect(video.color_primaries == "bt709" && video.color_transfer == "bt709" && video.color_space == "bt709")
        #expect(video.color_range == "tv")
        #expect(video.side_data_list == nil, "\(video.side_data_list.map { $0.map(\.side_data_type) } ?? [])")
        // x264 writes its settings in an unregistered user data SEI; nothing else may be there.
        let frame = try await ProbedFile.firstFrameSideData(url).compactMap(\.side_data_type)
        #expect(frame.allSatisfy { $0.contains("User Data Unregistered") }, "\(frame)")
        let track = try await MediaInfoTool.track("Video", of: url)
        #expect(track["HDR_Format"] == nil && track["colour_primaries"] == "BT.709", "\(track)")
    }

    @Test(arguments: [Fixtures.hlg, Fixtures.pq])
    func hdrComesOutLikeTheSDROriginal(_ recipe: Fixtures.Recipe) async throws {
        let (url, _) = try await export(recipe, preset: "1280x720")
        try await Self.expectSDR(url)
        try await Self.expectLikeTheSDROriginal(url, source: recipe)
    }

    /// An 8-bit HLG source is tone-mapped under an HEVC preset that keeps 10-bit HDR (it has no high
    /// bit depth to keep) as under an H.264 one, and looks like the SDR original it was made from.
    @Test(arguments: ["HEVC1920x1080", "1280x720"])
    func eightBitHLGIsToneMapped(_ preset: String) async throws {
        let plan = try #require(try await ColourPlanTests.plan(Fixtures.hlg8Bit, preset: preset).video)
        #expect(plan.color == .toneMapped && plan.sourceDynamicRange == .hlg && plan.pixelFormat == "yuv420p")
        let (url, _) = try await export(Fixtures.hlg8Bit, preset: preset)
        try await Self.expectSDR(url)
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.codec_name == (preset.hasPrefix("HEVC") ? "hevc" : "h264"))
        #expect(video.width == 1280 && video.height == 720)
        try await Self.expectLikeTheSDROriginal(url, source: Fixtures.hlg8Bit)
    }

    /// Within 30 dB PSNR of the SDR original the HDR fixture `source` was made from, with at least 85 %
    /// of its saturation, and the mean luma of zimg's exact inverse of `source` within 1.5 %. That is
    /// itself about 3 % above the original's on testsrc2 (2.3 % on the bars): 4:2:0 chroma averaged in
    /// BT.2020 HLG or PQ instead of BT.709, and 10-bit codes, lift dark channels of saturated colours.
    /// (Checked against the original's within 3 % before: an exact conversion fails that, 3.1 %.)
    static func expectLikeTheSDROriginal(
        _ url: URL, source: Fixtures.Recipe, original recipe: Fixtures.Recipe = Fixtures.sdrOriginal
    ) async throws {
        let original = try await Fixtures.url(recipe)
        let psnr = try await Pictures.psnr(url, against: original)
        #expect(psnr.average >= 30, "\(psnr)")
        let output = try await Pictures.averages(url)
        let truth = try await Pictures.averages(original)
        #expect(output.saturation >= 0.85 * truth.saturation, "saturation \(output.saturation) of \(truth.saturation)")
        let exact = try await Pictures.averages(
            try await Fixtures.url(source), filters: "zscale=t=bt709:m=bt709:p=bt709:r=tv:npl=203:agamma=0")
        #expect(
            abs(output.luma - exact.luma) <= 0.015 * exact.luma,
            "luma \(output.luma) of zimg's \(exact.luma) (the original's \(truth.luma))")
    }

    /// Hues are the source's: from HLG and from PQ, on testsrc2 and on 100 % colour bars, the export's
    /// mean CIEDE2000 against the SDR original is at most 0.5 above what zimg's exact inverse of the
    /// same HDR file scores (the HDR encode's own losses; the issue asks for 1.0, and 0.5 also keeps
    /// out 0.2.1's fixed roll-off from 85 % of reference white, 0.8-0.9 above on both). Measured:
    /// -0.08 to +0.09.
    @Test(arguments: [
        (Fixtures.hlg, Fixtures.sdrOriginal), (Fixtures.pq, Fixtures.sdrOriginal),
        (Fixtures.barsHLG, Fixtures.barsOriginal), (Fixtures.barsPQ, Fixtures.barsOriginal),
    ])
    func huesAreTheSources(_ source: Fixtures.Recipe, original: Fixtures.Recipe) async throws {
        let (url, _) = try await export(source, preset: "1280x720")
        try await Self.expectSDR(url)
        let score = try await ColourDifference.score(
            url, against: try await Fixtures.url(original), hdrSource: try await Fixtures.url(source),
            times: [0.1, 0.25, 0.4])
        let excess = try #require(score.excess)
        #expect(excess <= 0.5, "\(source): \(score)")
        try await Self.expectLikeTheSDROriginal(url, source: source, original: original)
    }

    /// Each colour bar comes out within CIEDE2000 1.0 of what zimg's exact inverse of the same HDR file
    /// makes of it (measured: at most 0.63; both show the HDR encode's own small leaks, PQ's green bar
    /// 24,252,0 for the original's 0,253,0). 0.2.1's fixed roll-off was up to 2.1 off (bars dimmed to
    /// about 244); HLG's OOTF applied per channel instead of to the luminance makes the red 255,0,53
    /// and the blue 0,57,255 (8.5 and 6.8).
    @Test(arguments: [Fixtures.barsHLG, Fixtures.barsPQ])
    func colourBarsKeepTheirColours(_ source: Fixtures.Recipe) async throws {
        let (url, _) = try await export(source, preset: "1280x720")
        let decode = "scale=in_color_matrix=bt709:in_range=tv:flags=neighbor"
        let output = try await Pictures.firstFrame(url, pixelFormat: "rgb24", filters: decode)
        let zimg = try await Pictures.firstFrame(
            try await Fixtures.url(source), pixelFormat: "rgb24",
            filters: "zscale=t=bt709:m=bt709:p=bt709:r=tv:npl=203:agamma=0," + decode)
        #expect(output.width == zimg.width && output.height == zimg.height)
        /// The mean RGB of the middle of a bar (rows 200-520, the bar's middle 100 columns).
        func bar(_ frame: (width: Int, height: Int, bytes: [UInt8]), _ left: Int) -> [Double] {
            var sum = [0.0, 0.0, 0.0]
            for y in 200..<520 {
                for x in (left + 30)..<(left + 130) {
                    for c in 0..<3 { sum[c] += Double(frame.bytes[(y * frame.width + x) * 3 + c]) }
                }
            }
            return sum.map { $0 / (320 * 100) }
        }
        for (name, left) in Fixtures.bars {
            let got = bar(output, left)
            let want = bar(zimg, left)
            let difference = ColourDifference.ciede2000(ColourDifference.lab(got), ColourDifference.lab(want))
            #expect(
                difference <= 1,
                "\(source) \(name): \(got.map { Int($0.rounded()) }) for \(want.map { Int($0.rounded()) }), ΔE2000 \(difference)"
            )
        }
    }

    /// The single-colour CIEDE2000 the bar test uses gives Sharma, Wu and Dalal's published values
    /// (2005, pairs 1, 7, 13, 16, 19, 24) and `Scripts/deltae.py`'s on a shifted red (4.30).
    @Test func ciede2000GivesThePublishedValues() {
        let pairs: [([Double], [Double], Double)] = [
            ([50, 2.6772, -79.7751], [50, 0, -82.7485], 2.0425), ([50, 0, 0], [50, -1, 2], 2.3669),
            ([50, 2.49, -0.001], [50, -2.49, 0.0009], 7.1792), ([50, 2.49, -0.001], [50, -2.49, 0.0012], 7.2195),
            ([50, 2.5, 0], [73, 25, -18], 27.1492),
            ([60.2574, -34.0099, 36.2677], [60.4626, -34.1751, 39.4387], 1.2644),
        ]
        for (first, second, expected) in pairs {
            let value = ColourDifference.ciede2000(first, second)
            #expect(abs(value - expected) < 0.0001, "\(first) \(second): \(value) for \(expected)")
        }
        let red = ColourDifference.ciede2000(ColourDifference.lab([229, 56, 37]), ColourDifference.lab([250, 8, 0]))
        #expect(abs(red - 4.30) < 0.01, "\(red)")
    }

    /// A 0–1000 cd/m² PQ ramp: monotonic, black to SDR white, and the highlights above reference
    /// white rolled off over many code values (BT.2390's curve up to the picture's peak), with no flat
    /// run at the top: 0.2.1 kept 8 values there and clipped the last third of the ramp flat.
    @Test func aPQRampRollsOffItsHighlights() async throws {
        let (url, _) = try await export(Fixtures.pqRamp, preset: "1280x720")
        try await Self.expectSDR(url)
        let frame = try await Pictures.firstFrame(url, pixelFormat: "gray")
        // Each column's mean over the middle rows (the ramp runs left to right).
        let rows = (frame.height / 4)..<(frame.height * 3 / 4)
        let columns = (0..<frame.width).map { x in
            Double(rows.reduce(0) { $0 + Int(frame.bytes[$1 * frame.width + x]) }) / Double(rows.count)
        }
        let drops = zip(columns, columns.dropFirst()).filter { $1 < $0 - 0.75 }
        #expect(drops.isEmpty, "the ramp goes down: \(drops.prefix(5))")
        #expect(columns.first! <= 17 && columns.last! >= 233, "\(columns.first!) to \(columns.last!)")
        // Reference white (203 cd/m², 58.1 % PQ) is at 77 % of the ramp (which ends at 75.2 % PQ).
        let whiteColumn = Int(0.5806 / 0.751827 * Double(frame.width - 1))
        let highlights = columns[whiteColumn...]
        let levels = Set(highlights.map { Int($0.rounded()) })
        #expect(levels.count >= 20, "highlights on \(levels.sorted())")
        // Reference white makes room for them without going dim: 211 of 235 (limited range; 227 of
        // 255 here, as ffmpeg's gray is full range).
        #expect((215...240).contains(columns[whiteColumn]), "reference white at \(columns[whiteColumn])")
        // Only the ramp's last few columns reach the top value, and the columns just below it still
        // differ from it: no clipped run.
        let clipped = highlights.filter { $0 >= columns.last! - 0.5 }.count
        #expect(Double(clipped) < 0.05 * Double(highlights.count), "\(clipped) of \(highlights.count) at the top")
        let column800 = Int(0.7275 / 0.751827 * Double(frame.width - 1))
        #expect(columns[column800] < columns.last! - 1.5, "800 cd/m² at \(columns[column800])")
    }

    /// BT.2020 primaries beyond BT.709 keep their hue and luminance (only saturation is given up);
    /// BT.709's primaries inside BT.2020 come out as themselves.
    @Test(arguments: ["arib-std-b67", "smpte2084"])
    func gamutMappingKeepsHue(_ transfer: String) async throws {
        let (url, _) = try await export(Fixtures.gamut(transfer), preset: "1280x720")
        try await Self.expectSDR(url)
        let frame = try await Pictures.firstFrame(
            url, pixelFormat: "rgb24", filters: "scale=in_color_matrix=bt709:in_range=tv:flags=neighbor")
        for (index, patch) in Fixtures.gamutPatches.enumerated() {
            // Mean of the patch's middle, back to linear light (BT.1886).
            var sum = [0.0, 0.0, 0.0]
            var count = 0.0
            let left = index * Fixtures.gamutPatchWidth
            for y in 24..<72 {
                for x in (left + 24)..<(left + 72) {
                    for c in 0..<3 { sum[c] += pow(Double(frame.bytes[(y * frame.width + x) * 3 + c]) / 255, 2.4) }
                    count += 1
                }
            }
            let output = sum.map { $0 / count }
            let expected = Colour.bt709(fromBT2020: patch.rgb)
            let hueError = Colour.hueDifference(output, expected)
            #expect(hueError <= 2, "\(patch.name): hue off by \(hueError)° (\(output) for \(expected))")
            let luminance = Colour.luminance(output)
            let expectedLuminance = Colour.luminance(expected)
            #expect(
                abs(luminance - expectedLuminance) <= 0.1 * expectedLuminance,
                "\(patch.name): luminance \(luminance) for \(expectedLuminance)")
            if patch.name.hasPrefix("bt709") {
                #expect(Colour.saturation(output) >= 0.9, "\(patch.name): saturation \(Colour.saturation(output))")
            }
        }
    }

    /// Linear-light colour arithmetic for the gamut test.
    enum Colour {
        /// Linear BT.709 RGB (reference white 1) of a BT.2020 patch given in 1/65535 of reference white.
        static func bt709(fromBT2020 rgb: (Int, Int, Int)) -> [Double] {
            let (r, g, b) = (Double(rgb.0) / 65535, Double(rgb.1) / 65535, Double(rgb.2) / 65535)
            return [
                1.6604910 * r - 0.5876411 * g - 0.0728499 * b,
                -0.1245505 * r + 1.1328999 * g - 0.0083494 * b,
                -0.0181508 * r - 0.1005789 * g + 1.1187297 * b,
            ]
        }
        static func luminance(_ rgb: [Double]) -> Double { 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] }
        /// (max − min) / max.
        static func saturation(_ rgb: [Double]) -> Double {
            let high = rgb.max()!
            return high > 0 ? (high - rgb.min()!) / high : 0
        }
        /// The angle in degrees between two colours' directions away from grey, in the opponent plane
        /// (R − (G + B)/2, √3/2 (G − B)): moving toward grey of the same luminance does not change it.
        static func hueDifference(_ a: [Double], _ b: [Double]) -> Double {
            func angle(_ c: [Double]) -> Double { atan2(0.866_025 * (c[1] - c[2]), c[0] - (c[1] + c[2]) / 2) }
            var difference = abs(angle(a) - angle(b)) * 180 / .pi
            if difference > 180 { difference = 360 - difference }
            return difference
        }
    }
}

/// The plan (`reel export --estimate --json`) says what happens to the colours before any work.
@Suite("Colour in export plans", .tags(.media), .timeLimit(.minutes(6)))
struct ColourPlanTests {
    static func plan(_ recipe: Fixtures.Recipe, preset: String) async throws -> ExportPlan {
        let session = try ExportSession(asset: try await Asset.load(try await Fixtures.url(recipe)), presetName: preset)
        session.forceTranscode = true
        return try session.determineCompatibility()
    }

    @Test func toneMappingKeptHDRAndMirrorsAreInThePlan() async throws {
        let hlg = try #require(try await Self.plan(Fixtures.hlg, preset: "1280x720").video)
        #expect(hlg.color == .toneMapped && hlg.sourceDynamicRange == .hlg && hlg.pixelFormat == "yuv420p")
        #expect(hlg.toneMapping?.transfer == .hlg && hlg.toneMapping?.peakLuminance == 1000)
        #expect(hlg.colorTransfer == "bt709" && hlg.hdrMetadata == nil)
        let dv = try #require(try await Self.plan(Fixtures.dolbyVision81, preset: "960x540").video)
        #expect(dv.color == .toneMapped && dv.sourceDynamicRange == .dolbyVision && dv.toneMapping?.transfer == .pq)
        let kept = try #require(try await Self.plan(Fixtures.pqWithBoxes, preset: "HEVC1920x1080").video)
        #expect(kept.color == .keepSource && kept.colorTransfer == "smpte2084" && kept.pixelFormat == "yuv420p10le")
        #expect(kept.hdrMetadata?.contentLightLevel?.maxContentLightLevel == 800)
        #expect(kept.hdrMetadata?.masteringDisplay?.maxLuminance == 4000)
        let sdr = try #require(try await Self.plan(Fixtures.hevc10, preset: "HEVC1920x1080").video)
        #expect(sdr.color == .keepSource && sdr.sourceDynamicRange == .sdr && sdr.hdrMetadata == nil)
        let mirrored = try #require(try await Self.plan(Fixtures.mirrored(.vertical), preset: "1280x720").video)
        #expect(mirrored.mirrored && mirrored.rotation == 180 && mirrored.color == .bt709)
        // The JSON carries it all.
        let data = try JSONCoding.lineEncoder.encode(kept)
        #expect(try JSONCoding.decoder.decode(ExportPlan.Video.self, from: data) == kept)
        let text = String(decoding: try JSONCoding.lineEncoder.encode(hlg), as: UTF8.self)
        #expect(text.contains("\"tone-mapped\"") && text.contains("\"peakLuminance\""), "\(text)")
    }
}
