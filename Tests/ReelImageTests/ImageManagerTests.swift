import Foundation
import ReelImage
import TestSupport
import Testing

/// `ImageManager.requestImage(for:targetSize:contentMode:options:)` in PhotoKit's words: the results as
/// an AsyncSequence (degraded first when opportunistic), and `cancelImageRequest(_:)`. The photo is a
/// HEIC heif-enc gives a 320x240 embedded thumbnail beside its 1280x960 picture.
@Suite("Image manager", .tags(.process, .media), .timeLimit(.minutes(5)))
struct ImageManagerTests {
    static func heic() async throws -> URL {
        let folder = Fixtures.scratchFolder("image-manager")
        let source = folder.appendingPathComponent("source.png")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1280x960", "-frames:v", "1", source.path])
        let heic = folder.appendingPathComponent("thumbed.heic")
        let made = try await Tools.run("heif-enc", ["-q", "60", "-t", "320", "-o", heic.path, source.path])
        try #require(made.status == 0, "\(made.stderr)")
        return heic
    }

    @Test func opportunisticGivesTheDegradedImageFirstThenTheFinalOne() async throws {
        let heic = try await Self.heic()
        let manager = ImageManager()
        var options = ImageRequestOptions()
        options.deliveryMode = .opportunistic
        options.resizeMode = .exact
        let request = manager.requestImage(
            for: heic, targetSize: ImageTargetSize(width: 1000, height: 1000), options: options)
        var results: [ImageResult] = []
        for try await result in request { results.append(result) }
        try #require(results.count == 2)
        #expect(results.map(\.isDegraded) == [true, false])
        #expect(results.allSatisfy { $0.requestID == request.requestID })
        #expect(results[0].image.source == .embeddedThumbnail && results[0].image.width == 320)
        #expect(results[1].image.source == .picture && results[1].image.width == 1000 && results[1].image.height == 750)

        // High quality: one final result; fast: the degraded one alone. Each request has its own id.
        options.deliveryMode = .highQualityFormat
        let high = manager.requestImage(for: heic, targetSize: .maximum, options: options)
        var highResults: [ImageResult] = []
        for try await result in high { highResults.append(result) }
        #expect(highResults.map(\.isDegraded) == [false] && highResults.first?.image.width == 1280)
        options.deliveryMode = .fastFormat
        let fast = manager.requestImage(
            for: heic, targetSize: ImageTargetSize(width: 100, height: 100), contentMode: .aspectFill,
            options: options)
        var fastResults: [ImageResult] = []
        for try await result in fast { fastResults.append(result) }
        #expect(fastResults.map(\.isDegraded) == [true], "\(fastResults.map(\.image.width))")
        #expect(Set([request.requestID, high.requestID, fast.requestID]).count == 3)
    }

    @Test func cancelEndsTheRequestBeforeItsFinalImage() async throws {
        let heic = try await Self.heic()
        let manager = ImageManager()
        let request = manager.requestImage(for: heic, targetSize: ImageTargetSize(width: 800, height: 800))
        var iterator = request.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.isDegraded)
        manager.cancelImageRequest(request.requestID)
        await #expect(throws: CancellationError.self) { _ = try await iterator.next() }
        #expect(try await iterator.next() == nil)

        // Cancelled before its first image: nothing is rendered.
        let early = manager.requestImage(for: heic, targetSize: ImageTargetSize(width: 800, height: 800))
        manager.cancelImageRequest(early.requestID)
        var results = 0
        await #expect(throws: CancellationError.self) {
            for try await _ in early { results += 1 }
        }
        #expect(results == 0)
        // Cancelling a request that has ended changes nothing.
        manager.cancelImageRequest(early.requestID)
        manager.cancelImageRequest(request.requestID)
    }

    @Test func aHostilePhotoFailsTheRequestWithItsCode() async throws {
        let folder = Fixtures.scratchFolder("image-manager-cut")
        let heic = try await Self.heic()
        let cut = folder.appendingPathComponent("cut.heic")
        try Data(contentsOf: heic).prefix(2000).write(to: cut)
        let request = ImageManager().requestImage(for: cut, targetSize: ImageTargetSize(width: 200, height: 200))
        await #expect {
            for try await _ in request {}
        } throws: { error in
            (error as? PhotoError)?.code == .unreadable
        }
        let limited = ImageManager(maxPixels: 1_000_000).requestImage(for: heic, targetSize: .maximum)
        await #expect {
            for try await _ in limited {}
        } throws: { error in
            (error as? PhotoError)?.code == .limitExceeded
        }
    }
}
