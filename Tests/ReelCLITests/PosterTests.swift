import Foundation
import TestSupport
import Testing

/// `reel export --poster`: `<output name>.jpg` beside the video, the video's own frame at 10 % of
/// it, published with the video or not at all.
@Suite("Posters with exports", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PosterTests {
    /// The JPEG is BT.601 full range (JFIF); a re-encoded video is BT.709: compared as ffmpeg converts
    /// them. A copied one keeps the untagged SD source's BT.601.
    static func matrix(_ options: [String]) -> String? {
        options.contains("Passthrough") ? nil : "scale=in_color_matrix=bt601:out_color_matrix=bt709"
    }

    /// Re-encoded: the frame taken in the pipeline is the one the video shows at 10 % (1.2 s of 12);
    /// copied (Passthrough): the source's frame there, read on its own.
    @Test(arguments: [["--preset", "640x480", "--force-transcode"], ["--preset", "Passthrough"]])
    func thePosterIsTheVideosFrameAtATenth(_ options: [String]) async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("poster")
        let video = folder.appendingPathComponent("clip.mp4")
        let result = try await ReelBinary.run(["export", source.path, "--poster", "-o", video.path] + options)
        #expect(result.status == 0, "\(result.stderr)")
        let poster = folder.appendingPathComponent("clip.jpg")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["clip.jpg", "clip.mp4"], "\(names)")
        let picture = try #require(try await ProbedFile.probe(poster).video)
        let moving = try #require(try await ProbedFile.probe(video).video)
        #expect(picture.codec_name == "mjpeg" && picture.width == moving.width && picture.height == moving.height)
        // The exported video's frame at 1.2 s, and its neighbour for contrast.
        let right = try await Stills.psnr(poster, against: video, at: 1.2, imageFilters: Self.matrix(options))
        let next = try await Stills.psnr(poster, against: video, at: 1.24, imageFilters: Self.matrix(options))
        #expect(right.average >= 33 && right.average > next.average + 5, "\(right) vs next \(next)")
        // The result names the poster: the human line, and --json's result (path, bytes, size, time).
        let bytes = try #require(try FileManager.default.attributesOfItem(atPath: poster.path)[.size] as? Int)
        #expect(result.stdout.contains("wrote \(poster.path) (poster, \(moving.width ?? 0)x\(moving.height ?? 0)"))
        let again = try await ReelBinary.run(
            ["export", source.path, "--poster", "--overwrite", "--json", "-o", video.path] + options)
        let completed = try #require(
            again.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.last { $0["event"] as? String == "completed" }, "\(again.stdout) \(again.stderr)")
        let named = try #require((completed["result"] as? [String: Any])?["poster"] as? [String: Any])
        #expect(named["path"] as? String == poster.path && named["width"] as? Int == moving.width)
        #expect(named["height"] as? Int == moving.height && abs((named["seconds"] as? Double ?? 0) - 1.2) < 0.001)
        let rewritten = try #require(try FileManager.default.attributesOfItem(atPath: poster.path)[.size] as? Int)
        #expect(named["bytes"] as? Int == rewritten && abs(rewritten - bytes) < bytes / 10)
    }

    /// An HLG export's poster is taken after the tone mapping: the SDR video's own frame (at 10 % of
    /// 0.5 s: the first frame at or after 0.05 s, 0.067 s at 30 fps).
    @Test func anHDRExportsPosterIsToneMappedLikeItsVideo() async throws {
        let source = try await Fixtures.url(Fixtures.hlg)
        let folder = Fixtures.scratchFolder("poster-hdr")
        let video = folder.appendingPathComponent("clip.mp4")
        let result = try await ReelBinary.run([
            "export", source.path, "--preset", "1280x720", "--poster", "-o", video.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let poster = folder.appendingPathComponent("clip.jpg")
        let matrix = Self.matrix(["--preset", "1280x720"])
        let right = try await Stills.psnr(poster, against: video, at: 1.0 / 15, imageFilters: matrix)
        let raw = try await Stills.psnr(poster, against: source, at: 1.0 / 15, imageFilters: matrix)
        #expect(right.average >= 35 && right.average > raw.average + 5, "\(right) vs the HLG frame \(raw)")
    }

    /// An export that fails after the poster was taken (its video fails verification) leaves
    /// neither file, nor any temporary one.
    @Test func aFailedExportLeavesNoPoster() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("poster-failed")
        let video = folder.appendingPathComponent("clip.mp4")
        let result = try await ReelBinary.run(
            ["export", source.path, "--preset", "640x480", "--force-transcode", "--poster", "-o", video.path],
            environment: ProcessInfo.processInfo.environment.merging(["REEL_TEST_OUTPUT_FAULT": "truncate"]) { $1 })
        #expect(result.status != 0 && result.stderr.contains("verification"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
    }

    /// A poster already there is refused before any work, as the video's name is, unless --overwrite.
    @Test func anExistingPosterIsRefusedUnlessOverwriting() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("poster-exists")
        let video = folder.appendingPathComponent("clip.mp4")
        try Data("old".utf8).write(to: folder.appendingPathComponent("clip.jpg"))
        let refused = try await ReelBinary.run([
            "export", source.path, "--preset", "Passthrough", "--poster", "-o", video.path,
        ])
        #expect(refused.status == 74 && refused.stderr.contains("clip.jpg already exists"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: video.path))
        let replaced = try await ReelBinary.run(
            ["export", source.path, "--preset", "Passthrough", "--poster", "--overwrite", "-o", video.path])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try await ProbedFile.probe(folder.appendingPathComponent("clip.jpg")).video?.codec_name == "mjpeg")
    }
}
