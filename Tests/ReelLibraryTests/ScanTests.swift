import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelLibrary

@Suite("Scanning", .tags(.process, .media), .timeLimit(.minutes(10)))
struct ScanTests {
    @Test("incremental by size and time; changes reported as PHChange would; identifiers keyed by content")
    func incremental() async throws {
        let root = LibraryFixtures.folder("scan")
        let library = try LibraryFixtures.library("scan")
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("a/IMG_2927.HEIC"))
        try LibraryFixtures.copy(try Media.movie, to: root.appendingPathComponent("a/with-gps.mov"))
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("b/copy.HEIC"))
        try Data("not a photo".utf8).write(to: root.appendingPathComponent("a/notes.txt"))

        let first = try await library.scan([root.path])
        #expect(first.filesSeen == 4 && first.filesRead == 3)
        #expect(first.insertedLocalIdentifiers.count == 3)
        #expect(
            first.skipped.map(\.path) == [root.appendingPathComponent("a/notes.txt").resolvingSymlinksInPath().path])
        let heicIDs = first.insertedLocalIdentifiers.filter { id in id.hasSuffix("/L0/001") || id.hasSuffix("/L0/002") }
        // The two HEIC copies share the content's UUID and differ by copy number (the HEIC is over
        // 192 KiB, so its key is read from samples: ContentKeyTests computes it with hashlib).
        let hash = try await ContentKeyTests.sampledKey(try Media.heic)
        let expected = [1, 2].map { LibraryIdentity.localIdentifier(contentHash: hash, copy: $0) }
        #expect(Set(expected).isSubset(of: Set(heicIDs)))

        let again = try await library.scan([root.path])
        #expect(again.filesRead == 0 && again.filesUnchanged == 3)
        #expect(
            again.insertedLocalIdentifiers.isEmpty && again.changedLocalIdentifiers.isEmpty
                && again.removedLocalIdentifiers.isEmpty)

        // Rename and move: same identifier, reported changed; a deletion is reported removed.
        let movieID = try #require(
            try await library.fetchAssets(FetchOptions(predicate: "mediaType == 2")).first?.localIdentifier)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("c"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(
            at: root.appendingPathComponent("a/with-gps.mov"), to: root.appendingPathComponent("c/renamed.mov"))
        try FileManager.default.removeItem(at: root.appendingPathComponent("b/copy.HEIC"))
        let moved = try await library.scan([root.path])
        #expect(moved.changedLocalIdentifiers == [movieID])
        #expect(moved.removedLocalIdentifiers == [expected[1]])
        #expect(moved.insertedLocalIdentifiers.isEmpty)
        let movie = try await library.asset(movieID)
        #expect(movie.path.hasSuffix("/c/renamed.mov") && movie.originalFilename == "renamed.mov")

        // A file changed in place keeps its identifier and is reported changed.
        try await library.setFavorite(expected[0], true)
        let photo = root.appendingPathComponent("a/IMG_2927.HEIC").path
        let edited = try await Tools.run(
            "exiftool", ["-q", "-overwrite_original", "-DateTimeOriginal=2021:01:02 03:04:05", photo])
        try #require(edited.status == 0)
        let changed = try await library.scan([root.path])
        #expect(changed.changedLocalIdentifiers == [expected[0]] && changed.filesRead == 1)
        let updated = try await library.asset(expected[0])
        #expect(updated.isFavorite, "library state survives a change of the file")
        #expect(updated.contentHash != hash)

        // The change token of the first scan lists all of it.
        let since = try await library.changes(since: first.token)
        #expect(Set(since.updatedLocalIdentifiers) == Set([movieID, expected[0]]))
        #expect(since.deletedLocalIdentifiers == [expected[1]])
    }

    @Test("symlinks, loops, FIFOs, devices and empty files are recorded and skipped, never followed")
    func hostileEntries() async throws {
        let root = LibraryFixtures.folder("entries")
        let library = try LibraryFixtures.library("entries")
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("photos/IMG.HEIC"))
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("photos/loop").path, withDestinationPath: root.path)
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("photos/outside.mov").path, withDestinationPath: try Media.movie)
        #expect(mkfifo(root.appendingPathComponent("photos/fifo.mov").path, 0o644) == 0)
        let device = root.appendingPathComponent("photos/null.mov").path
        let madeDevice = mknod(device, S_IFCHR | 0o644, dev_t(1 << 8 | 3)) == 0
        #expect(
            FileManager.default.createFile(
                atPath: root.appendingPathComponent("photos/empty.jpg").path, contents: Data()))
        let report = try await library.scan([root.path])
        #expect(report.insertedLocalIdentifiers.count == 1)
        let reasons = Dictionary(
            uniqueKeysWithValues: report.skipped.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        #expect(reasons["loop"]?.contains("symbolic link") == true)
        #expect(reasons["outside.mov"]?.contains("symbolic link") == true)
        #expect(reasons["fifo.mov"]?.contains("FIFO") == true)
        if madeDevice { #expect(reasons["null.mov"]?.contains("device") == true) }
        #expect(reasons["empty.jpg"] == "empty")
        let stored = try await library.store.skippedFiles(under: root.resolvingSymlinksInPath().path)
        #expect(stored.count == report.skipped.count)
        // Once the FIFO is gone, its skip is forgotten.
        try FileManager.default.removeItem(atPath: root.appendingPathComponent("photos/fifo.mov").path)
        _ = try await library.scan([root.path])
        #expect(
            try await library.store.skippedFiles(under: root.resolvingSymlinksInPath().path).count == stored.count - 1)
    }

    @Test("allowed roots and input limits apply to the scan as to exports")
    func limits() async throws {
        let root = LibraryFixtures.folder("limits")
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("IMG.HEIC"))
        try LibraryFixtures.copy(try Media.movie, to: root.appendingPathComponent("clip.mov"))
        var limits = InputLimitsFixture.standard
        limits.allowedRoots = [LibraryFixtures.folder("elsewhere").path]
        let fenced = try PhotoLibrary(
            path: LibraryFixtures.folder("db-limits").appendingPathComponent("l.sqlite").path, limits: limits)
        await #expect(throws: LibraryError.self) { try await fenced.scan([root.path]) }
        var small = InputLimitsFixture.standard
        small.maxFileBytes = 500_000
        small.maxDurationSeconds = 1
        let limited = try PhotoLibrary(
            path: LibraryFixtures.folder("db-limits2").appendingPathComponent("l.sqlite").path, limits: small)
        let report = try await limited.scan([root.path])
        #expect(report.insertedLocalIdentifiers.isEmpty)
        let reasons = report.skipped.map(\.reason).joined(separator: " | ")
        #expect(reasons.contains("over the limit of 500000"), "\(reasons)")
        #expect(reasons.contains("lasts"), "the 4 s movie is over a 1 s limit: \(reasons)")
    }

    @Test(
        "files read on two threads in big batches get the identifiers and pairs one thread reading one at a time gives")
    func parallelMatchesSerial() async throws {
        let root = LibraryFixtures.folder("parallel")
        // By identifier in one folder, and across folders; inferred (no identifiers, same folder and
        // stem); the same names in two folders (never a pair); two copies of one file; small stills.
        try await LibraryFixtures.still(
            "D0C5A1E2-0000-4000-8000-00000000000A", at: root.appendingPathComponent("a/IMG_0001.HEIC"))
        try await LibraryFixtures.movie(
            "D0C5A1E2-0000-4000-8000-00000000000A", at: root.appendingPathComponent("a/IMG_0001.MOV"))
        try await LibraryFixtures.movie(
            "D0C5A1E2-0000-4000-8000-00000000000B", at: root.appendingPathComponent("b/renamed.mov"))
        try await LibraryFixtures.still(
            "D0C5A1E2-0000-4000-8000-00000000000B", at: root.appendingPathComponent("c/IMG_0002.HEIC"))
        try await LibraryFixtures.still(
            nil, at: root.appendingPathComponent("d/IMG_0003.HEIC"), captured: "2020:05:04 18:39:11")
        try await LibraryFixtures.movie(
            nil, at: root.appendingPathComponent("d/IMG_0003.MOV"), created: "2020-05-04T18:39:12-0400")
        try await LibraryFixtures.still(
            nil, at: root.appendingPathComponent("e/IMG_0004.HEIC"), captured: "2020:05:04 18:39:10")
        try await LibraryFixtures.movie(
            nil, at: root.appendingPathComponent("f/IMG_0004.MOV"), created: "2020-05-04T18:39:13-0400")
        // (Other times than d's: the same fixture twice would be the same bytes, and copies.)
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("g/one.HEIC"))
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("g/two.HEIC"))
        try LibraryFixtures.copy(try Media.movie, to: root.appendingPathComponent("g/with-gps.mov"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("h"), withIntermediateDirectories: true)
        for index in 0..<6 {
            let made = try await Tools.run(
                "ffmpeg",
                [
                    "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(160 + 16 * index)x120", "-frames:v", "1",
                    root.appendingPathComponent("h/still\(index).jpg").path,
                ])
            try #require(made.status == 0, "ffmpeg failed: \(made.stderr)")
        }
        let real = root.resolvingSymlinksInPath().path

        /// Path → (identifier, paired movie, pairing) for every asset, after a scan on `threads`
        /// threads in batches of `batchSize` files into a library of its own.
        func scanned(threads: Int, batchSize: Int, _ name: String) async throws -> [String: [String?]] {
            let store = try SQLiteLibraryStore(
                path: LibraryFixtures.folder("db-parallel-\(name)").appendingPathComponent("library.sqlite").path)
            let report = try await LibraryScanner(store: store, threads: threads, batchSize: batchSize).scan([
                root.path
            ])
            #expect(report.filesRead == 17 && report.skipped.isEmpty)
            let assets = try await store.fetchAssets(
                AssetQuery(scope: .library, includeHiddenAssets: true, includeAllBurstAssets: true))
            return Dictionary(
                uniqueKeysWithValues: assets.map {
                    ($0.asset.path, [$0.asset.localIdentifier, $0.pairedVideoPath, $0.asset.pairing?.rawValue])
                })
        }
        let serial = try await scanned(threads: 1, batchSize: 1, "serial")
        let parallel = try await scanned(threads: 2, batchSize: 512, "parallel")
        let split = try await scanned(threads: 2, batchSize: 5, "split")
        #expect(parallel == serial)
        #expect(split == serial)

        // What the identifiers and pairs must be, from outside Reel: b2sum (files of at most
        // 192 KiB), hashlib's sampled key (larger ones), and the pairs the fixtures were made as.
        #expect(serial.count == 14, "17 files, 3 of them movies paired into photos: \(serial.keys.sorted())")
        for (path, entry) in serial {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64)
            let key =
                ContentKey.isSampled(size: size)
                ? try await ContentKeyTests.sampledKey(path) : try await ContentKeyTests.b2sum(path)
            let copy = path.hasSuffix("/g/two.HEIC") ? 2 : 1
            #expect(entry[0] == LibraryIdentity.localIdentifier(contentHash: key, copy: copy), "\(path)")
        }
        #expect(serial[real + "/a/IMG_0001.HEIC"]?[1] == real + "/a/IMG_0001.MOV")
        #expect(serial[real + "/c/IMG_0002.HEIC"]?[1] == real + "/b/renamed.mov")
        #expect(serial[real + "/d/IMG_0003.HEIC"]?[1] == real + "/d/IMG_0003.MOV")
        #expect(serial[real + "/d/IMG_0003.HEIC"]?[2] == PairingKind.inferred.rawValue)
        #expect(serial[real + "/e/IMG_0004.HEIC"]?[1] == nil && serial[real + "/f/IMG_0004.MOV"] != nil)
    }

    @Test("a second scan of the same library at once is refused as busy")
    func oneScanAtATime() async throws {
        let path = LibraryFixtures.folder("db-busy").appendingPathComponent("library.sqlite").path
        let library = try PhotoLibrary(path: path)
        let lock = try ScanLock(databasePath: path)
        await #expect(throws: LibraryError.self) { try await library.scan([LibraryFixtures.folder("busy").path]) }
        lock.release()
        _ = try await library.scan([LibraryFixtures.folder("busy").path])
    }
}

enum InputLimitsFixture {
    static var standard: InputLimits { Asset.defaultLimits }
}
