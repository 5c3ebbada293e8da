import Foundation
import ReelExport
import TestSupport
import Testing

/// Passthrough of every stream MP4 and QuickTime can hold: each pair of codecs either copies into a
/// file an independent reader decodes whole, or is refused before any work, naming codec and type.
@Suite("Passthrough codecs", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PassthroughCodecTests {
    /// A 2 s 320x240 source with one video and one audio codec in its usual container.
    struct Source: Sendable, CustomStringConvertible {
        var name: String
        var video: [String]
        var audio: [String]
        var videoCodec: String
        var audioCodec: String
        var description: String { name }

        var recipe: Fixtures.Recipe {
            Fixtures.Recipe(
                "codec-\(name)",
                [
                    "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=2", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=48000:duration=2", "-ac", "2",
                ] + video + audio)
        }
    }

    static let x264 = ["-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-pix_fmt", "yuv420p"]
    static let vp9Opus = Source(
        name: "vp9-opus.webm", video: ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"],
        audio: ["-c:a", "libopus"], videoCodec: "vp9", audioCodec: "opus")
    static let vp8Vorbis = Source(
        name: "vp8-vorbis.webm", video: ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8"],
        audio: ["-c:a", "libvorbis"], videoCodec: "vp8", audioCodec: "vorbis")
    static let theoraVorbis = Source(
        name: "theora-vorbis.ogg", video: ["-c:v", "libtheora"], audio: ["-c:a", "libvorbis"],
        videoCodec: "theora", audioCodec: "vorbis")
    static let mpeg4MP3 = Source(
        name: "mpeg4-mp3.avi", video: ["-c:v", "mpeg4", "-bf", "0"], audio: ["-c:a", "libmp3lame"],
        videoCodec: "mpeg4", audioCodec: "mp3")
    static let h264AC3 = Source(
        name: "h264-ac3.mkv", video: x264, audio: ["-c:a", "ac3"], videoCodec: "h264", audioCodec: "ac3")
    static let h264FLAC = Source(
        name: "h264-flac.mkv", video: x264, audio: ["-c:a", "flac"], videoCodec: "h264", audioCodec: "flac")
    static let h264ALAC = Source(
        name: "h264-alac.mov", video: x264, audio: ["-c:a", "alac"], videoCodec: "h264", audioCodec: "alac")
    static let h264Opus = Source(
        name: "h264-opus.mkv", video: x264, audio: ["-c:a", "libopus"], videoCodec: "h264", audioCodec: "opus")
    static let h264Vorbis = Source(
        name: "h264-vorbis.mkv", video: x264, audio: ["-c:a", "libvorbis"], videoCodec: "h264", audioCodec: "vorbis")

    /// nil: copied; else the codec the refusal names.
    static let cases: [(Source, OutputType, String?)] = [
        (vp9Opus, .mp4, nil), (vp9Opus, .mov, "vp9"),
        (vp8Vorbis, .mp4, "vp8"), (vp8Vorbis, .mov, "vp8"),
        (theoraVorbis, .mp4, "theora"), (theoraVorbis, .mov, "theora"),
        (mpeg4MP3, .mp4, nil), (mpeg4MP3, .mov, nil),
        (h264AC3, .mp4, nil), (h264AC3, .mov, nil),
        (h264FLAC, .mp4, "flac"), (h264FLAC, .mov, "flac"),
        (h264ALAC, .mp4, nil), (h264ALAC, .mov, nil),
        (h264Opus, .mp4, nil), (h264Opus, .mov, "opus"),
        (h264Vorbis, .mp4, "vorbis"), (h264Vorbis, .mov, "vorbis"),
    ]

    @Test(arguments: cases)
    func copiesOrRefusesBeforeWork(_ source: Source, _ type: OutputType, _ refusedCodec: String?) async throws {
        let input = try await Fixtures.url(source.recipe)
        let folder = Fixtures.scratchFolder("codec-pair")
        let output = folder.appendingPathComponent("out.\(type.fileExtension)")
        let session = try ExportSession(asset: try await Asset.load(input), presetName: "Passthrough")
        session.outputFileType = type
        session.outputURL = output
        if let refusedCodec {
            #expect {
                try session.determineCompatibility()
            } throws: { error in
                let error = error as! ExportError
                return error.code == .incompatiblePreset && !error.isRetryable
                    && error.message.contains("cannot put \(refusedCodec)")
                    && error.message.contains("in a \(type.rawValue) file")
            }
            await #expect(throws: ExportError.self) { try await session.export() }
            #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true)
            return
        }
        try await session.export()
        let result = try #require(session.result)
        #expect(result.method == .passthrough)
        #expect(result.width == 320 && result.height == 240, "\(result)")
        #expect(result.videoCodec == source.videoCodec && result.audioCodec == source.audioCodec)

        // An independent reader sees the same codecs, and decodes every frame without an error.
        let probed = try await ProbedFile.probe(output, countFrames: true)
        let original = try await ProbedFile.probe(input, countFrames: true)
        #expect(probed.video?.codec_name == source.videoCodec && probed.audio?.codec_name == source.audioCodec)
        #expect(probed.video?.width == 320 && probed.video?.height == 240)
        #expect(probed.video?.frames == original.video?.frames, "\(String(describing: probed.video?.frames))")
        #expect(abs((probed.format.durationSeconds ?? 0) - 2) < 0.1, "\(String(describing: probed.format.duration))")
        let decoded = try await Tools.run("ffmpeg", ["-v", "error", "-i", output.path, "-f", "null", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        // The decoded pictures are the source's (same frames, same order).
        let frames = try await Tools.run(
            "ffmpeg", ["-v", "error", "-i", output.path, "-map", "0:v", "-f", "framemd5", "-"])
        let sourceFrames = try await Tools.run(
            "ffmpeg", ["-v", "error", "-i", input.path, "-map", "0:v", "-f", "framemd5", "-"])
        #expect(hashes(frames.stdout) == hashes(sourceFrames.stdout))
    }

    /// The MD5 column of ffmpeg's framemd5 output.
    func hashes(_ text: String) -> [Substring] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
    }
}
