import Foundation
import TestSupport
import Testing

@testable import ReelLibrary

/// Thumbnails and posters of library assets (issue 22 item 1: "`reel thumbnail <asset or
/// library:id>` … A Live or Motion Photo's poster is taken at its still's moment when it comes from
/// the library"): run through `reel` as a user would, every picture compared by PSNR with ffmpeg's
/// own frame at the still's moment, read from the movie (or the Motion Photo's embedded MP4, cut out
/// of the file with its byte range for ffmpeg).
@Suite("library thumbnails", .tags(.process), .timeLimit(.minutes(10)))
struct LibraryThumbnailTests {
    /// One `--json` line of `reel thumbnail`.
    struct Line: Decodable {
        var requestedTime: Double
        var actualTime: Double
        var file: String
        var width: Int
        var height: Int
    }

    static func lines(_ result: ToolResult) throws -> [Line] {
        try result.stdout.split(separator: "\n").filter { $0.contains("actualTime") }.map {
            try JSONDecoder().decode(Line.self, from: Data($0.utf8))
        }
    }

    /// ffmpeg's frame at `time` is the picture, and the frames beside it are not: by `margin` dB
    /// (testsrc2 changes every frame; a phone's neighbouring frames differ less, 4.5 dB here).
    static func expectFrame(
        _ image: URL, of movie: URL, at time: Double, frame: Double, margin: Double = 5
    ) async throws {
        let right = try await Stills.psnr(image, against: movie, at: time)
        let before = try await Stills.psnr(image, against: movie, at: max(0, time - frame))
        let after = try await Stills.psnr(image, against: movie, at: time + frame)
        #expect(
            right.average >= 33 && right.average > before.average + margin
                && right.average > after.average + margin,
            "\(image.lastPathComponent): \(right) against \(before) before and \(after) after")
    }

    @Test(
        "a Live Photo: no time means its still's moment (exact), --at still mixes with others, --poster and a queued set take it too"
    )
    func livePhotoStill() async throws {
        let setup = try LibraryExportTests.Setup("thumb-live")
        let identifier = "5E1B3C2A-7777-4222-8333-944455556666"
        try await LibraryFixtures.still(identifier, at: setup.root.appendingPathComponent("IMG_0002.HEIC"))
        let movie = setup.root.appendingPathComponent("IMG_0002.MOV")
        // 30 fps for 3 s; the still at 1.5 s, frame 45, far from the only keyframe at 0.
        try await LibraryFixtures.movie(identifier, at: movie, seconds: 3, stillSeconds: 1.5)
        _ = try await setup.library.scan([setup.root.path])
        let id = try #require(try await setup.library.fetchAssets().first?.localIdentifier)

        let folder = setup.outputs.appendingPathComponent("stills")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try await setup.reel(["thumbnail", "library:\(id)", "-o", folder.path, "--json"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let lines = try Self.lines(result)
        #expect(lines.count == 1)
        let still = try #require(lines.first)
        #expect(abs(still.requestedTime - 1.5) < 0.002, "\(still.requestedTime)")
        #expect(abs(still.actualTime - 1.5) < 0.002, "\(still.actualTime)")
        // Named after the resource, as exports of library assets are.
        #expect(URL(fileURLWithPath: still.file).lastPathComponent == "IMG_0002-001.jpg")
        try await Self.expectFrame(URL(fileURLWithPath: still.file), of: movie, at: 1.5, frame: 1.0 / 30)

        // `still` among other times: the same moment, and the others as asked.
        let mixed = try await setup.reel([
            "thumbnail", "library:\(id)", "--at", "0.5,still", "-o", folder.appendingPathComponent("m-%d.png").path,
            "--json",
        ])
        #expect(mixed.status == 0, "\(mixed.stderr)")
        let both = try Self.lines(mixed)
        #expect(both.map(\.requestedTime).count == 2)
        #expect(abs(both[1].actualTime - 1.5) < 0.002, "\(both.map(\.actualTime))")

        // An export's poster is the still's picture, not the frame at 10 % of the video.
        let video = setup.outputs.appendingPathComponent("live.mp4")
        let export = try await setup.reel([
            "export", "library:\(id)", "--preset", "640x480", "--poster", "-o", video.path,
        ])
        #expect(export.status == 0, "\(export.stderr)")
        try await Self.expectFrame(
            setup.outputs.appendingPathComponent("live.jpg"), of: movie, at: 1.5, frame: 1.0 / 30)

        // A manifest's set with no time: one picture at the still, in a folder named after the resource.
        let spool = LibraryFixtures.folder("thumb-live-spool")
        let environment = ["REEL_SPOOL": spool.path]
        let manifest = LibraryFixtures.folder("thumb-live-manifest").appendingPathComponent("jobs.jsonl")
        try Data(
            #"{"asset": "library:\#(id)", "thumbnails": {}, "outputDir": "\#(setup.outputs.path)"}"#.utf8
        ).write(to: manifest)
        let submitted = try await setup.reel(
            ["submit", "--manifest", manifest.path, "--json"], environment: environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        // `reel thumbnail --submit` takes the same path (checked at submit: a plain -o folder).
        let queued = try await setup.reel(
            ["thumbnail", "library:\(id)", "--submit", "-o", setup.outputs.appendingPathComponent("cli").path],
            environment: environment)
        #expect(queued.status == 0, "\(queued.stderr)")
        let job = try #require(
            try LibraryExportTests.json(submitted.stdout).first?["id"] as? String, "\(submitted.stdout)")
        let worker = try await setup.reel(["work", "--drain", "--jobs", "1"], environment: environment)
        #expect(worker.status == 0, "\(worker.stderr)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: setup.outputs.path + "/cli") == ["IMG_0002-001.jpg"])
        let status = try LibraryExportTests.status(spool, job)
        #expect(status["state"] as? String == "completed", "\(status)")
        let output = try #require(status["output"] as? String)
        #expect(URL(fileURLWithPath: output).lastPathComponent.hasPrefix("IMG_0002.thumbnails."), "\(output)")
        let spec = try #require(status["spec"] as? [String: Any])
        #expect((spec["library"] as? [String: Any])?["stillImageTime"] as? Double == 1.5, "\(spec)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output) == ["IMG_0002-001.jpg"])
        try await Self.expectFrame(
            URL(fileURLWithPath: output + "/IMG_0002-001.jpg"), of: movie, at: 1.5, frame: 1.0 / 30)
    }

    @Test("a Motion Photo: the embedded video's frame at its presentation timestamp, read in place")
    func motionPhotoStill() async throws {
        let setup = try LibraryExportTests.Setup("thumb-motion")
        let photo = setup.root.appendingPathComponent("PXL_0002.jpg")
        try await LibraryExportTests.motionPhoto(at: photo)
        _ = try await setup.library.scan([setup.root.path])
        let asset = try #require(try await setup.library.fetchAssets().first)
        let still = try #require(asset.stillImageTime)
        let motion = try #require(
            try await setup.library.resources(for: asset).first { $0.type == .pairedVideo && $0.isByteRange })
        // The embedded MP4 cut out for ffmpeg (the test's own copy, from exiftool-independent offsets
        // that ffprobe read back in `LibraryExportTests`).
        let bytes = try Data(contentsOf: photo)
        let embedded = setup.outputs.appendingPathComponent("embedded.mp4")
        try bytes[Int(motion.offset)..<Int(motion.offset + motion.length)].write(to: embedded)
        let frames = try await Stills.frames(embedded).map(\.time)
        let shown = try #require(frames.last { $0 <= still + 1e-6 }, "no frame at \(still) in \(frames)")
        let step = frames.count > 1 ? (frames.last! - frames.first!) / Double(frames.count - 1) : 0.033

        let folder = setup.outputs.appendingPathComponent("stills")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try await setup.reel([
            "thumbnail", "library:\(asset.localIdentifier)", "-o", folder.path, "--json",
        ])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let line = try #require(try Self.lines(result).first)
        #expect(abs(line.requestedTime - still) < 0.002 && abs(line.actualTime - shown) < 0.002, "\(line)")
        #expect(URL(fileURLWithPath: line.file).lastPathComponent == "PXL_0002-001.jpg")
        try await Self.expectFrame(URL(fileURLWithPath: line.file), of: embedded, at: shown, frame: step, margin: 2.5)
        // Read in place: nothing was written beside the photo.
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.root.path) == ["PXL_0002.jpg"])
    }

    @Test("refusals in one line: a still asked of a plain video or a path; --resource without a library asset")
    func refusals() async throws {
        let setup = try LibraryExportTests.Setup("thumb-refusals")
        let movie = setup.root.appendingPathComponent("clip.mov")
        try await LibraryFixtures.movie(nil, at: movie, seconds: 1)
        _ = try await setup.library.scan([setup.root.path])
        let id = try #require(try await setup.library.fetchAssets().first?.localIdentifier)
        let folder = setup.outputs.appendingPathComponent("none")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

        // A plain video has no still's moment: no time given is refused, naming what is missing.
        let plain = try await setup.reel(["thumbnail", "library:\(id)", "-o", folder.path])
        #expect(plain.status == 64, "\(plain.status) \(plain.stderr)")
        #expect(plain.stderr.contains("Live or Motion Photo"), "\(plain.stderr)")
        #expect(plain.stderr.split(separator: "\n").count == 1, "\(plain.stderr)")
        // Asked of a file by path: the same refusal.
        let path = try await setup.reel(["thumbnail", movie.path, "--at", "still", "-o", folder.path])
        #expect(path.status == 64 && path.stderr.contains("library:<id>"), "\(path.stderr)")
        let resource = try await setup.reel(["thumbnail", movie.path, "--at", "0", "--resource", "video"])
        #expect(resource.status == 64 && resource.stderr.contains("only for a library asset"), "\(resource.stderr)")
        // Nothing was written by any of them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
