import Foundation
import TestSupport
import Testing

@testable import ReelLibrary

/// Keys read from three 64 KiB samples (`ContentKey`), confirmed or split by whole-file hashes
/// where two files share one (`KeyConfirmation`). Every key is checked against Python's hashlib
/// BLAKE2b (sampled) or `b2sum` (whole), not only Reel's own hasher.
@Suite("Content keys", .tags(.process, .media), .timeLimit(.minutes(5)))
struct ContentKeyTests {
    /// The sampled key as hashlib computes it: BLAKE2b-256 of the domain, the size (8 bytes,
    /// little-endian), then the first, middle and last 64 KiB.
    static func sampledKey(_ path: String) async throws -> String {
        let script = """
            import hashlib, os, sys
            p = sys.argv[1]; n = os.path.getsize(p); s = 65536
            h = hashlib.blake2b(digest_size=32)
            h.update(b"reel-sampled-key-v1\\0"); h.update(n.to_bytes(8, "little"))
            with open(p, "rb") as f:
                for o in (0, n // 2 - s // 2, n - s):
                    f.seek(o); h.update(f.read(s))
            print(h.hexdigest())
            """
        let result = try await Tools.run("python3", ["-c", script, path])
        try #require(result.status == 0, "python3 failed: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func b2sum(_ path: String) async throws -> String {
        let result = try await Tools.run("b2sum", ["-l", "256", path])
        try #require(result.status == 0)
        return String(result.stdout.prefix(64))
    }

    /// A JPEG made by ffmpeg, large enough (> 3 × 64 KiB) to be keyed from samples.
    static func bigJPEG(at url: URL) async throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let made = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1920x1080", "-vf", "noise=alls=40:allf=t",
                "-frames:v", "1", "-q:v", "2",
                url.path,
            ])
        try #require(made.status == 0, "ffmpeg failed: \(made.stderr)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        try #require(size > 300_000, "the generated still is only \(size) bytes")
    }

    /// Flips one byte between the first and the middle sample (inside the entropy-coded data).
    static func flipUnsampledByte(_ url: URL) throws -> Int {
        var data = try Data(contentsOf: url)
        let offset = 65_536 + (data.count / 2 - 32_768 - 65_536) / 2
        data[offset] ^= 0x01
        try data.write(to: url)
        return offset
    }

    @Test("identical copies share the sampled key and are numbered as copies; keys and identifiers hold across rescans")
    func copies() async throws {
        let root = LibraryFixtures.folder("key-copies")
        let library = try LibraryFixtures.library("key-copies")
        let first = root.appendingPathComponent("a/big.jpg")
        try await Self.bigJPEG(at: first)
        try LibraryFixtures.copy(first.path, to: root.appendingPathComponent("b/copy.jpg"))
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("a/IMG_2927.HEIC"))

        let scan = try await library.scan([root.path])
        #expect(scan.insertedLocalIdentifiers.count == 3 && scan.filesHashedWhole == 2)
        let key = try await Self.sampledKey(first.path)
        let heicKey = try await Self.sampledKey(try Media.heic)
        let firstWhole = try await Self.b2sum(first.path)
        #expect(key != firstWhole)
        let expected = Set(
            [
                LibraryIdentity.localIdentifier(contentHash: key, copy: 1),
                LibraryIdentity.localIdentifier(contentHash: key, copy: 2),
                LibraryIdentity.localIdentifier(contentHash: heicKey, copy: 1),
            ])
        #expect(Set(scan.insertedLocalIdentifiers) == expected)
        // Three samples of the two large ones, plus both copies whole to confirm their shared key.
        let size = Int64(try #require(try FileManager.default.attributesOfItem(atPath: first.path)[.size] as? Int))
        #expect(scan.bytesHashed == 3 * 3 * 65_536 + 2 * size)

        // Touched (new time, same bytes): read again, same key, same identifiers, nothing new.
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: first.path)
        let again = try await library.scan([root.path])
        #expect(again.filesRead == 1 && again.insertedLocalIdentifiers.isEmpty && again.removedLocalIdentifiers.isEmpty)
        let all = try await library.fetchAssets(FetchOptions())
        #expect(Set(all.map(\.localIdentifier)) == expected)
        #expect(all.filter { $0.contentHash == key }.count == 2)
    }

    @Test(
        "same size and samples, another middle: two assets with unrelated identifiers; its copy joins it; a move keeps it"
    )
    func sampledCollision() async throws {
        let root = LibraryFixtures.folder("key-collision")
        let library = try LibraryFixtures.library("key-collision")
        let original = root.appendingPathComponent("a/original.jpg")
        try await Self.bigJPEG(at: original)
        let first = try await library.scan([root.path])
        let originalID = try #require(first.insertedLocalIdentifiers.first)
        #expect(first.filesHashedWhole == 0, "a key no other file holds is not confirmed")

        // Another file with the same size and samples and one byte changed between them.
        let twin = root.appendingPathComponent("b/twin.jpg")
        try LibraryFixtures.copy(original.path, to: twin)
        _ = try Self.flipUnsampledByte(twin)
        let twinCopy = root.appendingPathComponent("c/twin-copy.jpg")
        try LibraryFixtures.copy(twin.path, to: twinCopy)
        let key = try await Self.sampledKey(original.path)
        let twinKey = try await Self.sampledKey(twin.path)
        try #require(twinKey == key, "the twin must share the sampled key")
        let twinWhole = try await Self.b2sum(twin.path)
        let originalWhole = try await Self.b2sum(original.path)
        try #require(twinWhole != originalWhole, "the twin must differ")

        let second = try await library.scan([root.path])
        let twinIDs = Set(
            [
                LibraryIdentity.localIdentifier(contentHash: twinWhole, copy: 1),
                LibraryIdentity.localIdentifier(contentHash: twinWhole, copy: 2),
            ])
        #expect(Set(second.insertedLocalIdentifiers) == twinIDs)
        #expect(second.changedLocalIdentifiers.isEmpty && second.removedLocalIdentifiers.isEmpty)
        let kept = try await library.asset(originalID)
        #expect(kept.contentHash == key && kept.path == original.resolvingSymlinksInPath().path)
        let twinAssets = try await library.fetchAssets(FetchOptions()).filter { twinIDs.contains($0.localIdentifier) }
        #expect(twinAssets.count == 2 && twinAssets.allSatisfy { $0.contentHash == twinWhole })
        #expect(!twinIDs.contains { $0.hasPrefix(String(originalID.prefix(36))) })

        // Moving the split-off file keeps its identifier.
        let twinID = try #require(
            twinAssets.first { $0.path.hasSuffix("/b/twin.jpg") }?.localIdentifier)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("d"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: twin, to: root.appendingPathComponent("d/renamed.jpg"))
        let moved = try await library.scan([root.path])
        #expect(moved.changedLocalIdentifiers == [twinID] && moved.insertedLocalIdentifiers.isEmpty)
        #expect(moved.removedLocalIdentifiers.isEmpty)
        let movedTwin = try await library.asset(twinID)
        #expect(movedTwin.path.hasSuffix("/d/renamed.jpg"))
    }

    @Test(
        "a file changed in its unsampled middle (size and time change) is read again and re-keyed, keeping its identifier"
    )
    func changedMiddle() async throws {
        let root = LibraryFixtures.folder("key-changed")
        let library = try LibraryFixtures.library("key-changed")
        let file = root.appendingPathComponent("a/still.jpg")
        try await Self.bigJPEG(at: file)
        let first = try await library.scan([root.path])
        let id = try #require(first.insertedLocalIdentifiers.first)
        let before = try await library.asset(id).contentHash

        // 100 bytes inserted between the first and the middle sample: the size changes, so the key.
        var data = try Data(contentsOf: file)
        data.insert(contentsOf: [UInt8](repeating: 0x5A, count: 100), at: 70_000)
        try data.write(to: file)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: file.path)
        let changed = try await library.scan([root.path])
        #expect(changed.filesRead == 1 && changed.changedLocalIdentifiers == [id])
        #expect(changed.insertedLocalIdentifiers.isEmpty && changed.removedLocalIdentifiers.isEmpty)
        let after = try await library.asset(id).contentHash
        let expected = try await Self.sampledKey(file.path)
        #expect(after != before && after == expected)

    }

    @Test("a library keyed by whole-file hashes before sampling: a moved large file keeps its identifier and key")
    func legacyMove() async throws {
        let root = LibraryFixtures.folder("key-legacy")
        let databaseFolder = LibraryFixtures.folder("db-key-legacy")
        let database = databaseFolder.appendingPathComponent("library.sqlite").path
        let file = root.appendingPathComponent("a/IMG_2927.HEIC")
        try LibraryFixtures.copy(try Media.heic, to: file)
        let whole = try await Self.b2sum(file.path)
        do {
            let library = try PhotoLibrary(path: database)
            _ = try await library.scan([root.path])
        }
        // What the previous version wrote: the whole-content hash as the key, and its identifier.
        let legacyID = LibraryIdentity.localIdentifier(contentHash: whole, copy: 1)
        let rewrite = try await Tools.run(
            "sqlite3",
            [
                database,
                "UPDATE file SET content_hash = '\(whole)'; UPDATE asset SET content_hash = '\(whole)', local_identifier = '\(legacyID)';",
            ])
        try #require(rewrite.status == 0, "sqlite3 failed: \(rewrite.stderr)")

        try FileManager.default.createDirectory(at: root.appendingPathComponent("b"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: file, to: root.appendingPathComponent("b/moved.HEIC"))
        let library = try PhotoLibrary(path: database)
        let moved = try await library.scan([root.path])
        #expect(moved.changedLocalIdentifiers == [legacyID] && moved.insertedLocalIdentifiers.isEmpty)
        #expect(moved.removedLocalIdentifiers.isEmpty && moved.filesHashedWhole == 1)
        let asset = try await library.asset(legacyID)
        #expect(asset.path.hasSuffix("/b/moved.HEIC") && asset.contentHash == whole)
    }
}
