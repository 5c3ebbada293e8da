import Foundation
import TestSupport
import Testing

/// `reel library …` run as a user would, its JSON decoded and checked.
@Suite("reel library", .tags(.process, .media), .timeLimit(.minutes(10)))
struct LibraryCLITests {
    func lines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    @Test("scan, list, show, set, albums, changes and write-resource, with $REEL_LIBRARY")
    func commands() async throws {
        let root = LibraryFixtures.folder("cli")
        let database = LibraryFixtures.folder("cli-db").appendingPathComponent("lib.sqlite").path
        let environment = ["REEL_LIBRARY": database]
        func reel(_ arguments: [String]) async throws -> ToolResult {
            try await ReelBinary.run(["library"] + arguments, environment: environment)
        }
        try LibraryFixtures.copy(try Media.motionPhoto, to: root.appendingPathComponent("motion.jpg"))
        try LibraryFixtures.copy(try Media.movie, to: root.appendingPathComponent("clip.mov"))
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("IMG_2927.HEIC"))

        let scan = try await reel(["scan", "--json", root.path])
        #expect(scan.status == 0, "\(scan.stderr)")
        let report = try #require(try lines(scan.stdout).first)
        #expect((report["insertedLocalIdentifiers"] as? [String])?.count == 3)
        // One token shape everywhere: the string `changes --since` takes.
        let token = try #require(report["token"] as? String)
        #expect(token.wholeMatch(of: #/[^:]+:[0-9]+/#) != nil, "token \(token)")
        #expect((report["notes"] as? [Any])?.isEmpty == true, "nothing to note about real Live and Motion Photos")
        #expect(FileManager.default.fileExists(atPath: database))

        let videos = try await reel(["list", "--json", "--predicate", "mediaType == 2"])
        let videoLines = try lines(videos.stdout)
        #expect(
            videoLines.count == 1 && videoLines[0]["mediaType"] as? Int == 2
                && videoLines[0]["playbackStyle"] as? Int == 4)
        let live = try await reel(["list", "--json", "--predicate", "(mediaSubtypes & 8) != 0"])
        let liveLines = try lines(live.stdout)
        #expect(liveLines.count == 1 && liveLines[0]["mediaSubtypeNames"] as? [String] == ["photoLive"])
        let sorted = try await reel(["list", "--json", "--sort", "pixelWidth,desc", "--limit", "2"])
        let widths = try lines(sorted.stdout).map { $0["pixelWidth"] as! Int }
        #expect(widths == [3024, 1024])
        // PhotoKit's representsBurst: false for every asset outside a burst, videos included.
        let everything = try lines(try await reel(["list", "--json"]).stdout)
        #expect(everything.count == 3 && everything.allSatisfy { $0["representsBurst"] as? Bool == false })

        let refused = try await reel(["list", "--predicate", "originalFilename == 'clip.mov'"])
        #expect(refused.status == 64)
        #expect(refused.stderr.hasPrefix("reel: error: 'originalFilename' is not a key PhotoKit allows"))
        #expect(refused.stderr.split(separator: "\n").count == 1)

        let motionID = try #require(liveLines[0]["localIdentifier"] as? String)
        let show = try await reel(["show", "--json", motionID])
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        let resources = try #require(shown["resources"] as? [[String: Any]])
        #expect(resources.map { $0["type"] as! Int } == [1, 9])
        #expect(resources[1]["offset"] as? Int == 30_821 && resources[1]["bytes"] as? Int == 122_562)
        // The photo resource is the still alone: the JPEG that ends where the video begins.
        #expect(resources[0]["offset"] as? Int == 0 && resources[0]["bytes"] as? Int == 30_821)
        let still = LibraryFixtures.folder("cli-out").appendingPathComponent("still.jpg").path
        let stillWritten = try await reel(["write-resource", motionID, "--type", "photo", "-o", still])
        #expect(stillWritten.status == 0, "\(stillWritten.stderr)")
        let stillProbe = try await LibraryFixtures.ffprobe(still)
        let stillStreams = try #require(stillProbe["streams"] as? [[String: Any]])
        #expect(
            stillStreams.count == 1 && stillStreams[0]["codec_name"] as? String == "mjpeg", "the still has no video")

        let out = LibraryFixtures.folder("cli-out").appendingPathComponent("motion.mp4").path
        let written = try await reel(["write-resource", motionID, "--type", "pairedVideo", "-o", out, "--json"])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)).count == 122_562)

        let movieID = try #require(videoLines[0]["localIdentifier"] as? String)
        #expect(try await reel(["set", movieID, "--favorite", "--hidden"]).status == 0)
        #expect(
            try lines(try await reel(["list", "--json"]).stdout).count == 2, "hidden assets are left out by default")
        let favorites = try await reel(["list", "--json", "--include-hidden", "--predicate", "isFavorite == YES"])
        #expect(try lines(favorites.stdout).map { $0["localIdentifier"] as! String } == [movieID])

        let album = try await reel(["album", "create", "Holiday"])
        let albumID = album.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(albumID.hasPrefix("album:"))
        #expect(try await reel(["album", "add", albumID, motionID]).status == 0)
        let unknown = try await reel(["album", "add", albumID, "no-such-asset"])
        #expect(unknown.status == 65 && unknown.stderr.contains("no asset no-such-asset"), "\(unknown.stderr)")
        let inAlbum = try await reel(["list", "--json", "--album", albumID])
        #expect(try lines(inAlbum.stdout).map { $0["localIdentifier"] as! String } == [motionID])
        let albums = try lines(try await reel(["albums", "--json"]).stdout)
        let identifiers = albums.map { $0["localIdentifier"] as! String }
        #expect(identifiers.contains(albumID) && identifiers.contains("smart:smartAlbumLivePhotos"))
        #expect(identifiers.contains { $0.hasPrefix("folder:") } && identifiers.contains { $0.hasPrefix("moment:") })
        let liveAlbum = albums.first { $0["localIdentifier"] as? String == "smart:smartAlbumLivePhotos" }
        #expect(liveAlbum?["estimatedAssetCount"] as? Int == 1 && liveAlbum?["assetCollectionSubtype"] as? Int == 213)

        let changes = try await reel(["changes", "--json", "--since", token])
        let changed = try #require(try lines(changes.stdout).first)
        #expect(changed["updated"] as? [String] == [movieID])
        #expect((changed["inserted"] as? [String])?.isEmpty == true)
        // What 0.2's scan --json printed (an object) is taken too.
        let parts = token.split(separator: ":")
        let legacy = try await reel([
            "changes", "--json", "--since", "{\"library\":\"\(parts[0])\",\"sequence\":\(parts[1])}",
        ])
        let legacyChanges = try lines(legacy.stdout).first
        #expect(legacy.status == 0 && legacyChanges?["updated"] as? [String] == [movieID], "\(legacy.stderr)")
        let foreign = try await reel(["changes", "--since", "someone-else:3"])
        #expect(foreign.status == 64 && foreign.stderr.contains("another library"))
    }

    @Test("a photo whose XMP claims a video it lacks: the reason in scan --json and show, a plain photo")
    func refusedMotionPhoto() async throws {
        let root = LibraryFixtures.folder("cli-lying")
        let database = LibraryFixtures.folder("cli-lying-db").appendingPathComponent("lib.sqlite").path
        try LibraryFixtures.copy(try Media.lyingMotionPhoto, to: root.appendingPathComponent("lying.jpg"))
        let scan = try await ReelBinary.run(["library", "scan", "--library", database, "--json", root.path])
        #expect(scan.status == 0, "\(scan.stderr)")
        let report = try #require(try lines(scan.stdout).first)
        let notes = try #require(report["notes"] as? [[String: Any]])
        #expect(notes.count == 1 && (notes.first?["path"] as? String)?.hasSuffix("/lying.jpg") == true)
        #expect((notes.first?["reason"] as? String)?.contains("Container:Directory") == true, "\(notes)")
        let id = try #require((report["insertedLocalIdentifiers"] as? [String])?.first)
        let show = try await ReelBinary.run(["library", "show", "--library", database, "--json", id])
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        #expect((shown["mediaSubtypes"] as? Int) == 0, "a plain photo")
        let shownNotes = try #require(shown["notes"] as? [String])
        #expect(shownNotes.contains { $0.hasPrefix("not a Motion Photo: Container:Directory") }, "\(shownNotes)")
        let human = try await ReelBinary.run(["library", "show", "--library", database, id])
        #expect(human.stdout.contains("note: not a Motion Photo"))
    }

    @Test("import copies or moves files into a library folder and indexes them")
    func importFiles() async throws {
        let source = LibraryFixtures.folder("import-src")
        let target = LibraryFixtures.folder("import-dst")
        try LibraryFixtures.copy(try Media.heic, to: source.appendingPathComponent("IMG_2927.HEIC"))
        try LibraryFixtures.copy(try Media.heic, to: target.appendingPathComponent("IMG_2927.HEIC"))
        let database = LibraryFixtures.folder("import-db").appendingPathComponent("lib.sqlite").path
        let result = try await ReelBinary.run(
            [
                "library", "import", "--library", database, "--into", target.path, "--move", "--json",
                source.appendingPathComponent("IMG_2927.HEIC").path,
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try lines(result.stdout).first)
        #expect((report["insertedLocalIdentifiers"] as? [String])?.count == 2)
        #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("IMG_2927 (1).HEIC").path))
        #expect(!FileManager.default.fileExists(atPath: source.appendingPathComponent("IMG_2927.HEIC").path))
    }
}
