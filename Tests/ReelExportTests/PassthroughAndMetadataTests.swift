import Foundation
import ReelExport
import TestSupport
import Testing

@Suite("Passthrough and metadata", .tags(.media), .timeLimit(.minutes(10)))
struct PassthroughAndMetadataTests {
    @Test(arguments: [OutputType.mp4, .mov, .m4v])
    func passthroughCopiesPacketsUnchanged(_ type: OutputType) async throws {
        let (url, _) = try await export(Fixtures.landscape, preset: "Passthrough", type: type)
        let source = try await Fixtures.url(Fixtures.landscape)
        #expect(try await packetHashes(url, stream: "v:0") == packetHashes(source, stream: "v:0"))
        #expect(try await packetHashes(url, stream: "a:0") == packetHashes(source, stream: "a:0"))
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
    }

    @Test func passthroughKeepsTheRotationTag() async throws {
        let (url, _) = try await export(Fixtures.rotated(90), preset: "Passthrough")
        let output = try await ProbedFile.probe(url)
        #expect(output.video?.hasDisplayMatrix == true)
        #expect(output.video?.width == 480 && output.video?.height == 270)
    }

    @Test func passthroughOfHEVCIsTaggedHvc1() async throws {
        let (url, _) = try await export(Fixtures.hevc10, preset: "Passthrough", type: .mp4)
        #expect(try await ProbedFile.probe(url).video?.codec_tag_string == "hvc1")
    }

    @Test func passthroughOfAudioOnlyIntoM4A() async throws {
        let (url, _) = try await export(Fixtures.audioOnly, preset: "Passthrough", type: .m4a)
        let source = try await Fixtures.url(Fixtures.audioOnly)
        #expect(try await packetHashes(url, stream: "a:0") == packetHashes(source, stream: "a:0"))
    }

    @Test func metadataIsKeptByDefault() async throws {
        let (url, session) = try await export(Fixtures.landscape, preset: "MediumQuality")
        let tags = try await ProbedFile.probe(url).format.tags ?? [:]
        #expect(tags["creation_time"]?.hasPrefix("2024-05-01T10:00:00") == true)
        #expect(tags["location"] == "+48.8584+002.2945/")
        #expect(tags["com.apple.quicktime.make"] == "Apple")
        #expect(tags["com.apple.quicktime.model"] == "iPhone 15 Pro")
        #expect(tags["com.apple.quicktime.content.identifier"] == "9D2E4E5B-7A1C-4F0B-8F1E-0C2D3B4A5F60")
        #expect(session.asset.location == "+48.8584+002.2945/")
        #expect(session.asset.make == "Apple")
        #expect(session.asset.creationDate == Date(timeIntervalSince1970: 1_714_557_600))
    }

    @Test func sharingStripsLocationDeviceAndIdentifiers() async throws {
        let (url, _) = try await export(Fixtures.landscape, preset: "MediumQuality", metadata: .forSharing)
        let tags = try await ProbedFile.probe(url).format.tags ?? [:]
        #expect(tags["creation_time"]?.hasPrefix("2024-05-01") == true)
        // The content identifier ties the copy to the owner's library (it pairs a Live Photo's parts).
        #expect(tags["com.apple.quicktime.content.identifier"] == nil, "\(tags)")
        #expect(
            tags.keys.allSatisfy { !$0.contains("location") && !$0.contains("make") && !$0.contains("model") },
            "\(tags)")
    }

    @Test func stripWritesNoSourceMetadata() async throws {
        let (url, _) = try await export(Fixtures.landscape, preset: "MediumQuality", metadata: .strip)
        let tags = try await ProbedFile.probe(url).format.tags ?? [:]
        #expect(tags["creation_time"] == nil && tags["location"] == nil && tags["com.apple.quicktime.make"] == nil)
    }
}
