import Foundation
import TestSupport
import Testing

@testable import ReelLibrary

/// Photos made at test time for the edit layout: a solid colour, as a HEIC (heif-enc) or a JPEG
/// (ffmpeg), and AAE property lists written as Photos writes them.
enum EditFixtures {
    /// A 320x240 picture of one colour at `url`: HEIC by heif-enc for a `.HEIC` name, PNG for `.png`, else
    /// a JPEG, by ffmpeg.
    static func photo(_ colour: String, at url: URL) async throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if url.pathExtension.lowercased() == "heic" {
            let png = url.deletingLastPathComponent().appendingPathComponent(".\(colour)-\(UUID().uuidString).png")
            defer { try? FileManager.default.removeItem(at: png) }
            try await Tools.ffmpeg([
                "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", png.path,
            ])
            let made = try await Tools.run("heif-enc", ["-q", "80", "-o", url.path, png.path])
            try #require(made.status == 0, "heif-enc: \(made.stderr)")
        } else if url.pathExtension.lowercased() == "png" {
            try await Tools.ffmpeg(["-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", url.path])
        } else {
            try await Tools.ffmpeg([
                "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", "-q:v", "2", "-f", "mjpeg",
                url.path,
            ])
        }
    }

    /// An AAE as Photos writes it: an XML property list with base64 `adjustmentData`.
    static func aae(
        at url: URL, identifier: String = "com.apple.photo", version: String = "1.5", data: Data = Data("crop".utf8)
    ) throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>adjustmentBaseVersion</key>
            \t<integer>0</integer>
            \t<key>adjustmentData</key>
            \t<data>\(data.base64EncodedString())</data>
            \t<key>adjustmentEditorBundleID</key>
            \t<string>com.apple.mobileslideshow</string>
            \t<key>adjustmentFormatIdentifier</key>
            \t<string>\(identifier)</string>
            \t<key>adjustmentFormatVersion</key>
            \t<string>\(version)</string>
            \t<key>adjustmentRenderTypes</key>
            \t<integer>0</integer>
            \t<key>adjustmentTimestamp</key>
            \t<date>2020-05-04T22:39:11Z</date>
            </dict>
            </plist>

            """
        try Data(text.utf8).write(to: url)
    }
}

/// The edit layout of an iPhone export (`IMG_1234.HEIC`, `IMG_E1234.JPG`, `IMG_1234.AAE`,
/// `IMG_E1234.MOV`) scanned into one asset, whatever the order; versions; edits saved and reverted
/// as PhotoKit apps do.
@Suite("Edits and versions", .tags(.process, .media), .timeLimit(.minutes(10)))
struct EditTests {
    /// The layout of an edited Live Photo, generated: the real HEIC and a movie sharing its content
    /// identifier, a red rendered edit, the edited movie and an AAE.
    static func editedLivePhoto(in folder: URL) async throws {
        let file = { (name: String) in folder.appendingPathComponent(name) }
        try await LibraryFixtures.still(Media.heicIdentifier, at: file("IMG_0001.HEIC"))
        try await LibraryFixtures.movie(Media.heicIdentifier, at: file("IMG_0001.MOV"))
        try await EditFixtures.photo("red", at: file("IMG_E0001.JPG"))
        try await LibraryFixtures.movie(Media.heicIdentifier, at: file("IMG_E0001.MOV"), seconds: 1)
        try EditFixtures.aae(at: file("IMG_0001.AAE"))
    }

    static func types(_ resources: [AssetResource]) -> [AssetResourceType] { resources.map(\.type) }

    @Test("an edited Live Photo is one asset: photo, pairedVideo, fullSizePhoto, adjustmentData, fullSizePairedVideo")
    func editedLivePhotoIsOneAsset() async throws {
        let folder = LibraryFixtures.folder("edit-layout")
        try await Self.editedLivePhoto(in: folder)
        try await EditFixtures.photo("blue", at: folder.appendingPathComponent("IMG_0002.HEIC"))
        let library = try LibraryFixtures.library("edit-layout")
        let report = try await library.scan([folder.path])
        #expect(report.insertedLocalIdentifiers.count == 2, "\(report)")
        #expect(report.notes.isEmpty && report.skipped.isEmpty, "\(report)")
        let assets = try await library.fetchAssets()
        let edited = try #require(assets.first { $0.originalFilename == "IMG_0001.HEIC" })
        let plain = try #require(assets.first { $0.originalFilename == "IMG_0002.HEIC" })
        #expect(assets.count == 2 && edited.hasAdjustments && !plain.hasAdjustments)
        #expect(edited.playbackStyle == .livePhoto && edited.pairing == .contentIdentifier)
        let resources = try await library.resources(for: edited)
        #expect(Self.types(resources) == [.photo, .pairedVideo, .fullSizePhoto, .adjustmentData, .fullSizePairedVideo])
        #expect(
            resources.map(\.originalFilename) == [
                "IMG_0001.HEIC", "IMG_0001.MOV", "IMG_E0001.JPG", "IMG_0001.AAE", "IMG_E0001.MOV",
            ])
        #expect(resources[3].uniformTypeIdentifier == AAEParser.uniformTypeIdentifier)
        // Versions: current is the edit, unadjusted and original the photo; without an edit, the photo.
        #expect(try await library.photoResource(for: edited, version: .current).type == .fullSizePhoto)
        #expect(try await library.photoResource(for: edited, version: .unadjusted).type == .photo)
        #expect(try await library.photoResource(for: edited, version: .original).path == edited.path)
        for version in AssetVersion.allCases {
            #expect(try await library.photoResource(for: plain, version: version).path == plain.path)
        }
        // Predicates filter on it.
        let filtered = try await library.fetchAssets(try FetchOptions(predicate: "hasAdjustments == TRUE"))
        #expect(filtered.map(\.localIdentifier) == [edited.localIdentifier])
        // The edit's resources are written out byte for byte.
        let out = LibraryFixtures.folder("edit-layout-out")
        for resource in resources where resource.type == .fullSizePhoto || resource.type == .adjustmentData {
            let target = out.appendingPathComponent(resource.originalFilename).path
            try await library.writeData(for: resource, toFile: target)
            #expect(
                FileManager.default.contents(atPath: target) == FileManager.default.contents(atPath: resource.path))
        }
        // A rescan with nothing changed changes nothing.
        let again = try await library.scan([folder.path])
        #expect(again.insertedLocalIdentifiers.isEmpty && again.changedLocalIdentifiers.isEmpty)
        #expect(again.removedLocalIdentifiers.isEmpty, "\(again)")
    }

    /// A library's one asset: its identifier, whether it has adjustments, its resources' types and names.
    struct Summary: Equatable, CustomStringConvertible {
        var id: String
        var edited: Bool
        var names: [String]
        var description: String { "\(id) edited=\(edited) \(names)" }
    }

    static func summary(_ library: PhotoLibrary) async throws -> Summary {
        let assets = try await library.fetchAssets()
        try #require(assets.count == 1, "\(assets.map(\.originalFilename))")
        let names = try await library.resources(for: assets[0]).map { "\($0.type.name):\($0.originalFilename)" }
        return Summary(id: assets[0].localIdentifier, edited: assets[0].hasAdjustments, names: names)
    }

    @Test("the order files are met in does not matter: one batch, one file per batch, edit first, edit later")
    func scanOrderDoesNotMatter() async throws {
        let source = LibraryFixtures.folder("edit-order-source")
        try await Self.editedLivePhoto(in: source)
        let editNames = ["IMG_E0001.JPG", "IMG_E0001.MOV", "IMG_0001.AAE"]
        let originalNames = ["IMG_0001.HEIC", "IMG_0001.MOV"]
        func copy(_ names: [String], to folder: URL) throws {
            for name in names {
                try LibraryFixtures.copy(
                    source.appendingPathComponent(name).path, to: folder.appendingPathComponent(name))
            }
        }

        // All at once.
        let whole = LibraryFixtures.folder("edit-order-whole")
        try copy(editNames + originalNames, to: whole)
        let wholeLibrary = try LibraryFixtures.library("edit-order-whole")
        _ = try await wholeLibrary.scan([whole.path])
        let expected = try await Self.summary(wholeLibrary)
        #expect(expected.edited && expected.names.count == 5, "\(expected)")

        // One file per batch (a transaction each), so the edit's files and the original meet only in the store.
        let single = LibraryFixtures.folder("edit-order-single")
        try copy(editNames + originalNames, to: single)
        let singleLibrary = try LibraryFixtures.library("edit-order-single")
        _ = try await LibraryScanner(store: singleLibrary.store, threads: 1, batchSize: 1).scan([single.path])
        #expect(try await Self.summary(singleLibrary) == expected)

        // The edit first: its rendered photo and movie are assets until the original arrives.
        let first = LibraryFixtures.folder("edit-order-first")
        try copy(editNames, to: first)
        let firstLibrary = try LibraryFixtures.library("edit-order-first")
        let before = try await firstLibrary.scan([first.path])
        #expect(before.insertedLocalIdentifiers.count == 2, "the rendered photo and movie alone: \(before)")
        try copy(originalNames, to: first)
        let after = try await firstLibrary.scan([first.path])
        #expect(Set(after.removedLocalIdentifiers) == Set(before.insertedLocalIdentifiers), "\(after)")
        #expect(after.insertedLocalIdentifiers == [expected.id])
        #expect(try await Self.summary(firstLibrary) == expected)

        // The edit later: the original's asset changes, and a change token sees it.
        let later = LibraryFixtures.folder("edit-order-later")
        try copy(originalNames, to: later)
        let laterLibrary = try LibraryFixtures.library("edit-order-later")
        let plain = try await laterLibrary.scan([later.path])
        #expect(plain.insertedLocalIdentifiers == [expected.id])
        try copy(editNames, to: later)
        let edited = try await laterLibrary.scan([later.path])
        #expect(edited.changedLocalIdentifiers == [expected.id] && edited.insertedLocalIdentifiers.isEmpty)
        #expect(try await laterLibrary.changes(since: plain.token).updatedLocalIdentifiers == [expected.id])
        #expect(try await Self.summary(laterLibrary) == expected)

        // The edit deleted: no adjustments, no fullSizePhoto, and current is the photo again.
        try FileManager.default.removeItem(at: later.appendingPathComponent("IMG_E0001.JPG"))
        let removed = try await laterLibrary.scan([later.path])
        #expect(removed.changedLocalIdentifiers == [expected.id], "\(removed)")
        let reverted = try await Self.summary(laterLibrary)
        #expect(!reverted.edited && !reverted.names.contains { $0.hasPrefix("fullSizePhoto") }, "\(reverted)")
        let asset = try await laterLibrary.asset(expected.id)
        #expect(try await laterLibrary.photoResource(for: asset, version: .current).type == .photo)
    }

    @Test("an edited Live Photo's rendered photo and movie, paired with each other first, join their original")
    func pairedEditJoinsItsOriginal() async throws {
        let folder = LibraryFixtures.folder("edit-paired-first")
        let file = { (name: String) in folder.appendingPathComponent(name) }
        // The rendered edit carries the original's content identifier, as an iPhone's does, so alone it
        // pairs with the edited movie: one Live Photo of the edit's own.
        try await LibraryFixtures.still(
            Media.heicIdentifier, at: file("IMG_E0005.HEIC"), captured: "2020:05:04 18:39:12")
        try await LibraryFixtures.movie(Media.heicIdentifier, at: file("IMG_E0005.MOV"), seconds: 1)
        try EditFixtures.aae(at: file("IMG_0005.AAE"))
        let library = try LibraryFixtures.library("edit-paired-first")
        let before = try await library.scan([folder.path])
        #expect(before.insertedLocalIdentifiers.count == 1, "\(before)")
        #expect(try await library.fetchAssets().first?.pairing == .contentIdentifier)
        try await LibraryFixtures.still(Media.heicIdentifier, at: file("IMG_0005.HEIC"))
        try await LibraryFixtures.movie(Media.heicIdentifier, at: file("IMG_0005.MOV"))
        let after = try await library.scan([folder.path])
        #expect(after.removedLocalIdentifiers == before.insertedLocalIdentifiers, "\(after)")
        #expect(after.insertedLocalIdentifiers.count == 1, "\(after)")
        let summary = try await Self.summary(library)
        #expect(summary.edited)
        #expect(
            summary.names == [
                "photo:IMG_0005.HEIC", "pairedVideo:IMG_0005.MOV", "fullSizePhoto:IMG_E0005.HEIC",
                "adjustmentData:IMG_0005.AAE", "fullSizePairedVideo:IMG_E0005.MOV",
            ], "\(summary)")
        let again = try await library.scan([folder.path])
        #expect(again.changedLocalIdentifiers.isEmpty && again.insertedLocalIdentifiers.isEmpty, "\(again)")
    }

    @Test("a garbled, hostile or oversized AAE is a note: the scan goes on and the photo keeps its edit")
    func garbledAdjustmentData() async throws {
        let folder = LibraryFixtures.folder("edit-garbled")
        let file = { (name: String) in folder.appendingPathComponent(name) }
        try await EditFixtures.photo("blue", at: file("IMG_0002.HEIC"))
        try await EditFixtures.photo("red", at: file("IMG_E0002.JPG"))
        try Data([0x3C, 0x3F, 0x78, 0x6D, 0x6C, 0xFF, 0x00, 0xFE] + Array("<plist><dict><key>".utf8)).write(
            to: file("IMG_0002.AAE"))
        try await EditFixtures.photo("green", at: file("IMG_0003.HEIC"))
        // Over the limit: never parsed.
        try Data(repeating: 0x41, count: AAEParser.maxBytes + 1).write(to: file("IMG_0003.AAE"))
        try await EditFixtures.photo("yellow", at: file("IMG_0004.HEIC"))
        // A binary property list: never read.
        let array = try PropertyListSerialization.data(fromPropertyList: ["a", "b"], format: .binary, options: 0)
        try array.write(to: file("IMG_0004.AAE"))

        // Arrays nested 60,000 deep: Foundation's parser recurses, so this is never handed to it.
        try await EditFixtures.photo("white", at: file("IMG_0005.HEIC"))
        let nested = "<?xml version=\"1.0\"?><plist version=\"1.0\">" + String(repeating: "<array>", count: 60_000)
        try Data((nested + String(repeating: "</array>", count: 60_000) + "</plist>").utf8).write(
            to: file("IMG_0005.AAE"))
        // An XML property list that is not a dictionary.
        try await EditFixtures.photo("black", at: file("IMG_0006.HEIC"))
        try PropertyListSerialization.data(fromPropertyList: ["a"], format: .xml, options: 0).write(
            to: file("IMG_0006.AAE"))
        let library = try LibraryFixtures.library("edit-garbled")
        let report = try await library.scan([folder.path])
        #expect(report.insertedLocalIdentifiers.count == 5, "\(report)")
        let notes = Dictionary(
            uniqueKeysWithValues: report.notes.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        #expect(notes["IMG_0002.AAE"] == "adjustment data unreadable: not a property list", "\(notes)")
        #expect(notes["IMG_0003.AAE"]?.contains("over the limit") == true, "\(notes)")
        #expect(notes["IMG_0004.AAE"] == "adjustment data unreadable: not an XML property list", "\(notes)")
        #expect(notes["IMG_0005.AAE"] == "adjustment data unreadable: nested deeper than 16 levels", "\(notes)")
        #expect(notes["IMG_0006.AAE"] == "adjustment data unreadable: not a dictionary", "\(notes)")
        let edited = try #require(try await library.fetchAssets().first { $0.originalFilename == "IMG_0002.HEIC" })
        #expect(edited.hasAdjustments)
        #expect(Self.types(try await library.resources(for: edited)) == [.photo, .fullSizePhoto, .adjustmentData])
        #expect(try await library.notes(for: edited).contains("adjustment data unreadable: not a property list"))
    }

    @Test("edit and revert: files beside the original, never over another, in the change history")
    func editAndRevert() async throws {
        let folder = LibraryFixtures.folder("edit-apply")
        let inputs = LibraryFixtures.folder("edit-apply-inputs")
        let original = folder.appendingPathComponent("IMG_0004.HEIC")
        try await EditFixtures.photo("blue", at: original)
        try await EditFixtures.photo("red", at: inputs.appendingPathComponent("red.jpg"))
        try await EditFixtures.photo("lime", at: inputs.appendingPathComponent("lime.heic"))
        try await EditFixtures.photo("white", at: inputs.appendingPathComponent("white.png"))
        let originalBytes = try Data(contentsOf: original)
        let library = try LibraryFixtures.library("edit-apply")
        _ = try await library.scan([folder.path])
        let asset = try #require(try await library.fetchAssets().first)
        let token = try await library.currentChangeToken()

        let crop = Data("crop 0.1 0.1 0.8 0.8".utf8)
        let edited = try await library.applyEdit(
            ContentEditingOutput(
                adjustmentData: AdjustmentData(formatIdentifier: "com.example.crop", formatVersion: "1.0", data: crop),
                renderedContentURL: inputs.appendingPathComponent("red.jpg")),
            to: asset)
        #expect(edited.hasAdjustments && edited.localIdentifier == asset.localIdentifier)
        let rendered = folder.appendingPathComponent("IMG_E0004.JPG")
        #expect(try Data(contentsOf: rendered) == (try Data(contentsOf: inputs.appendingPathComponent("red.jpg"))))
        let plist = try #require(
            try PropertyListSerialization.propertyList(
                from: Data(contentsOf: folder.appendingPathComponent("IMG_0004.AAE")), format: nil) as? [String: Any])
        #expect(plist["adjustmentFormatIdentifier"] as? String == "com.example.crop")
        #expect(plist["adjustmentFormatVersion"] as? String == "1.0" && plist["adjustmentData"] as? Data == crop)
        #expect(try Data(contentsOf: original) == originalBytes, "the original is never touched")
        #expect(try await library.changes(since: token).updatedLocalIdentifiers == [asset.localIdentifier])
        #expect(Self.types(try await library.resources(for: edited)) == [.photo, .fullSizePhoto, .adjustmentData])

        // A second edit replaces the first, a HEIC now: the JPEG goes.
        let second = try await library.currentChangeToken()
        let lime = Data("lime".utf8)
        _ = try await library.applyEdit(
            ContentEditingOutput(
                adjustmentData: AdjustmentData(formatIdentifier: "com.example.tint", formatVersion: "2", data: lime),
                renderedContentURL: inputs.appendingPathComponent("lime.heic")),
            to: edited)
        #expect(!FileManager.default.fileExists(atPath: rendered.path))
        let heic = folder.appendingPathComponent("IMG_E0004.HEIC")
        #expect(try Data(contentsOf: heic) == (try Data(contentsOf: inputs.appendingPathComponent("lime.heic"))))
        let current = try await library.photoResource(for: edited, version: .current)
        #expect(current.type == .fullSizePhoto && current.path == heic.path)
        #expect(try await library.changes(since: second).updatedLocalIdentifiers == [asset.localIdentifier])
        let rescan = try await library.scan([folder.path])
        #expect(rescan.changedLocalIdentifiers.isEmpty && rescan.insertedLocalIdentifiers.isEmpty, "\(rescan)")

        // Revert: the edit's files go, the original stays.
        let third = try await library.currentChangeToken()
        let reverted = try await library.revertEdit(of: edited)
        #expect(!reverted.hasAdjustments)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["IMG_0004.HEIC"])
        #expect(try Data(contentsOf: original) == originalBytes)
        #expect(try await library.changes(since: third).updatedLocalIdentifiers == [asset.localIdentifier])
        #expect(Self.types(try await library.resources(for: reverted)) == [.photo])

        // Refusals: a rendered file that is not a JPEG or HEIC; a name taken by a file that is not the edit.
        await #expect(throws: LibraryError.self) {
            try await library.applyEdit(
                ContentEditingOutput(
                    adjustmentData: AdjustmentData(formatIdentifier: "x", formatVersion: "1", data: Data()),
                    renderedContentURL: inputs.appendingPathComponent("white.png")),
                to: reverted)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["IMG_0004.HEIC"])
        let squatter = folder.appendingPathComponent("IMG_E0004.JPG")
        try Data("not a photo".utf8).write(to: squatter)
        _ = try await library.scan([folder.path])
        do {
            _ = try await library.applyEdit(
                ContentEditingOutput(
                    adjustmentData: AdjustmentData(formatIdentifier: "x", formatVersion: "1", data: Data()),
                    renderedContentURL: inputs.appendingPathComponent("red.jpg")),
                to: reverted)
            Issue.record("an edit replaced a file that is not its own")
        } catch let error as LibraryError {
            #expect(error.code == .writeFailed && error.message.contains("IMG_E0004.JPG"), "\(error)")
        }
        #expect(try Data(contentsOf: squatter) == Data("not a photo".utf8))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("IMG_0004.AAE").path))
    }

    @Test("edit names: an E after the last underscore, digits only")
    func names() {
        #expect(EditLayout.originalStem(ofEdited: "IMG_E1234") == "IMG_1234")
        #expect(EditLayout.originalStem(ofEdited: "PXL_20231001_E123") == "PXL_20231001_123")
        #expect(EditLayout.originalStem(ofEdited: "IMG_1234") == nil)
        #expect(EditLayout.originalStem(ofEdited: "IMG_Edit") == nil)
        #expect(EditLayout.editedStem(ofOriginal: "IMG_1234") == "IMG_E1234")
        #expect(EditLayout.editedStem(ofOriginal: "holiday") == nil)
        #expect(EditLayout.role(ofName: "img_e0001.jpeg").role == .renderedPhoto)
        let movie = EditLayout.role(ofName: "IMG_E0001.MOV")
        #expect(movie.role == .renderedMovie && movie.stem == "img_0001")
        let data = EditLayout.role(ofName: "IMG_0001.AAE")
        #expect(data.role == .adjustmentData && data.stem == "img_0001")
        let original = EditLayout.role(ofName: "IMG_0001.HEIC")
        #expect(original.role == .original && original.stem == "img_0001")
    }
}
