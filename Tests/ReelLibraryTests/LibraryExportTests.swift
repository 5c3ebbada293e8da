import Foundation
import ReelBoxes
import TestSupport
import Testing

@testable import ReelLibrary

/// Identifiers wherever a path goes (issue 25 item 7) and saving back (item 8), run through `reel` as
/// a user would: `export library:<id>`, `submit library:<id>`, a manifest's `"asset": "library:<id>"`,
/// `--save-to-library`; outputs read back with ffprobe and exiftool.
@Suite("library exports", .tags(.process, .media), .timeLimit(.minutes(10)))
struct LibraryExportTests {
    /// A library folder and database for one test.
    struct Setup {
        let root: URL
        let database: String
        let library: PhotoLibrary
        let outputs: URL

        init(_ name: String) throws {
            root = LibraryFixtures.folder("export-\(name)")
            database = LibraryFixtures.folder("export-\(name)-db").appendingPathComponent("lib.sqlite").path
            library = try PhotoLibrary(path: database)
            outputs = LibraryFixtures.folder("export-\(name)-out")
        }

        func reel(_ arguments: [String], environment: [String: String] = [:]) async throws -> ToolResult {
            try await ReelBinary.run(
                arguments, environment: environment.merging(["REEL_LIBRARY": database]) { $1 },
                timeLimit: .seconds(240))
        }
    }

    /// A copy of the real Motion Photo with a capture time and a place written into its Exif by
    /// exiftool (which keeps the appended MP4: the video stays the file's last 122,562 bytes).
    static func motionPhoto(at url: URL) async throws {
        try LibraryFixtures.copy(try Media.motionPhoto, to: url)
        let result = try await Tools.run(
            "exiftool",
            [
                "-q", "-overwrite_original", "-DateTimeOriginal=2021:07:14 10:20:30", "-OffsetTimeOriginal=+02:00",
                "-GPSLatitude=48.8584", "-GPSLatitudeRef=N", "-GPSLongitude=2.2945", "-GPSLongitudeRef=E", url.path,
            ])
        try #require(result.status == 0, "exiftool failed: \(result.stderr)")
    }

    static func json(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    static func tags(_ probe: [String: Any]) -> [String: String] {
        ((probe["format"] as? [String: Any])?["tags"] as? [String: String]) ?? [:]
    }

    static func videoStream(_ probe: [String: Any]) -> [String: Any]? {
        (probe["streams"] as? [[String: Any]])?.first { $0["codec_type"] as? String == "video" }
    }

    static func seconds(_ probe: [String: Any]) -> Double {
        Double(((probe["format"] as? [String: Any])?["duration"] as? String) ?? "") ?? -1
    }

    /// The first video stream's duration (a Motion Photo's MP4 also has a short second video track, and
    /// a data track lasting longer than its main video, which the container's duration follows).
    static func videoSeconds(_ probe: [String: Any]) -> Double {
        Double((videoStream(probe)?["duration"] as? String) ?? "") ?? -1
    }

    /// The `completed` or `failed` event among `reel export --json`'s lines.
    static func event(_ name: String, _ text: String) throws -> [String: Any]? {
        try json(text).last { $0["event"] as? String == name }
    }

    static func status(_ spool: URL, _ id: String) throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: spool.path + "/status/\(id).json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test(
        "a Motion Photo's embedded video exports read in place, re-encoded and copied, with the still's date and place")
    func motionPhotoExportsItsEmbeddedVideoInPlace() async throws {
        let setup = try Setup("motion")
        let photo = setup.root.appendingPathComponent("PXL_0001.jpg")
        try await Self.motionPhoto(at: photo)
        _ = try await setup.library.scan([setup.root.path])
        let asset = try #require(try await setup.library.fetchAssets().first)
        #expect(asset.mediaSubtypes.contains(.photoLive) && asset.pairing == .motionPhoto)
        let motion = try #require(
            try await setup.library.resources(for: asset).first { $0.type == .pairedVideo && $0.isByteRange })
        // What ffprobe reads of the range on its own: the reference for both exports.
        let range = "subfile,,start,\(motion.offset),end,\(motion.offset + motion.length),,:file:\(photo.path)"
        let embedded = try await LibraryFixtures.ffprobe(range, whitelist: true)
        let embeddedVideo = try #require(Self.videoStream(embedded))

        let encoded = setup.outputs.appendingPathComponent("motion.mp4").path
        let result = try await setup.reel([
            "export", "library:\(asset.localIdentifier)", "--preset", "LowQuality", "-o", encoded, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let completion = try #require(try Self.event("completed", result.stdout))
        let source = try #require(completion["source"] as? [String: Any])
        #expect(source["resource"] as? String == "pairedVideo" && source["path"] as? String == photo.path)
        let byteRange = try #require(source["byteRange"] as? [String: Any])
        #expect(byteRange["offset"] as? Int == Int(motion.offset) && byteRange["length"] as? Int == Int(motion.length))
        let probe = try await LibraryFixtures.ffprobe(encoded)
        #expect(Self.videoStream(probe)?["codec_name"] as? String == "h264")
        #expect(abs(Self.videoSeconds(probe) - Self.videoSeconds(embedded)) < 0.05, "\(Self.videoSeconds(probe))")
        // The embedded MP4 has no date or place; the still's Exif gives them to the export.
        let tags = Self.tags(probe)
        #expect(tags["com.apple.quicktime.creationdate"] == "2021-07-14T10:20:30+0200", "\(tags)")
        #expect(tags["com.apple.quicktime.location.ISO6709"] == "+48.8584+002.2945/", "\(tags)")

        // Passthrough copies the range's packets: the same codec, size and frame count as ffprobe's reading.
        let copied = setup.outputs.appendingPathComponent("copy.mp4").path
        let copy = try await setup.reel([
            "export", "library:\(asset.localIdentifier)", "--preset", "Passthrough", "-o", copied,
        ])
        #expect(copy.status == 0, "\(copy.stderr)")
        let copyVideo = try #require(Self.videoStream(try await LibraryFixtures.ffprobe(copied)))
        for key in ["codec_name", "width", "height", "nb_frames"] {
            #expect("\(copyVideo[key] ?? "-")" == "\(embeddedVideo[key] ?? "+")", "\(key)")
        }
        // Read in place: nothing was written beside the photo, and only the outputs beside them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.root.path) == ["PXL_0001.jpg"])
        #expect(
            Set(try FileManager.default.contentsOfDirectory(atPath: setup.outputs.path)) == ["motion.mp4", "copy.mp4"])
    }

    @Test("a Samsung Motion Photo whose MP4 holds stills beside the motion: the motion is exported, the choice said")
    func samsungMotionPhotoExportsItsMotionTrack() async throws {
        let setup = try Setup("samsung-tracks")
        // Samsung's layout: track 0 the motion (26 frames, 0.93 s, not the default), track 1 two
        // near-identical full-size stills (0.67 s, the default), as FFmpeg would pick it.
        let clip = setup.outputs.appendingPathComponent("two-tracks.mp4")
        let made = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=28:duration=0.92", "-f",
                "lavfi", "-i", "testsrc2=size=640x480:rate=3:duration=0.6", "-map", "0:v", "-map", "1:v", "-c:v",
                "libx264", "-preset", "ultrafast", "-disposition:v:0", "0", "-disposition:v:1", "default", clip.path,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let tracks = try #require(try await LibraryFixtures.ffprobe(clip.path)["streams"] as? [[String: Any]])
        try #require(tracks.map { $0["nb_frames"] as? String } == ["26", "2"], "\(tracks)")
        let photo = setup.root.appendingPathComponent("20240501_120000.heic")
        let still = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.heic)))
        let mp4 = [UInt8](try Data(contentsOf: clip))
        try Data(still + BoxWriter.box("mpvd", mp4)).write(to: photo)
        _ = try await setup.library.scan([setup.root.path])
        let asset = try #require(try await setup.library.fetchAssets().first)
        #expect(asset.pairing == .motionPhoto)
        // The photo resource is the HEIC alone: the bytes before the mpvd box.
        let resources = try await setup.library.resources(for: asset)
        #expect(resources.first { $0.type == .photo }?.length == Int64(still.count))

        // The plan names the track chosen and why the other is left out.
        let plan = try await setup.reel([
            "export", "library:\(asset.localIdentifier)", "--preset", "640x480", "--estimate", "--json",
        ])
        #expect(plan.status == 0, "\(plan.stderr)")
        let planned = try #require(try Self.json(plan.stdout).first)
        let streams = try #require(planned["streams"] as? [[String: Any]])
        let skipped = try #require(streams.first { $0["index"] as? Int == 1 })
        let reason = try #require(skipped["reason"] as? String)
        #expect(reason.contains("track 0 (320x240, 26 frames") && reason.contains("is the motion"), "\(reason)")
        #expect(reason.contains("track 1 (640x480, 2 frames") && reason.contains("stills"), "\(reason)")

        let output = setup.outputs.appendingPathComponent("motion.mp4").path
        let result = try await setup.reel([
            "export", "library:\(asset.localIdentifier)", "--preset", "640x480", "-o", output,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let counted = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=nb_read_frames,width,height", "-of", "json", output,
            ])
        let probed = try #require(
            try JSONSerialization.jsonObject(with: Data(counted.stdout.utf8)) as? [String: Any])
        let video = try #require((probed["streams"] as? [[String: Any]])?.first)
        #expect(video["nb_read_frames"] as? String == "26" && video["width"] as? Int == 320, "\(video)")

        // A thumbnail with no time: Samsung records no still moment, so the video's start, with a note.
        let folder = setup.outputs.appendingPathComponent("thumbs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let thumbnail = try await setup.reel(["thumbnail", "library:\(asset.localIdentifier)", "-o", folder.path])
        #expect(thumbnail.status == 0, "\(thumbnail.stderr)")
        #expect(thumbnail.stderr.contains("reel: note:") && thumbnail.stderr.contains("video's start"))
        let written = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(written.count == 1, "\(written)")
        let picture = try #require(Self.videoStream(try await LibraryFixtures.ffprobe(folder.path + "/" + written[0])))
        #expect(picture["width"] as? Int == 320 && picture["height"] as? Int == 240, "the motion's frame, not a still")
    }

    @Test("a Live Photo exports its movie; --resource picks another and refuses one it lacks or a path")
    func livePhotoExportsItsMotion() async throws {
        let setup = try Setup("live")
        let identifier = "0C7A5D3E-1111-4222-8333-944455556666"
        try await LibraryFixtures.still(identifier, at: setup.root.appendingPathComponent("IMG_0001.HEIC"))
        let movie = setup.root.appendingPathComponent("IMG_0001.MOV")
        try await LibraryFixtures.movie(identifier, at: movie, seconds: 2)
        _ = try await setup.library.scan([setup.root.path])
        let assets = try await setup.library.fetchAssets()
        #expect(assets.count == 1)
        let id = try #require(assets.first?.localIdentifier)

        let output = setup.outputs.appendingPathComponent("live.mp4").path
        let result = try await setup.reel(["export", "library:\(id)", "--preset", "LowQuality", "-o", output, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let source = try #require(
            try Self.event("completed", result.stdout)?["source"] as? [String: Any])
        #expect(source["path"] as? String == movie.path && source["resource"] as? String == "pairedVideo")
        #expect(source["byteRange"] == nil)
        let probe = try await LibraryFixtures.ffprobe(output)
        #expect(abs(Self.seconds(probe) - 2.0) < 0.1 && Self.videoStream(probe) != nil)

        // The same through --resource by name and by raw value (9).
        let named = try await setup.reel([
            "export", "library:\(id)", "--resource", "9", "--preset", "LowQuality", "-o",
            setup.outputs.appendingPathComponent("nine.mp4").path,
        ])
        #expect(named.status == 0, "\(named.stderr)")

        let missing = try await setup.reel([
            "export", "library:\(id)", "--resource", "video", "--preset", "LowQuality", "-o",
            setup.outputs.appendingPathComponent("none.mp4").path, "--json",
        ])
        #expect(missing.status == 65)
        let failure = try #require(
            try Self.event("failed", missing.stdout)?["error"] as? [String: Any])
        #expect(failure["code"] as? String == "unknown-asset" && failure["retryable"] as? Bool == false)
        #expect((failure["message"] as? String)?.contains("library:\(id)") == true, "\(failure)")

        let path = try await setup.reel([
            "export", movie.path, "--resource", "pairedVideo", "--preset", "LowQuality", "-o",
            setup.outputs.appendingPathComponent("path.mp4").path,
        ])
        #expect(path.status == 64 && path.stderr.contains("only for a library asset"), "\(path.stderr)")
        let unknown = try await setup.reel(["export", "library:NOPE/L0/001", "--preset", "LowQuality"])
        #expect(unknown.status == 65 && unknown.stderr.contains("library:NOPE/L0/001"), "\(unknown.stderr)")
    }

    @Test("a job records the identifier and what it resolved to; a changed file fails it at run time and at submit")
    func changedFileFailsTheJob() async throws {
        let setup = try Setup("changed")
        let spool = LibraryFixtures.folder("export-changed-spool")
        let movie = setup.root.appendingPathComponent("clip.mov")
        try await LibraryFixtures.movie(nil, at: movie, seconds: 1)
        _ = try await setup.library.scan([setup.root.path])
        let id = try #require(try await setup.library.fetchAssets().first?.localIdentifier)
        let environment = ["REEL_SPOOL": spool.path]

        let submitted = try await setup.reel(
            [
                "submit", "library:\(id)", "--preset", "LowQuality", "--output-dir", setup.outputs.path, "--json",
            ], environment: environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let line = try #require(try Self.json(submitted.stdout).first)
        #expect(line["asset"] as? String == "library:\(id)")
        let job = try #require(line["id"] as? String)
        let spec = try #require(try Self.status(spool, job)["spec"] as? [String: Any])
        let recorded = try #require(spec["library"] as? [String: Any])
        #expect(recorded["identifier"] as? String == id && recorded["path"] as? String == movie.path)
        #expect(
            recorded["fileBytes"] as? Int
                == (try FileManager.default.attributesOfItem(atPath: movie.path)[.size] as? Int))
        #expect(spec["asset"] as? String == movie.path)
        // Outputs of a library asset are named after it.
        #expect((line["output"] as? String)?.hasPrefix(setup.outputs.path + "/clip.") == true, "\(line)")

        // The file is replaced after the submit: the job must not export the new bytes.
        try await LibraryFixtures.movie(nil, at: movie, seconds: 2)
        let worker = try await setup.reel(["work", "--drain", "--jobs", "1"], environment: environment)
        #expect(worker.status == 0, "\(worker.stderr)")
        let status = try Self.status(spool, job)
        #expect(status["state"] as? String == "failed", "\(status)")
        let error = try #require(status["error"] as? [String: Any])
        #expect(error["code"] as? String == "asset-changed" && error["retryable"] as? Bool == false, "\(error)")
        #expect((error["message"] as? String)?.contains("library:\(id)") == true, "\(error)")
        #expect(status["attempts"] as? Int == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.outputs.path).isEmpty)

        // Submitting it again is refused at once, and so is an identifier the library never had.
        let again = try await setup.reel(
            ["submit", "library:\(id)", "--preset", "LowQuality", "--output-dir", setup.outputs.path, "--json"],
            environment: environment)
        #expect(again.status == 65)
        let refusal = try #require(try Self.json(again.stdout).first?["error"] as? [String: Any])
        #expect(refusal["code"] as? String == "asset-changed", "\(refusal)")
        let unknown = try await setup.reel(
            ["submit", "library:AAAA/L0/001", "--preset", "LowQuality", "--json"], environment: environment)
        #expect(unknown.status == 65)
        #expect(
            (try Self.json(unknown.stdout).first?["error"] as? [String: Any])?["code"] as? String == "unknown-asset")
    }

    @Test("a job whose asset was renamed and moved (and rescanned) runs from its new path: identifiers follow content")
    func movedFileIsFollowed() async throws {
        let setup = try Setup("moved")
        let spool = LibraryFixtures.folder("export-moved-spool")
        let first = setup.root.appendingPathComponent("a/clip.mov")
        try await LibraryFixtures.movie(nil, at: first, seconds: 1.5)
        _ = try await setup.library.scan([setup.root.path])
        let id = try #require(try await setup.library.fetchAssets().first?.localIdentifier)
        let environment = ["REEL_SPOOL": spool.path]
        let submitted = try await setup.reel(
            ["submit", "library:\(id)", "--preset", "LowQuality", "--output-dir", setup.outputs.path, "--json"],
            environment: environment)
        let job = try #require(try Self.json(submitted.stdout).first?["id"] as? String, "\(submitted.stderr)")

        let moved = setup.root.appendingPathComponent("b/renamed.mov")
        try FileManager.default.createDirectory(
            at: moved.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: first, to: moved)
        _ = try await setup.library.scan([setup.root.path])
        #expect(try await setup.library.asset(id).path == moved.path, "the rescan kept the identifier")

        let worker = try await setup.reel(["work", "--drain", "--jobs", "1"], environment: environment)
        #expect(worker.status == 0, "\(worker.stderr)")
        let status = try Self.status(spool, job)
        #expect(status["state"] as? String == "completed", "\(status)")
        let output = try #require(status["output"] as? String)
        let probe = try await LibraryFixtures.ffprobe(output)
        #expect(abs(Self.videoSeconds(probe) - 1.5) < 0.05, "\(Self.videoSeconds(probe))")
        #expect(worker.stderr.contains("exporting it from its new path"), "\(worker.stderr)")
        // The job's last line names the file it actually read, not the path it had when submitted.
        let completed = try #require(worker.stderr.split(separator: "\n").first { $0.contains("job completed") })
        #expect(completed.contains("asset=\(moved.path)") && !completed.contains(first.path), "\(completed)")
    }

    /// A manifest line saving back: the worker's first save fails as a crash would, before the import
    /// or after it; the retry adopts the published output (no second export) and the library holds
    /// exactly one new asset, with the source's capture date and place.
    @Test(arguments: ["before", "after"])
    func savedOutputSurvivesACrashAroundTheImport(_ fault: String) async throws {
        let setup = try Setup("save-\(fault)")
        let spool = LibraryFixtures.folder("export-save-\(fault)-spool")
        let photo = setup.root.appendingPathComponent("PXL_0002.jpg")
        try await Self.motionPhoto(at: photo)
        _ = try await setup.library.scan([setup.root.path])
        let source = try #require(try await setup.library.fetchAssets().first)
        let output = setup.outputs.appendingPathComponent("saved.mp4").path
        let manifest = setup.outputs.deletingLastPathComponent().appendingPathComponent("save-\(fault).jsonl")
        let line: [String: Any] = [
            "asset": "library:\(source.localIdentifier)", "preset": "LowQuality", "output": output,
            "saveToLibrary": true,
        ]
        try JSONSerialization.data(withJSONObject: line).write(to: manifest)
        let environment = ["REEL_SPOOL": spool.path]
        let submitted = try await setup.reel(
            ["submit", "--manifest", manifest.path, "--json"], environment: environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let job = try #require(try Self.json(submitted.stdout).first?["id"] as? String)

        let worker = try await setup.reel(
            ["work", "--drain", "--jobs", "1"], environment: environment.merging(["REEL_TEST_SAVE_FAULT": fault]) { $1 }
        )
        #expect(worker.status == 0, "\(worker.stderr)")
        let status = try Self.status(spool, job)
        #expect(status["state"] as? String == "completed", "\(status)")
        #expect(status["attempts"] as? Int == 2)
        let result = try #require(status["result"] as? [String: Any])
        #expect(result["method"] as? String == "adopted", "the retry exported again: \(result)")
        let saved = try #require(result["savedLocalIdentifier"] as? String)

        let all = try await setup.library.fetchAssets(FetchOptions(includeHiddenAssets: true))
        #expect(all.count == 2, "\(all.map(\.path))")
        #expect(all.filter { $0.path == output }.map(\.localIdentifier) == [saved])
        let asset = try await setup.library.asset(saved)
        #expect(asset.mediaType == .video)
        #expect(asset.creationDate == source.creationDate && asset.creationDate != nil)
        let place = try #require(asset.location)
        let sourcePlace = try #require(source.location)
        #expect(
            abs(place.latitude - sourcePlace.latitude) < 1e-4 && abs(place.longitude - sourcePlace.longitude) < 1e-4)
        // exiftool reads the same date from the saved file.
        let read = try await LibraryFixtures.exiftool(output, ["-api", "QuickTimeUTC"])
        #expect("\(read["CreationDate"] ?? "")".hasPrefix("2021:07:14 10:20:30"), "\(read["CreationDate"] ?? "none")")
        // Saving it once more is a no-op that names the same asset.
        #expect(try await setup.library.saveOutput(at: output, from: nil) == saved)
        #expect(try await setup.library.countAssets(FetchOptions(includeHiddenAssets: true)) == 2)
    }

    @Test("reel export --save-to-library: the new identifier in --json; the content identifier kept only when asked")
    func exportSavesALivePhotosMotion() async throws {
        let setup = try Setup("keep")
        let identifier = "7E1F0C2A-AAAA-4BBB-8CCC-DDDDEEEEFFFF"
        try await LibraryFixtures.still(identifier, at: setup.root.appendingPathComponent("IMG_0003.HEIC"))
        let movie = setup.root.appendingPathComponent("IMG_0003.MOV")
        try await LibraryFixtures.movie(identifier, at: movie, seconds: 2)
        _ = try await setup.library.scan([setup.root.path])
        let live = try #require(try await setup.library.fetchAssets().first)

        for keep in [false, true] {
            let output = setup.outputs.appendingPathComponent(keep ? "kept.mov" : "plain.mov").path
            let result = try await setup.reel(
                [
                    "export", "library:\(live.localIdentifier)", "--preset", "LowQuality", "-o", output,
                    "--save-to-library", "--json",
                ] + (keep ? ["--keep-content-identifier"] : []))
            #expect(result.status == 0, "\(result.stderr)")
            let completion = try #require(try Self.event("completed", result.stdout))
            let saved = try #require(completion["savedLocalIdentifier"] as? String)
            let tags = Self.tags(try await LibraryFixtures.ffprobe(output))
            #expect(tags["com.apple.quicktime.content.identifier"] == (keep ? identifier : nil), "\(tags)")
            #expect(tags["com.apple.quicktime.creationdate"] != nil)
            let asset = try await setup.library.asset(saved)
            #expect(asset.mediaType == .video && asset.path == output)
            #expect(asset.contentIdentifier?.uppercased() == (keep ? identifier : nil))
        }
        // The original Live Photo keeps its own movie.
        let stored = try #require(try await setup.library.store.assets(localIdentifiers: [live.localIdentifier]).first)
        #expect(stored.pairedVideoPath == movie.path)
        let refused = try await setup.reel([
            "export", "library:\(live.localIdentifier)", "--preset", "LowQuality", "--keep-content-identifier",
        ])
        #expect(refused.status == 64 && refused.stderr.contains("saving to the library"), "\(refused.stderr)")
    }
}
