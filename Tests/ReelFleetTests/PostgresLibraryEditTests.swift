import Foundation
import ReelLibrary
import ReelLibraryFleet
import TestSupport
import Testing

@testable import ReelFleet

/// The edit layout scanned, edited and reverted through the PostgreSQL store, as a fleet's library
/// keeps it: one asset with its edit's resources, `hasAdjustments`, and change tokens.
@Suite("Edits in the PostgreSQL library", .tags(.postgres, .process, .media), .timeLimit(.minutes(10)))
struct PostgresLibraryEditTests {
    static func jpeg(_ colour: String, at url: URL) async throws {
        try await Tools.ffmpeg([
            "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", "-q:v", "2", "-f", "mjpeg", url.path,
        ])
    }

    @Test("an edited photo is one asset; an edit saved and reverted shows in the change history")
    func editLayoutThroughPostgres() async throws {
        let (database, store) = try await PostgresLibraryHarness.make()
        let library = PhotoLibrary(store: store)
        let folder = Fixtures.scratchFolder("postgres-edits")
        let file = { (name: String) in folder.appendingPathComponent(name) }
        // The edit's files first, so the rendered photo is an asset until its original arrives.
        try await Self.jpeg("red", at: file("IMG_E0001.JPG"))
        let plist: [String: Any] = [
            "adjustmentFormatIdentifier": "com.apple.photo", "adjustmentFormatVersion": "1.5",
            "adjustmentData": Data("crop".utf8),
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(
            to: file("IMG_0001.AAE"))
        let first = try await library.scan([folder.path])
        #expect(first.insertedLocalIdentifiers.count == 1, "\(first)")
        try await Self.jpeg("blue", at: file("IMG_0001.JPG"))
        let second = try await library.scan([folder.path])
        #expect(second.removedLocalIdentifiers == first.insertedLocalIdentifiers, "\(second)")
        let assets = try await library.fetchAssets()
        try #require(assets.count == 1)
        let asset = assets[0]
        #expect(asset.originalFilename == "IMG_0001.JPG" && asset.hasAdjustments)
        #expect(try await library.resources(for: asset).map(\.type) == [.photo, .fullSizePhoto, .adjustmentData])
        #expect(try await library.photoResource(for: asset, version: .current).originalFilename == "IMG_E0001.JPG")
        #expect(try await library.photoResource(for: asset, version: .original).originalFilename == "IMG_0001.JPG")

        let token = try await library.currentChangeToken()
        let reverted = try await library.revertEdit(of: asset)
        #expect(!reverted.hasAdjustments)
        #expect(try await library.changes(since: token).updatedLocalIdentifiers == [asset.localIdentifier])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["IMG_0001.JPG"])

        let inputs = Fixtures.scratchFolder("postgres-edits-inputs")
        try await Self.jpeg("lime", at: inputs.appendingPathComponent("edit.jpg"))
        let again = try await library.currentChangeToken()
        let edited = try await library.applyEdit(
            ContentEditingOutput(
                adjustmentData: AdjustmentData(
                    formatIdentifier: "com.example.crop", formatVersion: "1.0", data: Data()),
                renderedContentURL: inputs.appendingPathComponent("edit.jpg")),
            to: reverted)
        #expect(edited.hasAdjustments)
        #expect(try await library.changes(since: again).updatedLocalIdentifiers == [asset.localIdentifier])
        #expect(try await store.unownedFiles(limit: 10).isEmpty)
        await database.close()
    }
}
