import Foundation
import ReelExport
import ReelMedia
import TestSupport
import Testing

/// The AV1 presets (SVT-AV1 through FFmpeg 5.1): `av01` in MP4 with the moov first, BT.709 from SDR,
/// 10-bit HLG and PQ kept with their HDR10 metadata as the HEVC presets keep them, pictures close to
/// ffmpeg's own scaling of the source; what they cannot make is refused before any work.
@Suite("AV1 presets", .tags(.process, .media), .timeLimit(.minutes(10)))
struct AV1PresetTests {
    /// ffmpeg's SSIM (`All`, every frame paired by order) of `url` against `reference` scaled by
    /// ffmpeg to `url`'s size.
    static func ssim(_ url: URL, against reference: URL, width: Int, height: Int) async throws -> Double {
        let byOrder = "settb=1/30,setpts=N"
        let graph =
            "[0:v]\(byOrder),format=yuv420p[a];[1:v]\(byOrder),scale=\(width):\(height):flags=bicubic,"
            + "format=yuv420p[b];[a][b]ssim"
        let result = try await Tools.run(
            "ffmpeg",
            ["-nostdin", "-hide_banner", "-i", url.path, "-i", reference.path, "-lavfi", graph, "-f", "null", "-"])
        guard result.status == 0, let match = result.stderr.firstMatch(of: #/All:([0-9.]+)/#),
            let value = Double(match.1)
        else { throw ToolFailure(message: "ssim of \(url.path): \(result.stderr)") }
        return value
    }

    @Test func av1In720pIsAv01WithBT709AndTheMoovFirst() async throws {
        let (url, session) = try await export(Fixtures.fullHD, preset: "AV1_1280x720")
        #expect(session.result?.method == .transcode)
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.codec_name == "av1" && video.codec_tag_string == "av01", "\(video)")
        #expect(video.width == 1280 && video.height == 720)
        #expect(video.pix_fmt == "yuv420p")
        #expect(video.color_primaries == "bt709" && video.color_transfer == "bt709" && video.color_space == "bt709")
        #expect(video.color_range == "tv")
        let entry = try MP4Boxes.videoSampleEntry(url)
        #expect(entry.type == "av01" && entry.children.contains("av1C"), "\(entry)")
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
        let source = try await Fixtures.url(Fixtures.fullHD)
        let ssim = try await Self.ssim(url, against: source, width: 1280, height: 720)
        #expect(ssim >= 0.95, "SSIM \(ssim)")
        let psnr = try await Pictures.psnr(url, against: source, referenceFilters: "scale=1280:720:flags=bicubic")
        #expect(psnr.average >= 32, "\(psnr)")
    }

    @Test(arguments: [(Fixtures.pq, 1000, 1000.0), (Fixtures.pqWithBoxes, 800, 4000.0)])
    func hdr10IsKeptWithItsMetadataInTheStreamAndTheMP4(_ recipe: Fixtures.Recipe, maxCLL: Int, peak: Double)
        async throws
    {
        let (url, _) = try await export(recipe, preset: "AV1_1920x1080")
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.codec_tag_string == "av01" && video.pix_fmt == "yuv420p10le")
        #expect(video.color_transfer == "smpte2084" && video.color_primaries == "bt2020")
        #expect(video.color_space == "bt2020nc" && video.color_range == "tv")
        // The container's boxes (mdcv, clli)…
        let light = try #require(video.side_data_list?.first { $0.side_data_type == "Content light level metadata" })
        let display = try #require(video.side_data_list?.first { $0.side_data_type == "Mastering display metadata" })
        #expect(light.max_content == maxCLL && ProbedFile.Stream.SideData.value(display.max_luminance) == peak)
        // …and the metadata OBUs of the stream, which a decoder (libdav1d) sees.
        let frame = try await ProbedFile.firstFrameSideData(url)
        let obuLight = try #require(frame.first { $0.side_data_type == "Content light level metadata" })
        let obuDisplay = try #require(frame.first { $0.side_data_type == "Mastering display metadata" })
        #expect(obuLight.max_content == maxCLL)
        let obuPeak = try #require(ProbedFile.Stream.SideData.value(obuDisplay.max_luminance))
        #expect(abs(obuPeak - peak) < 1, "\(obuPeak)")
    }

    @Test func hlgIsKeptWithoutStaticMetadata() async throws {
        let (url, _) = try await export(Fixtures.hlg, preset: "AV1HighestQuality")
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.codec_name == "av1" && video.pix_fmt == "yuv420p10le")
        #expect(video.color_transfer == "arib-std-b67" && video.color_primaries == "bt2020")
        #expect(video.color_space == "bt2020nc")
        #expect(HDRKeptTests.sideData(video).isEmpty, "\(HDRKeptTests.sideData(video))")
    }

    @Test func m4vHoldsAV1AndQuickTimeIsRefusedBeforeAnyWork() async throws {
        let (url, _) = try await export(Fixtures.landscape, preset: "AV1_1280x720", type: .m4v)
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.codec_tag_string == "av01")
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "AV1_1280x720")
        session.outputFileType = .mov
        let error = try #require(throws: ExportError.self) { try session.determineCompatibility() }
        #expect(error.code == .incompatiblePreset && error.message.contains("--type mp4"), "\(error)")
    }

    @Test func aPictureUnder64PixelsIsRefused() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.tiny12))
        let session = try ExportSession(asset: asset, presetName: "AV1HighestQuality")
        session.forceTranscode = true
        let error = try #require(throws: ExportError.self) { try session.determineCompatibility() }
        #expect(error.code == .incompatiblePreset && error.message.contains("64 pixels"), "\(error)")
    }
}

extension AV1PresetTests {
    /// ReelMedia's CODECS string of an AV1 stream against one worked out from ffprobe's profile,
    /// level and pixel format, for an 8-bit SDR and a 10-bit HDR export.
    @Test(arguments: [(Fixtures.fullHD, "AV1_1280x720"), (Fixtures.pq, "AV1_1920x1080")])
    func theCodecStringMatchesFFprobe(_ recipe: Fixtures.Recipe, preset: String) async throws {
        let (url, _) = try await export(recipe, preset: preset)
        let videoOnly = url.deletingLastPathComponent().appendingPathComponent("video.mp4")
        try await Tools.ffmpeg(["-i", url.path, "-map", "0:v:0", "-c", "copy", videoOnly.path])
        let video = try #require(try await ProbedFile.probe(url).video)
        let level = try #require(video.level)
        #expect(video.profile == "Main")
        let depth = video.pix_fmt == "yuv420p10le" ? "10" : "08"
        let expected = "av01.0.\(String(format: "%02d", level))M.\(depth)"
        #expect(try CodecString.ofInitSegment(at: videoOnly.path) == expected)
    }
}
