import Foundation
import TestSupport
import Testing

@testable import ReelLibrary

@Suite("Live Photos from files", .timeLimit(.minutes(10)))
struct LivePhotoTests {
    func live(_ library: PhotoLibrary) async throws -> [LibraryAsset] {
        try await library.fetchAssets(FetchOptions(predicate: "(mediaSubtypes & 8) != 0"))
    }

    @Test("paired by content identifier whichever side comes first; the movie is a resource, not an asset")
    func orderIndependent() async throws {
        let root = LibraryFixtures.folder("live")
        let library = try LibraryFixtures.library("live")
        let identifier = "D0C5A1E2-0000-4000-8000-000000000001"
        // The movie alone first: a video asset.
        try await LibraryFixtures.movie(
            identifier.lowercased(), at: root.appendingPathComponent("IMG_0001.MOV"), stillSeconds: 0.48)
        let first = try await library.scan([root.path])
        #expect(first.insertedLocalIdentifiers.count == 1)
        let movieID = first.insertedLocalIdentifiers[0]
        // Then the still: one Live Photo asset; the movie's own asset is removed.
        try await LibraryFixtures.still(identifier, at: root.appendingPathComponent("IMG_0001.HEIC"))
        let second = try await library.scan([root.path])
        #expect(second.insertedLocalIdentifiers.count == 1 && second.removedLocalIdentifiers == [movieID])
        let assets = try await library.fetchAssets()
        #expect(assets.count == 1)
        let photo = try #require(assets.first)
        #expect(
            photo.mediaType == .image && photo.mediaSubtypes.contains(.photoLive) && photo.playbackStyle == .livePhoto)
        #expect(photo.pairing == .contentIdentifier)
        #expect(abs(try #require(photo.stillImageTime) - 0.48) < 0.002)
        let resources = try await library.resources(for: photo)
        #expect(resources.map(\.type) == [.photo, .pairedVideo])
        #expect(
            resources[1].originalFilename == "IMG_0001.MOV"
                && resources[1].uniformTypeIdentifier == "com.apple.quicktime-movie")

        // The other order, in one scan: same result.
        let other = LibraryFixtures.folder("live2")
        try await LibraryFixtures.still(identifier, at: other.appendingPathComponent("IMG_0001.HEIC"))
        try await LibraryFixtures.movie(identifier, at: other.appendingPathComponent("IMG_0001.MOV"))
        let library2 = try LibraryFixtures.library("live2")
        let together = try await library2.scan([other.path])
        #expect(together.insertedLocalIdentifiers.count == 1)
        #expect(try await live(library2).count == 1)
    }

    @Test("a pair survives renames and moves to other folders; a lost movie leaves a plain photo")
    func renamesAndMoves() async throws {
        let root = LibraryFixtures.folder("moves")
        let library = try LibraryFixtures.library("moves")
        let identifier = "D0C5A1E2-0000-4000-8000-000000000002"
        try await LibraryFixtures.still(identifier, at: root.appendingPathComponent("2020/IMG_0002.HEIC"))
        try await LibraryFixtures.movie(identifier, at: root.appendingPathComponent("2020/IMG_0002.MOV"))
        _ = try await library.scan([root.path])
        let id = try #require(try await live(library).first?.localIdentifier)
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("videos"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(
            at: root.appendingPathComponent("2020/IMG_0002.MOV"), to: root.appendingPathComponent("videos/holiday.mov"))
        try FileManager.default.moveItem(
            at: root.appendingPathComponent("2020/IMG_0002.HEIC"), to: root.appendingPathComponent("2020/beach.HEIC"))
        let moved = try await library.scan([root.path])
        #expect(
            moved.changedLocalIdentifiers == [id] && moved.insertedLocalIdentifiers.isEmpty
                && moved.removedLocalIdentifiers.isEmpty)
        let asset = try await library.asset(id)
        #expect(asset.mediaSubtypes.contains(.photoLive) && asset.path.hasSuffix("2020/beach.HEIC"))
        #expect(try await library.resources(for: asset).last?.path.hasSuffix("videos/holiday.mov") == true)
        try FileManager.default.removeItem(at: root.appendingPathComponent("videos/holiday.mov"))
        let lost = try await library.scan([root.path])
        #expect(lost.changedLocalIdentifiers == [id])
        let plain = try await library.asset(id)
        #expect(!plain.mediaSubtypes.contains(.photoLive) && plain.playbackStyle == .image && plain.pairing == nil)
    }

    @Test("without identifiers: inferred in one folder by stem and time; never across folders by name")
    func inferred() async throws {
        let root = LibraryFixtures.folder("inferred")
        let library = try LibraryFixtures.library("inferred")
        // Same folder, same stem, a 2 s movie captured 1 s after the still: inferred.
        try await LibraryFixtures.still(
            nil, at: root.appendingPathComponent("here/IMG_0003.HEIC"), captured: "2020:05:04 18:39:11")
        try await LibraryFixtures.movie(
            nil, at: root.appendingPathComponent("here/IMG_0003_HEVC.MOV"), created: "2020-05-04T18:39:12-0400")
        // The same names in two other folders: not a pair.
        try await LibraryFixtures.still(
            nil, at: root.appendingPathComponent("left/IMG_0004.HEIC"), captured: "2020:05:04 18:39:11")
        try await LibraryFixtures.movie(
            nil, at: root.appendingPathComponent("right/IMG_0004.MOV"), created: "2020-05-04T18:39:12-0400")
        // Same folder and stem but a 7 s movie: not a Live Photo.
        try await LibraryFixtures.still(
            nil, at: root.appendingPathComponent("here/IMG_0005.HEIC"), captured: "2020:05:04 18:39:11")
        try await LibraryFixtures.movie(
            nil, at: root.appendingPathComponent("here/IMG_0005.MOV"), seconds: 7, created: "2020-05-04T18:39:12-0400")
        _ = try await library.scan([root.path])
        let pairs = try await live(library)
        #expect(pairs.count == 1)
        #expect(pairs.first?.pairing == .inferred && pairs.first?.originalFilename == "IMG_0003.HEIC")
        #expect(try await library.countAssets() == 5)
    }

    @Test("several candidates for one identifier: the same folder and stem win")
    func candidates() async throws {
        let root = LibraryFixtures.folder("candidates")
        let library = try LibraryFixtures.library("candidates")
        let identifier = "D0C5A1E2-0000-4000-8000-000000000006"
        try await LibraryFixtures.movie(identifier, at: root.appendingPathComponent("b/IMG_0006.MOV"))
        _ = try await library.scan([root.path])
        try await LibraryFixtures.still(
            identifier, at: root.appendingPathComponent("a/IMG_0006 copy.HEIC"), captured: "2020:05:04 18:00:00")
        try await LibraryFixtures.still(identifier, at: root.appendingPathComponent("b/IMG_0006.HEIC"))
        _ = try await library.scan([root.path])
        let pairs = try await live(library)
        #expect(pairs.count == 1)
        #expect(pairs.first?.path.hasSuffix("b/IMG_0006.HEIC") == true)
    }
}
