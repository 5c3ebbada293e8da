import Foundation
import ReelExport
import TestSupport
import Testing

/// A stream with no colour tags has its matrix guessed from its picture's sides, never from the way
/// round it is stored (`Scaler.untaggedMatrix`): the same phone picture stored upright, or sideways
/// with a quarter-turn display matrix, comes out with the same pixels. Compared with ffmpeg's psnr
/// filter, and with ffmpeg's own conversion of the upright source.
@Suite("Untagged matrices", .tags(.media), .timeLimit(.minutes(10)))
struct UntaggedMatrixTests {
    /// 360x640 stored upright, and the same pixels stored as 640x360 with rotate=90, both untagged
    /// and lossless, exported under 1280x720: the outputs match each other (they differed by
    /// 601-to-709 hues when the guess looked at the stored width and height), both are what ffmpeg
    /// makes of the upright source read as BT.601, and both are tagged BT.709, upright, no matrix.
    @Test func aQuarterTurnDoesNotChangeTheMatrixOfAnUntaggedStream() async throws {
        let portrait = try await Fixtures.url(Fixtures.untaggedPortrait)
        for recipe in [Fixtures.untaggedPortrait, Fixtures.untaggedPortraitRotated] {
            let video = try #require(try await ProbedFile.probe(try await Fixtures.url(recipe)).video)
            try #require(
                video.color_space == nil && video.color_primaries == nil && video.color_transfer == nil,
                "\(recipe) is tagged")
        }
        let rotated = try #require(
            try await ProbedFile.probe(try await Fixtures.url(Fixtures.untaggedPortraitRotated)).video)
        try #require(rotated.width == 640 && rotated.height == 360 && rotated.hasDisplayMatrix)

        let (upright, _) = try await export(Fixtures.untaggedPortrait, preset: "1280x720")
        let (turned, _) = try await export(Fixtures.untaggedPortraitRotated, preset: "1280x720")
        for url in [upright, turned] {
            let video = try #require(try await ProbedFile.probe(url).video)
            #expect(video.width == 360 && video.height == 640 && !video.hasDisplayMatrix, "\(url.path)")
            #expect(
                video.color_space == "bt709" && video.color_primaries == "bt709" && video.color_transfer == "bt709",
                "\(video.color_space ?? "-") \(video.color_primaries ?? "-") \(video.color_transfer ?? "-")")
            let truth = try await Pictures.psnr(
                url, against: portrait, referenceFilters: "scale=in_color_matrix=bt601:out_color_matrix=bt709")
            #expect(truth.average >= 35, "\(url.path): \(truth)")
        }
        let same = try await Pictures.psnr(turned, against: upright)
        #expect(same.average >= 45, "\(same)")
    }
}
