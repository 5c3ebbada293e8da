import Foundation
import ReelExport
import TestSupport
import Testing

/// Where and with what a video was filmed leaves with it only by choice: `keep` (AVFoundation's default)
/// writes the phone's GPS position and model, `sharing` writes neither; the plan says beforehand, and
/// the result afterwards, which location and device keys are written. Checked with exiftool and
/// ffprobe on a real iPhone video, committed under `Tests/Fixtures`.
@Suite("Privacy by choice", .tags(.process, .media), .timeLimit(.minutes(5)))
struct PrivacyTests {
    /// An iPhone 6 video with its GPS position, make, model and software in QuickTime keys.
    static let phoneVideo = PhoneFiles.folder.appendingPathComponent("with-gps.mov")

    /// The tags exiftool finds, named `Group:Tag`, whose name says location or device.
    static func privateTags(_ url: URL) async throws -> [String] {
        let result = try await Tools.run("exiftool", ["-j", "-G1", "-a", url.path])
        #expect(result.status == 0, "exiftool: \(result.stderr)")
        let objects = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        let words = ["gps", "location", "make", "model", "software"]
        return (objects?.first?.keys.map { $0 } ?? []).filter { key in
            let name = key.lowercased()
            return words.contains { name.contains($0) } && !name.hasPrefix("system:")
        }.sorted()
    }

    @Test(arguments: ["MediumQuality", "Passthrough"], [MetadataPolicy.keep, .forSharing])
    func thePhonesPositionAndModelLeaveOnlyWhenKept(_ preset: String, _ policy: MetadataPolicy) async throws {
        _ = try PhoneFiles.movie
        #expect(try await Self.privateTags(Self.phoneVideo).contains("Keys:GPSCoordinates"))
        let asset = try await Asset.load(Self.phoneVideo)
        let session = try ExportSession(asset: asset, presetName: preset)
        session.outputFileType = .mov
        session.metadataPolicy = policy
        session.codecThreads = 1
        let output = Fixtures.scratchFolder("privacy").appendingPathComponent("out.mov")
        session.outputURL = output
        let plan = try session.determineCompatibility()
        try await session.export()
        let result = try #require(session.result)
        let tags = try await Self.privateTags(output)
        let format = try await ProbedFile.probe(output).format.tags ?? [:]
        if policy == .keep {
            #expect(tags.contains("Keys:GPSCoordinates") && tags.contains("Keys:Model"), "\(tags)")
            #expect(format["com.apple.quicktime.location.ISO6709"] == "+32.0929+034.8620+028.516/")
            #expect(format["com.apple.quicktime.model"] == "iPhone 6")
            #expect(plan.metadata.location == ["com.apple.quicktime.location.ISO6709"])
            #expect(
                plan.metadata.device == [
                    "com.apple.quicktime.make", "com.apple.quicktime.model", "com.apple.quicktime.software",
                ])
        } else {
            #expect(tags.isEmpty, "sharing wrote \(tags)")
            #expect(plan.metadata.location.isEmpty && plan.metadata.device.isEmpty)
            // What is not private stays: when it was filmed.
            #expect(format["com.apple.quicktime.creationdate"] == "2019-07-24T11:25:40+0300", "\(format)")
        }
        // The result reads the keys back from the file: what the plan said would be written was.
        #expect(result.metadata?.location == plan.metadata.location, "\(String(describing: result.metadata))")
        #expect(result.metadata?.device == plan.metadata.device)
    }

    @Test func aServiceSetsItsDefaultFromTheEnvironment() throws {
        #expect(try MetadataPolicy.serviceDefault(in: ["REEL_METADATA": "sharing"]) == .forSharing)
        #expect(try MetadataPolicy.serviceDefault(in: ["REEL_METADATA": ""]) == nil)
        #expect(try MetadataPolicy.serviceDefault(in: [:]) == nil)
        do {
            _ = try MetadataPolicy.serviceDefault(in: ["REEL_METADATA": "private"])
            Issue.record("an unknown policy was accepted")
        } catch {
            #expect(error.code == .invalidArgument && error.message.hasPrefix("REEL_METADATA: unknown metadata policy"))
        }
        // A request that does not choose leaves the default to its caller; one that does keeps its choice.
        let presets = PresetLibrary.shipped
        #expect(try ExportRequest(preset: "LowQuality").resolve(presets: presets).metadata == nil)
        #expect(try ExportRequest(preset: "LowQuality", metadata: "keep").resolve(presets: presets).metadata == .keep)
    }

    /// One list says what `sharing` drops, for a video's QuickTime keys and an image's Exif and XMP tag
    /// names alike: identifiers of a library, a device or a person go; credits and playback keys stay.
    @Test func identifiersOfALibraryADeviceOrAPersonAreNotShared() {
        let personal = [
            "com.apple.quicktime.content.identifier", "com.apple.photos.originating.signature",
            "ContentIdentifier", "MediaGroupUUID", "ImageUniqueID", "BodySerialNumber", "LensSerialNumber",
            "OwnerName", "CameraOwnerName", "xmpMM:DocumentID", "XMP-xmpMM:InstanceID", "GPSLatitude", "Make",
        ]
        for key in personal { #expect(MetadataPolicy.isPersonal(key), "\(key)") }
        let kept = [
            "creation_time", "com.apple.quicktime.creationdate", "com.apple.quicktime.title", "title", "artist",
            "copyright", "com.apple.quicktime.live-photo.auto", "com.apple.quicktime.live-photo.vitality-score",
            "DateTimeOriginal", "Orientation",
        ]
        for key in kept { #expect(!MetadataPolicy.isPersonal(key), "\(key)") }
    }

    /// A content identifier kept by name for a save-back (`--keep-content-identifier`) is written under
    /// `sharing` too; the source's own is not, and the location the caller sets still goes.
    @Test func anIdentifierKeptByNameSurvivesSharing() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "LowQuality")
        session.metadataPolicy = .forSharing
        session.metadataOverrides = ["com.apple.quicktime.location.ISO6709": "+01.0000+002.0000/"]
        let plain = try session.determineCompatibility().metadata.written
        #expect(plain["com.apple.quicktime.content.identifier"] == nil && plain["location"] == nil, "\(plain)")
        #expect(plain["com.apple.quicktime.location.ISO6709"] == nil, "\(plain)")
        session.metadataOverrides["com.apple.quicktime.content.identifier"] = "AAAA-BBBB"
        let saving = try session.determineCompatibility().metadata.written
        #expect(saving["com.apple.quicktime.content.identifier"] == "AAAA-BBBB", "\(saving)")
        #expect(saving["com.apple.quicktime.location.ISO6709"] == nil, "\(saving)")
    }
}
