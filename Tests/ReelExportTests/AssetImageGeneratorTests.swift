import Foundation
import ReelExport
import TestSupport
import Testing

/// `AssetImageGenerator`: results per requested time (failures for times outside the asset), the
/// tolerances deciding between a keyframe and the exact frame, the track transform, and HDR
/// pictures that match what an export of the same clip shows.
@Suite("AssetImageGenerator", .tags(.media), .timeLimit(.minutes(10)))
struct AssetImageGeneratorTests {
    static func write(_ image: AssetImageGenerator.Image, _ name: String) throws -> URL {
        let url = Fixtures.scratchFolder("generator").appendingPathComponent("\(name).\(image.format.fileExtension)")
        try image.data.write(to: url)
        return url
    }

    @Test func oneResultPerTimeWithFailuresForTimesOutside() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        var generator = AssetImageGenerator(asset: try await Asset.load(source))
        generator.requestedTimeToleranceBefore = 0
        generator.requestedTimeToleranceAfter = 0
        var results: [AssetImageGenerator.Result] = []
        for await result in generator.images(for: [-1, 3.05, 0.5, 99]) { results.append(result) }
        #expect(results.count == 4)
        for result in results where result.requestedTime < 0 || result.requestedTime > 12 {
            #expect(throws: ExportError.self) { try result.image }
            if case .failure(let error) = result.outcome {
                #expect(error.code == .invalidArgument && error.message.contains("outside"))
            }
        }
        let made = results.filter { (0...12).contains($0.requestedTime) }
        #expect(made.map(\.requestedTime) == [0.5, 3.05])
        let times = try await Stills.frames(source).map(\.time)
        for result in made {
            let image = try result.image
            let expected = times.last { $0 <= result.requestedTime + 1e-6 }!
            #expect(abs(image.actualTime - expected) < 0.001)
            let right = try await Stills.psnr(try Self.write(image, "exact"), against: source, at: image.actualTime)
            #expect(right.average >= 33, "\(right)")
        }
    }

    /// A keyframe 1 s away is taken within 1.2 s of tolerance, not within 0.3 s (the exact frame then).
    @Test(arguments: [(1.2, true), (0.3, false)])
    func tolerancesChooseBetweenKeyframeAndExactFrame(_ tolerance: Double, keyframe: Bool) async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        var generator = AssetImageGenerator(asset: try await Asset.load(source))
        generator.requestedTimeToleranceBefore = tolerance
        generator.requestedTimeToleranceAfter = tolerance
        let (image, actual) = try await generator.image(at: 3.0)
        #expect(image.isKeyframe == keyframe)
        if keyframe {
            #expect(abs(actual - 2) < 0.001 || abs(actual - 4) < 0.001, "\(actual)")
        } else {
            #expect(abs(actual - 3) < 0.001, "\(actual)")
        }
        let right = try await Stills.psnr(try Self.write(image, "tolerance"), against: source, at: actual)
        #expect(right.average >= 33, "\(right)")
    }

    @Test func theTrackTransformIsOptional() async throws {
        let source = try await Fixtures.url(Fixtures.rotated(90))
        var generator = AssetImageGenerator(asset: try await Asset.load(source))
        generator.appliesPreferredTrackTransform = false
        generator.format = .png
        let (image, actual) = try await generator.image(at: 0.5)
        #expect(image.width == 480 && image.height == 270)
        // As stored: ffmpeg's frame without its own rotation.
        let right = try await Stills.psnr(
            try Self.write(image, "stored"), against: source, at: actual, noAutorotate: true)
        #expect(right.average >= 33, "\(right)")
    }

    /// An HLG or PQ picture is tone-mapped like the export: close to the exported video's frame at
    /// the same time, and far from the HDR frame merely converted to 8 bits.
    @Test(arguments: [Fixtures.barsHLG, Fixtures.barsPQ, Fixtures.hlg])
    func hdrPicturesMatchTheExport(_ recipe: Fixtures.Recipe) async throws {
        let source = try await Fixtures.url(recipe)
        let (exported, _) = try await export(recipe, preset: "1280x720")
        var generator = AssetImageGenerator(asset: try await Asset.load(source))
        generator.requestedTimeToleranceBefore = 0
        generator.requestedTimeToleranceAfter = 0
        generator.format = .png
        let (image, actual) = try await generator.image(at: 0.3)
        #expect(image.width == 1280 && image.height == 720)
        let url = try Self.write(image, "hdr")
        // PNG is RGB: made into YCbCr with the export's BT.709 matrix for the comparison.
        let matrix = "scale=out_color_matrix=bt709"
        let matching = try await Stills.psnr(url, against: exported, at: actual, imageFilters: matrix)
        let untreated = try await Stills.psnr(url, against: source, at: actual, imageFilters: matrix)
        #expect(
            matching.average >= 35 && matching.average > untreated.average + 5, "\(matching) vs untreated \(untreated)")
    }
}
