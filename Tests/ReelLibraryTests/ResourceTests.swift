import Foundation
import ReelSystem
import Synchronization
import TestSupport
import Testing

@testable import ReelLibrary

@Suite("Resources", .tags(.process, .media), .timeLimit(.minutes(10)))
struct ResourceTests {
    @Test("BLAKE2b-256 agrees with b2sum on empty, short, block-sized and real files")
    func hash() async throws {
        let folder = LibraryFixtures.folder("hash")
        var generator = SystemRandomNumberGenerator()
        for size in [0, 1, 127, 128, 129, 256, 1 << 20, (1 << 20) + 17] {
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let url = folder.appendingPathComponent("f\(size)")
            try Data(bytes).write(to: url)
            let mine = try await onOwnThread {
                var hasher = ContentHasher()
                hasher.update(bytes)
                return hasher.finalize()
            }
            let tool = try await Tools.run("b2sum", ["-l", "256", url.path])
            #expect(mine == String(tool.stdout.prefix(64)), "size \(size)")
        }
        let path = try Media.heic
        let whole = try await onOwnThread { () -> String? in
            let descriptor = open(path, O_RDONLY)
            defer { close(descriptor) }
            return ContentHasher.hash(descriptor: descriptor, length: 721_093)
        }
        let tool = try await Tools.run("b2sum", ["-l", "256", path])
        #expect(whole == String(tool.stdout.prefix(64)))
    }

    @Test("a Live Photo's movie and a Motion Photo's embedded video are written byte for byte, with progress")
    func writeResources() async throws {
        let root = LibraryFixtures.folder("resources")
        let library = try LibraryFixtures.library("resources")
        let identifier = "D0C5A1E2-0000-4000-8000-000000000010"
        try await LibraryFixtures.still(identifier, at: root.appendingPathComponent("IMG_0010.HEIC"))
        try await LibraryFixtures.movie(identifier, at: root.appendingPathComponent("IMG_0010.MOV"), stillSeconds: 0.5)
        try LibraryFixtures.copy(try Media.motionPhoto, to: root.appendingPathComponent("PXL_motion.jpg"))
        _ = try await library.scan([root.path])
        let live = try await library.fetchAssets(
            FetchOptions(
                predicate: "(mediaSubtypes & 8) != 0", sortDescriptors: [FetchSort(key: .pixelWidth, ascending: true)]))
        #expect(live.count == 2)
        let out = LibraryFixtures.folder("resources-out")

        let motion = try #require(live.first { $0.pairing == .motionPhoto })
        #expect(motion.playbackStyle == .livePhoto && abs((motion.stillImageTime ?? 0) - 0.5) < 1e-9)
        let motionVideo = try #require(try await library.resources(for: motion).first { $0.type == .pairedVideo })
        #expect(motionVideo.offset == 30_821 && motionVideo.length == 122_562 && motionVideo.isByteRange)
        let seen = Mutex<[Int64]>([])
        let target = out.appendingPathComponent("motion.mp4").path
        let written = try await library.writeData(for: motionVideo, toFile: target) { done, _ in
            seen.withLock { $0.append(done) }
        }
        #expect(seen.withLock { $0.last } == 122_562)
        let tail = try await Tools.run("sh", ["-c", "tail -c 122562 '\(try Media.motionPhoto)' | b2sum -l 256"])
        let copy = try await Tools.run("b2sum", ["-l", "256", target])
        #expect(
            String(copy.stdout.prefix(64)) == String(tail.stdout.prefix(64))
                && written == String(copy.stdout.prefix(64)))
        let probe = try await LibraryFixtures.ffprobe(target)
        #expect(abs(Double((probe["format"] as! [String: Any])["duration"] as! String)! - 4.133) < 0.01)

        let apple = try #require(live.first { $0.pairing == .contentIdentifier })
        let movie = try #require(try await library.resources(for: apple).first { $0.type == .pairedVideo })
        let movieOut = out.appendingPathComponent("paired.mov").path
        try await library.writeData(for: movie, toFile: movieOut)
        let cmp = try await Tools.run("cmp", [movie.path, movieOut])
        #expect(cmp.status == 0, "the copy differs: \(cmp.stdout)")
        // The identifier and the mebx track survive (a remux would lose them): exiftool reads both.
        let tool = try await LibraryFixtures.exiftool(movieOut, ["-ee"])
        #expect((tool["ContentIdentifier"] as? String) == identifier)
        // An existing file is not replaced; nothing half-written is left beside it.
        await #expect(throws: LibraryError.self) { try await library.writeData(for: movie, toFile: movieOut) }
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasPrefix(".") }
        #expect(left.isEmpty)
    }

    @Test("a resource whose file changed since the scan is refused as stale")
    func stale() async throws {
        let root = LibraryFixtures.folder("stale")
        let library = try LibraryFixtures.library("stale")
        let path = root.appendingPathComponent("clip.mov")
        try LibraryFixtures.copy(try Media.movie, to: path)
        _ = try await library.scan([root.path])
        let asset = try #require(try await library.fetchAssets().first)
        _ = try await library.resolve(asset.localIdentifier)
        let handle = try FileHandle(forWritingTo: path)
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data([1, 2, 3]))
        try handle.close()
        await #expect(throws: LibraryError.self) { try await library.resolve(asset.localIdentifier) }
        let resource = try #require(try await library.resources(for: asset).first)
        await #expect(throws: LibraryError.self) {
            try await library.writeData(
                for: resource, toFile: LibraryFixtures.folder("stale-out").appendingPathComponent("x.mov").path)
        }
    }
}
