import Foundation
import ReelExport
import TestSupport
import Testing

/// Every re-encoding export is checked with ffprobe and mediainfo, not with Reel's own reader.
@Suite("Export matrix", .tags(.process, .media), .timeLimit(.minutes(10)))
struct ExportMatrixTests {
    struct Case: CustomStringConvertible, Sendable {
        var source: Fixtures.Recipe
        var preset: String
        var type: OutputType
        var width: Int
        var height: Int
        var frames: Int?
        var pixelFormat = "yuv420p"
        var channels: Int? = 2
        var sampleRate: Int? = 48000
        var description: String { "\(source.name) \(preset) \(type)" }
    }

    static let videoPresets: [(String, Int, Int)] = [
        ("LowQuality", 224, 128), ("MediumQuality", 568, 320), ("HighestQuality", 640, 360), ("640x480", 640, 360),
        ("960x540", 640, 360), ("1280x720", 640, 360), ("1920x1080", 640, 360), ("3840x2160", 640, 360),
        ("HEVC1920x1080", 640, 360), ("HEVC3840x2160", 640, 360), ("HEVCHighestQuality", 640, 360),
    ]

    /// Every video preset into every video output type, on the 640x360 landscape clip.
    static let presetCases: [Case] = videoPresets.flatMap { preset, width, height in
        [OutputType.mp4, .mov, .m4v].map { type in
            Case(
                source: Fixtures.landscape, preset: preset, type: type, width: width, height: height, frames: 30,
                channels: preset == "LowQuality" ? 1 : 2)
        }
    }

    /// Awkward sources under a few presets.
    static let sourceCases: [Case] =
        [
            Case(source: Fixtures.fullHD, preset: "MediumQuality", type: .mp4, width: 568, height: 320, frames: 30),
            Case(
                source: Fixtures.fullHD, preset: "LowQuality", type: .mp4, width: 224, height: 128, frames: 30,
                channels: 1),
            Case(source: Fixtures.fullHD, preset: "1280x720", type: .mov, width: 1280, height: 720, frames: 30),
            Case(source: Fixtures.rotated(90), preset: "1280x720", type: .mp4, width: 270, height: 480, frames: 30),
            Case(
                source: Fixtures.rotated(90), preset: "LowQuality", type: .mp4, width: 128, height: 224, frames: 30,
                channels: 1),
            Case(source: Fixtures.rotated(180), preset: "1280x720", type: .mp4, width: 480, height: 270, frames: 30),
            Case(
                source: Fixtures.rotated(270), preset: "MediumQuality", type: .mov, width: 270, height: 480, frames: 30),
            Case(
                source: Fixtures.rotated(270), preset: "HEVC1920x1080", type: .mp4, width: 270, height: 480, frames: 30),
            Case(source: Fixtures.hevc10, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 30),
            Case(
                source: Fixtures.hevc10, preset: "HEVC1920x1080", type: .mp4, width: 640, height: 360, frames: 30,
                pixelFormat: "yuv420p10le"),
            Case(source: Fixtures.anamorphic, preset: "1280x720", type: .mp4, width: 1024, height: 576, frames: 30),
            Case(source: Fixtures.anamorphic, preset: "640x480", type: .mp4, width: 640, height: 360, frames: 30),
            Case(source: Fixtures.fourThree, preset: "1280x720", type: .mp4, width: 640, height: 480, frames: 30),
            Case(source: Fixtures.fourThree, preset: "MediumQuality", type: .mp4, width: 426, height: 320, frames: 30),
            Case(source: Fixtures.tinyOdd, preset: "1280x720", type: .mp4, width: 32, height: 16, frames: 30),
            Case(source: Fixtures.tinyOdd, preset: "HEVCHighestQuality", type: .mov, width: 32, height: 16, frames: 30),
            Case(source: Fixtures.chroma444, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 30),
            Case(
                source: Fixtures.noAudio, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 30,
                channels: nil, sampleRate: nil),
            Case(
                source: Fixtures.surround, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 30,
                channels: 2),
            Case(
                source: Fixtures.mono22k, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 30,
                channels: 1, sampleRate: 48000),
            Case(source: Fixtures.sixty, preset: "MediumQuality", type: .mp4, width: 568, height: 320, frames: 30),
            Case(source: Fixtures.sixty, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 60),
            Case(source: Fixtures.variableRate, preset: "1280x720", type: .mp4, width: 640, height: 360, frames: 30),
        ]
        + Fixtures.legacy.map { recipe in
            let small = recipe.name.hasPrefix("av1")
            return Case(
                source: recipe, preset: "1280x720", type: .mp4, width: small ? 320 : 640, height: small ? 180 : 360,
                frames: 25)
        }

    @Test(arguments: presetCases + sourceCases)
    func exportMatchesThePreset(_ spec: Case) async throws {
        let (url, session) = try await export(spec.source, preset: spec.preset, type: spec.type)
        let source = try await ProbedFile.probe(try await Fixtures.url(spec.source))
        let output = try await ProbedFile.probe(url, countFrames: true)
        let video = try #require(output.video, "no video stream")
        let preset = try PresetLibrary.shipped.preset(named: spec.preset)
        let hevc = preset.video?.codec == .hevc
        #expect(video.codec_name == (hevc ? "hevc" : "h264"))
        if hevc { #expect(video.codec_tag_string == "hvc1") } else { #expect(video.codec_tag_string == "avc1") }
        #expect(
            video.width == spec.width && video.height == spec.height, "got \(video.width ?? 0)x\(video.height ?? 0)")
        #expect(video.pix_fmt == spec.pixelFormat)
        // The source's displayed aspect; square pixels unless the size forces others (`ShapeTests`).
        if var wanted = source.video?.displayAspect, let shown = video.displayAspect {
            if (source.video?.side_data_list ?? []).contains(where: { abs($0.rotation ?? 0) == 90 }) {
                wanted = 1 / wanted
            }
            #expect(abs(shown / wanted - 1) <= 0.01, "shows \(shown), the source \(wanted)")
            if abs(Double(spec.width) / Double(spec.height) / wanted - 1) <= 0.01 {
                #expect(video.sample_aspect_ratio == nil || video.sample_aspect_ratio == "1:1")
            }
        }
        #expect(!video.hasDisplayMatrix, "a rotation tag remains")
        if let frames = spec.frames { #expect(video.frames == frames) }
        if spec.pixelFormat == "yuv420p" {
            #expect(video.color_primaries == "bt709" && video.color_transfer == "bt709" && video.color_space == "bt709")
        }
        // Duration kept (within a frame or an AAC packet).
        let sourceDuration = try #require(source.format.durationSeconds)
        let outputDuration = try #require(output.format.durationSeconds)
        #expect(abs(sourceDuration - outputDuration) < 0.1, "duration \(outputDuration) vs \(sourceDuration)")
        // Audio: AAC-LC, at most 2 channels, 44.1/48 kHz, starting with the video.
        if let channels = spec.channels {
            let audio = try #require(output.audio, "no audio stream")
            #expect(audio.codec_name == "aac" && audio.profile == "LC")
            #expect(audio.channels == channels)
            #expect(audio.sample_rate == spec.sampleRate.map(String.init))
            let offset = (audio.startSeconds ?? 0) - (video.startSeconds ?? 0)
            #expect(abs(offset) < 0.05, "A/V offset \(offset) s")
        } else {
            #expect(output.audio == nil)
        }
        // Moov first, as an independent reader sees it.
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
        #expect(session.result?.networkOptimized == true)
        #expect(contents(of: url.deletingLastPathComponent()) == [url.lastPathComponent])
        if spec.type == .m4v { #expect(output.format.tags?["major_brand"] == "M4V ") }
        if spec.type == .mov { #expect(output.format.tags?["major_brand"] == "qt  ") }
    }

    @Test func rotationTurnsThePixelsLikeFFmpegsAutorotate() async throws {
        for angle in [90, 180, 270] {
            let (url, _) = try await export(Fixtures.rotated(angle), preset: "HighestQuality")
            // ffmpeg's own autorotation of the source is the reference picture.
            let reference = url.deletingLastPathComponent().appendingPathComponent("reference.mkv")
            try await Tools.ffmpeg([
                "-i", try await Fixtures.url(Fixtures.rotated(angle)).path, "-an", "-c:v", "ffv1", reference.path,
            ])
            let result = try await Tools.run(
                "ffmpeg",
                ["-nostdin", "-i", url.path, "-i", reference.path, "-lavfi", "[0:v][1:v]ssim", "-f", "null", "-"])
            let ssim = result.stderr.split(separator: "\n").last { $0.contains("SSIM") }
                .flatMap { $0.split(separator: "All:").last?.split(separator: " ").first }.flatMap { Double($0) }
            #expect((ssim ?? 0) > 0.9, "rotation \(angle): SSIM \(ssim ?? 0) against ffmpeg's autorotate")
        }
    }

    @Test func variableFrameRateTimestampsAreKept() async throws {
        let (url, _) = try await export(Fixtures.variableRate, preset: "1280x720")
        let source = try await ProbedFile.videoTimestamps(try await Fixtures.url(Fixtures.variableRate))
        let output = try await ProbedFile.videoTimestamps(url)
        #expect(source.count == output.count)
        // Both lists may start at different origins (the source's audio starts first); the spacing
        // between frames is what a variable frame rate is.
        let (a0, b0) = (source.first ?? 0, output.first ?? 0)
        for (a, b) in zip(source, output) { #expect(abs((a - a0) - (b - b0)) < 0.002, "\(a) vs \(b)") }
    }

    @Test func frameRateCapDropsEveryOtherFrameOfSixty() async throws {
        let (url, _) = try await export(Fixtures.sixty, preset: "MediumQuality")
        let output = try await ProbedFile.probe(url, countFrames: true)
        #expect(output.video?.frames == 30)
        #expect(abs((output.video?.frameRate ?? 0) - 30) < 0.5)
    }

    @Test func timeRangeExportsThatPartOnly() async throws {
        let (url, _) = try await export(
            Fixtures.landscape, preset: "1280x720", range: TimeRange(start: 0.25, end: 0.75))
        let output = try await ProbedFile.probe(url, countFrames: true)
        #expect(output.video?.frames == 15)
        #expect(abs((output.format.durationSeconds ?? 0) - 0.5) < 0.07)
    }

    @Test func notOptimizedForNetworkPutsMoovLast() async throws {
        let (url, session) = try await export(Fixtures.landscape, preset: "LowQuality", optimize: false)
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "No")
        #expect(session.result?.networkOptimized == false)
    }

    @Test func appleM4AWritesAudioOnly() async throws {
        for type in [OutputType.m4a, .mp4] {
            let (url, _) = try await export(Fixtures.surround, preset: "AppleM4A", type: type)
            let output = try await ProbedFile.probe(url)
            #expect(output.video == nil)
            #expect(output.audio?.codec_name == "aac" && output.audio?.channels == 2)
            if type == .m4a { #expect(output.format.tags?["major_brand"] == "M4A ") }
            #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
        }
    }
}
