import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelLibrary

/// The Swift API in PhotoKit's words (`PhotoLibrary`, `Asset`, `AssetResource`, `writeData`,
/// `requestExportSession`, `AssetCreationRequest`), used end to end as the DocC article shows it.
@Suite("PhotoKit's API", .tags(.media), .timeLimit(.minutes(10)))
struct PhotoKitAPITests {
    @Test("fetch a Motion Photo, write its pairedVideo, export its motion in place, save the export back")
    func fetchWriteExportSave() async throws {
        let root = LibraryFixtures.folder("photokit")
        let out = LibraryFixtures.folder("photokit-out")
        let photo = root.appendingPathComponent("PXL_0004.jpg")
        try await LibraryExportTests.motionPhoto(at: photo)
        let library = try LibraryFixtures.library("photokit")
        _ = try await library.scan([root.path])

        let assets: [PhotoLibrary.Asset] = try await library.fetchAssets(
            try FetchOptions(predicate: "(mediaSubtypes & 8) != 0"))
        #expect(assets.count == 1)
        let asset = try #require(assets.first)
        let resources: [AssetResource] = try await library.resources(for: asset)
        let paired = try #require(resources.first { $0.type == .pairedVideo })

        // writeData: the embedded MP4's bytes exactly (the photo's last `length` bytes).
        let written = out.appendingPathComponent("paired.mp4")
        try await library.writeData(for: paired, toFile: written.path)
        let whole = try Data(contentsOf: photo)
        #expect(try Data(contentsOf: written) == whole.suffix(Int(paired.length)))

        // requestExportSession: the session reads that range in place.
        let session = try await library.requestExportSession(forVideo: asset, exportPreset: "LowQuality")
        #expect(session.asset.byteRange == paired.offset..<(paired.offset + paired.length))
        #expect(session.asset.url.path == photo.path)
        let exported = out.appendingPathComponent("motion.mp4")
        session.outputURL = exported
        try await session.export()
        #expect(session.status == .completed)
        let reference = try await LibraryFixtures.ffprobe(written.path)
        let probe = try await LibraryFixtures.ffprobe(exported.path)
        #expect(abs(LibraryExportTests.videoSeconds(probe) - LibraryExportTests.videoSeconds(reference)) < 0.05)
        #expect(LibraryExportTests.videoStream(probe)?["codec_name"] as? String == "h264")
        #expect(LibraryExportTests.tags(probe)["com.apple.quicktime.creationdate"] == "2021-07-14T10:20:30+0200")

        // A creation request copies the export into a library folder under the name asked for.
        let folder = root.appendingPathComponent("exports").path
        var request = AssetCreationRequest.forAsset(in: folder)
        request.addResource(
            with: .video, fileURL: exported,
            options: AssetCreationRequest.ResourceOptions(originalFilename: "Motion.mp4"))
        let identifier = try await library.performChanges(request)
        let created = try await library.fetchAssets(withLocalIdentifiers: [identifier])
        #expect(created.count == 1)
        #expect(created.first?.mediaType == .video && created.first?.path == folder + "/Motion.mp4")
        #expect(created.first?.creationDate == asset.creationDate && asset.creationDate != nil)
        #expect(FileManager.default.fileExists(atPath: exported.path), "copied, not moved")
        // The same file again (in place) is the asset it already is.
        var again = AssetCreationRequest.forAsset()
        again.addResource(with: .video, fileURL: URL(fileURLWithPath: folder + "/Motion.mp4"))
        #expect(try await library.performChanges(again) == identifier)
        #expect(try await library.countAssets() == 2)

        // A file changed since the scan is refused by name, not exported.
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, photo.path, &times, 0) == 0)
        do {
            _ = try await library.requestExportSession(forVideo: asset, exportPreset: "LowQuality")
            Issue.record("a changed file was exported")
        } catch {
            #expect(error.code == .assetChanged && error.message.contains(asset.localIdentifier), "\(error)")
        }
    }
}
