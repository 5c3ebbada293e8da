import Foundation
import TestSupport
import Testing

@testable import ReelLibrary

/// Saving photos back (issue 33 item 5), run through `reel` as a user would: `reel image …
/// --save-to-library`, `reel library import` of a photo, and a still and a movie imported together
/// with `--live` as one Live Photo; files read back with exiftool, the library with `reel library`.
@Suite("saving photos back", .tags(.process, .media), .timeLimit(.minutes(10)))
struct SaveBackTests {
    /// A library database and a folder for one test.
    struct Setup {
        let root: URL
        let database: String
        let library: PhotoLibrary

        init(_ name: String) throws {
            root = LibraryFixtures.folder("saveback-\(name)")
            database = LibraryFixtures.folder("saveback-\(name)-db").appendingPathComponent("lib.sqlite").path
            library = try PhotoLibrary(path: database)
        }

        func reel(_ arguments: [String], environment: [String: String] = [:]) async throws -> ToolResult {
            try await ReelBinary.run(
                arguments, environment: environment.merging(["REEL_LIBRARY": database]) { $1 },
                timeLimit: .seconds(240))
        }

        /// `reel library show --json id`.
        func show(_ id: String) async throws -> [String: Any] {
            let shown = try await reel(["library", "show", "--json", id])
            try #require(shown.status == 0, "\(shown.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        }

        /// Every asset, hidden ones included.
        func assets() async throws -> [LibraryAsset] {
            try await library.fetchAssets(FetchOptions(includeHiddenAssets: true))
        }
    }

    static func lines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    /// The real HEIC with content identifier `identifier` in its MakerNote and a place in its Exif.
    static func placedStill(_ identifier: String, at url: URL) async throws {
        try await LibraryFixtures.still(identifier, at: url, captured: "2020:05:04 18:39:10")
        let result = try await Tools.run(
            "exiftool",
            [
                "-q", "-overwrite_original", "-GPSLatitude=48.8584", "-GPSLatitudeRef=N", "-GPSLongitude=2.2945",
                "-GPSLongitudeRef=E", url.path,
            ])
        try #require(result.status == 0, "exiftool failed: \(result.stderr)")
    }

    /// The resources of `shown` (`library show --json`) by type name.
    static func resources(_ shown: [String: Any]) throws -> [String: [String: Any]] {
        let list = try #require(shown["resources"] as? [[String: Any]])
        return Dictionary(list.map { ($0["typeName"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test("reel image --save-to-library: a photo asset whose photo is the image; idempotent; metadata as asked")
    func imageSavesAPhotoAsset() async throws {
        let setup = try Setup("image")
        let identifier = "5A1B2C3D-1111-4222-8333-444455556666"
        let source = setup.root.appendingPathComponent("IMG_0005.HEIC")
        try await Self.placedStill(identifier, at: source)
        let outputs = LibraryFixtures.folder("saveback-image-out")
        let output = outputs.appendingPathComponent("out.jpg").path
        let command = ["image", source.path, "--size", "250x250", "-o", output, "--save-to-library", "--json"]

        let first = try await setup.reel(command)
        #expect(first.status == 0, "\(first.stderr)")
        let line = try #require(try Self.lines(first.stdout).last)
        let saved = try #require(line["savedLocalIdentifier"] as? String, "\(line)")
        #expect(line["degraded"] as? Bool == false)
        let read = try await LibraryFixtures.exiftool(output)
        let width = try #require(read["ImageWidth"] as? Int)
        let height = try #require(read["ImageHeight"] as? Int)
        #expect(max(width, height) == 250 && line["width"] as? Int == width && line["height"] as? Int == height)
        // --metadata keep (the default) keeps the place and the device, but never the Live Photo's
        // content identifier (a render has no Apple maker note): the copy cannot claim the original's movie.
        #expect(read["GPSLatitude"] != nil && read["Make"] as? String == "Apple", "\(read)")
        #expect(read["MediaGroupUUID"] == nil && read["ContentIdentifier"] == nil, "\(read)")
        let shown = try await setup.show(saved)
        #expect(shown["mediaType"] as? Int == 1 && shown["mediaSubtypes"] as? Int == 0, "\(shown)")
        #expect(shown["pixelWidth"] as? Int == width && shown["pixelHeight"] as? Int == height)
        #expect(shown["contentIdentifier"] == nil)
        let photo = try #require(try Self.resources(shown)["photo"])
        #expect(photo["path"] as? String == output && photo["uniformTypeIdentifier"] as? String == "public.jpeg")

        // The same command again (the file replaced by the same render) names the same asset.
        let again = try await setup.reel(command + ["--overwrite"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Self.lines(again.stdout).last?["savedLocalIdentifier"] as? String == saved)
        #expect(try await setup.assets().map(\.localIdentifier) == [saved])

        // In text mode, a line as export prints.
        let text = outputs.appendingPathComponent("text.jpg").path
        let human = try await setup.reel(["image", source.path, "--size", "120x120", "-o", text, "--save-to-library"])
        #expect(human.status == 0, "\(human.stderr)")
        let textID = try #require(try await setup.assets().first { $0.path == text }?.localIdentifier)
        #expect(human.stdout.contains("saved to the library as \(textID)"), "\(human.stdout)")

        // A Live Photo of the library rendered and saved: a plain photo, its movie still the original's.
        let liveStill = setup.root.appendingPathComponent("live/IMG_0007.HEIC")
        try await LibraryFixtures.still(identifier, at: liveStill, captured: "2020:05:04 18:39:10")
        let liveMovie = setup.root.appendingPathComponent("live/IMG_0007.MOV")
        try await LibraryFixtures.movie(identifier, at: liveMovie, seconds: 2)
        _ = try await setup.library.scan([setup.root.appendingPathComponent("live").path])
        let live = try #require(try await setup.assets().first { $0.path == liveStill.path })
        #expect(live.mediaSubtypes.contains(.photoLive))
        let copy = outputs.appendingPathComponent("copy.jpg").path
        let fromLive = try await setup.reel([
            "image", "library:\(live.localIdentifier)", "--size", "200x200", "-o", copy, "--save-to-library", "--json",
        ])
        #expect(fromLive.status == 0, "\(fromLive.stderr)")
        let copyLine = try #require(try Self.lines(fromLive.stdout).last)
        #expect(copyLine["localIdentifier"] as? String == live.localIdentifier)
        let copyID = try #require(copyLine["savedLocalIdentifier"] as? String)
        #expect(copyID != live.localIdentifier)
        #expect(try await LibraryFixtures.exiftool(copy)["MediaGroupUUID"] == nil)
        let copyShown = try await setup.show(copyID)
        #expect(copyShown["mediaSubtypes"] as? Int == 0 && copyShown["contentIdentifier"] == nil, "\(copyShown)")
        #expect(Array(try Self.resources(copyShown).keys) == ["photo"])
        let original = try #require(
            try await setup.library.store.assets(localIdentifiers: [live.localIdentifier]).first)
        #expect(original.pairedVideoPath == liveMovie.path && original.asset.mediaSubtypes.contains(.photoLive))

        // --metadata sharing: no place, no device, no content identifier in the saved file.
        let shared = outputs.appendingPathComponent("shared.jpg").path
        let sharing = try await setup.reel([
            "image", source.path, "--size", "250x250", "-o", shared, "--metadata", "sharing", "--save-to-library",
            "--json",
        ])
        #expect(sharing.status == 0, "\(sharing.stderr)")
        let sharedID = try #require(try Self.lines(sharing.stdout).last?["savedLocalIdentifier"] as? String)
        let sharedRead = try await LibraryFixtures.exiftool(shared)
        for key in ["GPSLatitude", "GPSLongitude", "Make", "Model", "MediaGroupUUID", "ContentIdentifier"] {
            #expect(sharedRead[key] == nil, "\(key) in \(sharedRead)")
        }
        let sharedAsset = try await setup.library.asset(sharedID)
        #expect(sharedAsset.location == nil && sharedAsset.contentIdentifier == nil && sharedAsset.path == shared)
        #expect(try await setup.assets().count == 5)

        // Refused before any work: a fast delivery, whose image is the degraded one.
        let fast = try await setup.reel([
            "image", source.path, "--size", "100x100", "-o", outputs.appendingPathComponent("no.jpg").path,
            "--delivery", "fast", "--save-to-library",
        ])
        #expect(fast.status == 64 && fast.stderr.contains("--delivery fast"), "\(fast.stderr)")
        #expect(!FileManager.default.fileExists(atPath: outputs.appendingPathComponent("no.jpg").path))
    }

    @Test("reel image --save-to-library: a failed save is save-failed and leaves the image; no library, no work")
    func imageSaveFailures() async throws {
        let setup = try Setup("image-fail")
        let source = setup.root.appendingPathComponent("photo.jpg")
        try await EditFixtures.photo("teal", at: source)
        let outputs = LibraryFixtures.folder("saveback-image-fail-out")
        let output = outputs.appendingPathComponent("out.jpg").path
        let command = ["image", source.path, "--size", "100x100", "-o", output, "--save-to-library", "--json"]

        let failed = try await setup.reel(command, environment: ["REEL_TEST_SAVE_FAULT": "before"])
        #expect(failed.status == 1, "\(failed.stderr)")
        let error = try #require(try Self.lines(failed.stdout).last?["error"] as? [String: Any], "\(failed.stdout)")
        #expect(error["code"] as? String == "save-failed", "\(error)")
        #expect(failed.stderr.split(separator: "\n").count == 1, "\(failed.stderr)")
        // The image is written whole and stays; the library has nothing yet.
        #expect(try await LibraryFixtures.exiftool(output)["ImageWidth"] as? Int == 100)
        #expect(try await setup.assets().isEmpty)
        let retried = try await setup.reel(command + ["--overwrite"])
        #expect(retried.status == 0, "\(retried.stderr)")
        let saved = try #require(try Self.lines(retried.stdout).last?["savedLocalIdentifier"] as? String)
        #expect(try await setup.assets().map(\.localIdentifier) == [saved])

        // A library that cannot be opened (its folder is a file) fails at once, with export's status,
        // before any image is written.
        let notAFolder = outputs.appendingPathComponent("not-a-folder")
        try Data("x".utf8).write(to: notAFolder)
        let unopenable = notAFolder.appendingPathComponent("lib.sqlite").path
        let elsewhere = outputs.appendingPathComponent("never.jpg").path
        let missing = try await ReelBinary.run([
            "image", source.path, "--size", "100x100", "-o", elsewhere, "--save-to-library", "--library", unopenable,
        ])
        let clip = setup.root.appendingPathComponent("clip.mov")
        try await LibraryFixtures.movie(nil, at: clip, seconds: 1)
        let export = try await ReelBinary.run([
            "export", clip.path, "--preset", "LowQuality", "-o", outputs.appendingPathComponent("never.mp4").path,
            "--save-to-library", "--library", unopenable,
        ])
        #expect(missing.status == export.status && missing.status == 69, "\(missing.stderr) / \(export.stderr)")
        #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere))
        #expect(!FileManager.default.fileExists(atPath: outputs.appendingPathComponent("never.mp4").path))
    }

    @Test("reel library import of a JPEG and a HEIC: photo assets with a photo resource")
    func importedPhotosArePhotoAssets() async throws {
        let setup = try Setup("import-photo")
        let sources = LibraryFixtures.folder("saveback-import-photo-src")
        let jpeg = sources.appendingPathComponent("photo.jpg")
        try await EditFixtures.photo("orange", at: jpeg)
        let heic = sources.appendingPathComponent("IMG_2927.HEIC")
        try LibraryFixtures.copy(try Media.heic, to: heic)
        let target = setup.root.appendingPathComponent("imported")
        for (file, type, width) in [(jpeg, "public.jpeg", 320), (heic, "public.heic", 3024)] {
            let result = try await setup.reel([
                "library", "import", file.path, "--into", target.path, "--json",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let id = try #require(
                (try Self.lines(result.stdout).first?["insertedLocalIdentifiers"] as? [String])?.first)
            let shown = try await setup.show(id)
            #expect(shown["mediaType"] as? Int == 1 && shown["mediaTypeName"] as? String == "image", "\(shown)")
            #expect(shown["pixelWidth"] as? Int == width)
            let resources = try Self.resources(shown)
            #expect(Array(resources.keys) == ["photo"], "\(resources.keys)")
            let photo = try #require(resources["photo"])
            let copy = target.appendingPathComponent(file.lastPathComponent).path
            #expect(photo["path"] as? String == copy && photo["uniformTypeIdentifier"] as? String == type)
            #expect(try await LibraryFixtures.exiftool(copy)["ImageWidth"] as? Int == width)
        }
    }

    @Test("reel library import --live: a still and a movie no rule would pair become one recorded Live Photo")
    func liveImportPairs() async throws {
        let setup = try Setup("live")
        let sources = LibraryFixtures.folder("saveback-live-src")
        let still = sources.appendingPathComponent("still.heic")
        // Different identifiers, different names, capture times three years apart: only --live pairs them.
        try await LibraryFixtures.still(
            "AAAAAAAA-1111-4111-8111-111111111111", at: still, captured: "2020:05:04 18:39:10")
        let movie = sources.appendingPathComponent("movie.mov")
        try await LibraryFixtures.movie(
            "BBBBBBBB-2222-4222-8222-222222222222", at: movie, seconds: 2, created: "2023-08-01T09:00:00+0000")
        let target = setup.root.appendingPathComponent("live")
        let before = try await setup.library.store.currentChangeToken()

        // Without --live, the same two files stay two assets.
        let plain = try await setup.reel([
            "library", "import", still.path, movie.path, "--into", setup.root.appendingPathComponent("plain").path,
        ])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try await setup.assets().count == 2)

        let imported = try await setup.reel([
            "library", "import", still.path, movie.path, "--live", "--into", target.path, "--json",
        ])
        #expect(imported.status == 0, "\(imported.stderr)")
        let report = try #require(try Self.lines(imported.stdout).first)
        let inserted = try #require(report["insertedLocalIdentifiers"] as? [String])
        #expect(inserted.count == 1, "\(report)")
        let id = try #require(inserted.first)
        let stillCopy = target.appendingPathComponent("still.heic").path
        let movieCopy = target.appendingPathComponent("movie.mov").path

        func checkLive(_ when: String) async throws {
            let shown = try await setup.show(id)
            #expect(shown["mediaSubtypeNames"] as? [String] == ["photoLive"], "\(when): \(shown)")
            #expect(shown["pairing"] as? String == "imported" && shown["playbackStyleName"] as? String == "livePhoto")
            let resources = try Self.resources(shown)
            #expect(Set(resources.keys) == ["photo", "pairedVideo"], "\(when): \(resources.keys)")
            #expect(resources["photo"]?["path"] as? String == stillCopy)
            #expect(resources["pairedVideo"]?["path"] as? String == movieCopy)
            let inTarget = try await setup.assets().filter { $0.path.hasPrefix(target.path + "/") }
            #expect(inTarget.map(\.localIdentifier) == [id], "\(when): exactly one asset for the two files")
        }
        try await checkLive("after the import")
        // The movie resource is the imported copy, byte for byte.
        let written = LibraryFixtures.folder("saveback-live-out").appendingPathComponent("paired.mov").path
        let resource = try await setup.reel(["library", "write-resource", id, "--type", "pairedVideo", "-o", written])
        #expect(resource.status == 0, "\(resource.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: written)) == Data(contentsOf: movie))
        let probe = try await LibraryFixtures.ffprobe(movieCopy)
        #expect(Double(((probe["format"] as? [String: Any])?["duration"] as? String) ?? "") ?? 0 > 1.9)

        // A rescan keeps the pairing, even when both files are read again (new modification times).
        let scanned = try await setup.reel(["library", "scan", target.path, "--json"])
        #expect(scanned.status == 0, "\(scanned.stderr)")
        try await checkLive("after a rescan")
        let later = Date(timeIntervalSinceNow: 3600)
        for path in [stillCopy, movieCopy] {
            try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: path)
        }
        let reread = try await setup.reel(["library", "scan", target.path, "--json"])
        #expect(reread.status == 0, "\(reread.stderr)")
        let rereadReport = try #require(try Self.lines(reread.stdout).first)
        #expect(rereadReport["filesRead"] as? Int == 2, "\(rereadReport)")
        #expect((rereadReport["insertedLocalIdentifiers"] as? [String])?.isEmpty == true, "\(rereadReport)")
        try await checkLive("after a rescan that read both files")

        // The change history has the Live Photo inserted (and no movie of its own).
        let changes = try await setup.reel(["library", "changes", "--json", "--since", before.description])
        #expect(changes.status == 0, "\(changes.stderr)")
        let changed = try #require(try Self.lines(changes.stdout).first)
        #expect((changed["inserted"] as? [String])?.contains(id) == true, "\(changed)")
        #expect((changed["inserted"] as? [String])?.count == 3, "two plain assets and the Live Photo: \(changed)")
    }

    @Test("reel library import --live refusals: one line and a code each, nothing imported")
    func liveImportRefusals() async throws {
        let setup = try Setup("live-refused")
        let sources = LibraryFixtures.folder("saveback-live-refused-src")
        let still = sources.appendingPathComponent("a.heic")
        try await LibraryFixtures.still(nil, at: still)
        let jpeg = sources.appendingPathComponent("b.jpg")
        try await EditFixtures.photo("navy", at: jpeg)
        let movie = sources.appendingPathComponent("c.mov")
        try await LibraryFixtures.movie(nil, at: movie, seconds: 2)
        let other = sources.appendingPathComponent("d.mov")
        try await LibraryFixtures.movie(nil, at: other, seconds: 1)
        let long = sources.appendingPathComponent("long.mp4")
        try await LibraryFixtures.movie(nil, at: long, seconds: 7)
        let motion = sources.appendingPathComponent("motion.jpg")
        try LibraryFixtures.copy(try Media.motionPhoto, to: motion)
        let target = setup.root.appendingPathComponent("live")
        // A Live Photo already in the library, imported with --live.
        let first = try await setup.reel(["library", "import", still.path, movie.path, "--live", "--into", target.path])
        #expect(first.status == 0, "\(first.stderr)")
        let existing = try #require(try await setup.assets().first?.localIdentifier)
        let listing = try FileManager.default.contentsOfDirectory(atPath: target.path).sorted()
        let token = try await setup.library.store.currentChangeToken()

        let cases: [(arguments: [String], status: Int32, code: String, says: String)] = [
            ([still.path], 64, "invalid-argument", "not 1 file"),
            ([still.path, jpeg.path], 64, "invalid-argument", "b.jpg is a photo"),
            ([still.path, movie.path, jpeg.path], 64, "invalid-argument", "not 3 files"),
            ([still.path, long.path], 65, "cannot-pair", "lasts 7.0 s; a Live Photo's movie lasts at most 5 s"),
            ([motion.path, movie.path], 65, "cannot-pair", "is a Motion Photo"),
            (
                [target.appendingPathComponent("a.heic").path, other.path], 65, "cannot-pair",
                "a.heic already belongs to the Live Photo \(existing)"
            ),
            (
                [jpeg.path, target.appendingPathComponent("c.mov").path], 65, "cannot-pair",
                "c.mov already belongs to the Live Photo \(existing)"
            ),
            ([jpeg.path, movie.path], 65, "cannot-pair", "c.mov already belongs to the Live Photo \(existing)"),
        ]
        for (arguments, status, code, says) in cases {
            let refused = try await setup.reel(
                ["library", "import"] + arguments + ["--live", "--into", target.path, "--json"])
            #expect(refused.status == status, "\(arguments): \(refused.stderr)")
            let error = try #require(try Self.lines(refused.stdout).first?["error"] as? [String: Any], "\(arguments)")
            #expect(error["code"] as? String == code, "\(arguments): \(error)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains(says), "\(arguments): \(refused.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: target.path).sorted() == listing)
        }
        let changes = try await setup.library.changes(since: token)
        #expect(changes.insertedLocalIdentifiers.isEmpty && changes.updatedLocalIdentifiers.isEmpty)
        #expect(try await setup.assets().map(\.localIdentifier) == [existing])
    }
}
