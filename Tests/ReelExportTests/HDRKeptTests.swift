import Foundation
import ReelExport
import TestSupport
import Testing

/// HEVC presets keep 10-bit HLG and PQ with their tags and HDR10 metadata (SEI and `mdcv`/`clli`);
/// Dolby Vision is recognised, its base layer exported without any Dolby Vision signalling when
/// re-encoding, kept whole by Passthrough, and profile 5 refused before any work.
@Suite("HDR kept and Dolby Vision", .tags(.process, .media), .timeLimit(.minutes(10)))
struct HDRKeptTests {
    /// The side data types of a stream (ffprobe).
    static func sideData(_ stream: ProbedFile.Stream?) -> [String] {
        (stream?.side_data_list ?? []).compactMap(\.side_data_type)
    }

    @Test(arguments: [(Fixtures.pq, 1000, 1000.0), (Fixtures.pqWithBoxes, 800, 4000.0)])
    func hdr10MetadataIsKeptInTheSEIAndTheMP4(_ recipe: Fixtures.Recipe, maxCLL: Int, peak: Double) async throws {
        let (url, _) = try await export(recipe, preset: "HEVC1920x1080")
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.pix_fmt == "yuv420p10le" && video.codec_tag_string == "hvc1")
        #expect(video.color_transfer == "smpte2084" && video.color_primaries == "bt2020")
        // The container's boxes (mdcv, clli)…
        let light = try #require(video.side_data_list?.first { $0.side_data_type == "Content light level metadata" })
        let display = try #require(video.side_data_list?.first { $0.side_data_type == "Mastering display metadata" })
        #expect(light.max_content == maxCLL && ProbedFile.Stream.SideData.value(display.max_luminance) == peak)
        // …and the SEI of the frames, which a decoder sees.
        let frame = try await ProbedFile.firstFrameSideData(url)
        let seiLight = try #require(frame.first { $0.side_data_type == "Content light level metadata" })
        let seiDisplay = try #require(frame.first { $0.side_data_type == "Mastering display metadata" })
        #expect(seiLight.max_content == maxCLL && ProbedFile.Stream.SideData.value(seiDisplay.max_luminance) == peak)
        #expect(seiDisplay.red_x == display.red_x && seiDisplay.white_point_x == display.white_point_x)
        let track = try await MediaInfoTool.track("Video", of: url)
        #expect(track["HDR_Format_Compatibility"]?.contains("HDR10") == true, "\(track)")
        #expect(track["MaxCLL"]?.hasPrefix("\(maxCLL)") == true, "\(track)")
    }

    @Test func hlgIsKeptWithoutStaticMetadata() async throws {
        let (url, _) = try await export(Fixtures.hlg, preset: "HEVCHighestQuality")
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.pix_fmt == "yuv420p10le" && video.color_transfer == "arib-std-b67")
        #expect(Self.sideData(video).isEmpty, "\(Self.sideData(video))")
    }

    // MARK: - Dolby Vision

    /// NAL unit types of an HEVC stream, in order (the stream copied to Annex B by ffmpeg).
    static func nalTypes(_ url: URL) async throws -> [Int] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nal-\(UUID().uuidString).hevc")
        defer { try? FileManager.default.removeItem(at: file) }
        try await Tools.ffmpeg(["-i", url.path, "-map", "0:v:0", "-c", "copy", "-f", "hevc", file.path])
        let data = [UInt8](try Data(contentsOf: file))
        var types: [Int] = []
        var index = 0
        while index + 3 < data.count {
            if data[index] == 0, data[index + 1] == 0, data[index + 2] == 1 {
                types.append(Int(data[index + 3] >> 1) & 0x3f)
                index += 3
            } else {
                index += 1
            }
        }
        return types
    }

    @Test(arguments: [Fixtures.dolbyVision84, Fixtures.dolbyVision81])
    func reencodedToSDRTheBaseLayerIsToneMappedAndDolbyVisionDropped(_ recipe: Fixtures.Recipe) async throws {
        let (url, _) = try await export(recipe, preset: "1280x720")
        try await HDRToSDRTests.expectSDR(url)
        let psnr = try await Pictures.psnr(url, against: try await Fixtures.url(Fixtures.sdrOriginal))
        #expect(psnr.average >= 30, "\(psnr)")
    }

    @Test func reencodedInHEVCTheHLGBaseLayerIsKeptWithoutRPUsOrConfiguration() async throws {
        let (url, _) = try await export(Fixtures.dolbyVisionWithRPU, preset: "HEVC1920x1080")
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.color_transfer == "arib-std-b67" && video.pix_fmt == "yuv420p10le")
        #expect(!Self.sideData(video).contains("DOVI configuration record"), "\(Self.sideData(video))")
        #expect(try MP4Boxes.videoSampleEntry(url).children.allSatisfy { $0 != "dvvC" && $0 != "dvcC" })
        #expect(try await !Self.nalTypes(url).contains(62))
        #expect(try await MediaInfoTool.track("Video", of: url)["HDR_Format"]?.contains("Dolby") != true)
    }

    @Test func passthroughKeepsTheConfigurationAndTheRPUs() async throws {
        let (url, _) = try await export(Fixtures.dolbyVisionWithRPU, preset: "Passthrough")
        let source = try await Fixtures.url(Fixtures.dolbyVisionWithRPU)
        #expect(try await packetHashes(url, stream: "v:0") == packetHashes(source, stream: "v:0"))
        #expect(try await Self.nalTypes(url).filter { $0 == 62 }.count == 15)
        let record = try #require(
            try await ProbedFile.probe(url).video?.side_data_list?.first {
                $0.side_data_type == "DOVI configuration record"
            })
        #expect(record.dv_profile == 8 && record.dv_bl_signal_compatibility_id == 4 && record.rpu_present_flag == 1)
        let entry = try MP4Boxes.videoSampleEntry(url)
        #expect(entry.type == "hvc1" && entry.children.contains("dvvC"), "\(entry)")
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
        #expect(try await MediaInfoTool.track("Video", of: url)["HDR_Format"]?.contains("Dolby Vision") == true)
    }

    /// Profile 5 keeps its `dvh1` sample entry and `dvcC`, with the moov in front (grown into the
    /// space reserved for it) or at the end (grown in place).
    @Test(arguments: [true, false])
    func passthroughKeepsDolbyVisionWhereverTheMoovIs(_ optimize: Bool) async throws {
        let (url, _) = try await export(Fixtures.dolbyVision5, preset: "Passthrough", optimize: optimize)
        let source = try await Fixtures.url(Fixtures.dolbyVision5)
        #expect(try await packetHashes(url, stream: "v:0") == packetHashes(source, stream: "v:0"))
        let entry = try MP4Boxes.videoSampleEntry(url)
        #expect(entry.type == "dvh1" && entry.children.contains("dvcC"), "\(entry)")
        let record = try #require(
            try await ProbedFile.probe(url).video?.side_data_list?.first {
                $0.side_data_type == "DOVI configuration record"
            })
        #expect(record.dv_profile == 5)
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == (optimize ? "Yes" : "No"))
    }

    @Test func profile5IsRefusedBeforeAnyWork() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.dolbyVision5))
        for preset in ["1280x720", "HEVC1920x1080"] {
            let session = try ExportSession(asset: asset, presetName: preset)
            session.forceTranscode = true
            let error = try #require(throws: ExportError.self) { try session.determineCompatibility() }
            #expect(error.code == .unsupportedCodec && error.message.contains("profile 5"), "\(error)")
        }
    }

    @Test func anHEVCPresetCopiesDolbyVisionItCanKeep() async throws {
        let (url, session) = try await export(Fixtures.dolbyVision84, preset: "HEVC1920x1080", forceTranscode: false)
        #expect(session.result?.method == .smartPassthrough)
        let entry = try MP4Boxes.videoSampleEntry(url)
        #expect(entry.children.contains("dvvC"), "\(entry)")
    }
}
