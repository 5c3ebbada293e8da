import Foundation
import ReelExport
import TestSupport
import Testing

/// Animated GIF and APNG become H.264 video: the image's own delays as frame times, transparency
/// flattened onto black or the chosen colour, an even size, no audio; Passthrough refuses them.
@Suite("Animated images", .tags(.media), .timeLimit(.minutes(5)))
struct AnimatedImageTests {
    static let gif = Fixtures.animatedGIF
    static let apng = Fixtures.animatedPNG

    func patch(_ url: URL, x: Int, y: Int) async throws -> [Int] { try await Fixtures.patch(url, x: x, y: y) }

    @Test(arguments: [(gif, "#000000"), (gif, "#00ff00"), (apng, "#000000"), (apng, "#00ff00")])
    func becomesVideoWithItsDelaysAndBackground(_ recipe: Fixtures.Recipe, _ colour: String) async throws {
        let source = try await Fixtures.url(recipe)
        let output = Fixtures.scratchFolder("animated").appendingPathComponent("out.mp4")
        let session = try ExportSession(asset: try await Asset.load(source), presetName: "640x480")
        session.backgroundColor = try #require(RGBColor(parsing: colour))
        session.outputURL = output
        #expect(try session.determineCompatibility().video?.background?.description == colour)
        try await session.export()

        let probed = try await ProbedFile.probe(output)
        #expect(probed.video?.codec_name == "h264" && probed.audio == nil)
        #expect(probed.video?.width == 100 && probed.video?.height == 74)
        // Frame times are the image's delays (variable frame rate kept), as ffprobe reads the source.
        let times = try await ProbedFile.videoTimestamps(output)
        let sourceTimes = try await ProbedFile.videoTimestamps(source)
        #expect(times.count == 6 && times.count == sourceTimes.count, "\(times) \(sourceTimes)")
        for (time, expected) in zip(times, [0, 0.2, 0.3, 0.5, 0.6, 0.7]) { #expect(abs(time - expected) < 0.002) }
        // Transparent pixels take the background; opaque ones keep their colour (magenta-ish: 255, 0, 128).
        let expected = RGBColor(parsing: colour)!
        let transparent = try await patch(output, x: 8, y: 40)
        for (value, want) in zip(transparent, [expected.red, expected.green, expected.blue]) {
            #expect(abs(value - Int(want)) <= 6, "\(transparent)")
        }
        let opaque = try await patch(output, x: 60, y: 40)
        #expect(opaque[0] > 240 && opaque[1] < 10 && abs(opaque[2] - 128) < 10, "\(opaque)")
    }

    @Test func passthroughOfAGIFIsRefused() async throws {
        let session = try ExportSession(
            asset: try await Asset.load(try await Fixtures.url(Self.gif)), presetName: "Passthrough")
        #expect {
            try session.determineCompatibility()
        } throws: { error in
            let error = error as! ExportError
            return error.code == .incompatiblePreset && error.message.contains("animated GIF")
        }
    }
}
