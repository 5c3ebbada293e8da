import Foundation
import ReelExport
import TestSupport
import Testing

/// A display matrix that mirrors the picture (front cameras write these), alone or with a quarter
/// turn, is applied to the pixels like a rotation: the output shows what the phone showed and
/// carries no matrix. Compared with the upright clip flipped by ffmpeg's own filters.
@Suite("Mirrored clips", .tags(.media), .timeLimit(.minutes(10)))
struct MirrorTests {
    @Test(arguments: [
        (Fixtures.Mirror.horizontal, 480, 270, "null"),
        (.vertical, 480, 270, "hflip,vflip"),
        (.horizontalThenClockwise, 270, 480, "transpose=clock"),
    ])
    func mirrorsAreAppliedToThePixels(_ mirror: Fixtures.Mirror, width: Int, height: Int, wrong: String)
        async throws
    {
        let (url, session) = try await export(Fixtures.mirrored(mirror), preset: "1280x720", forceTranscode: false)
        #expect(session.result?.method == .transcode, "\(session.result?.decision ?? "")")
        let video = try #require(try await ProbedFile.probe(url).video)
        #expect(video.width == width && video.height == height && !video.hasDisplayMatrix)
        let upright = try await Fixtures.url(Fixtures.upright)
        // The untagged SD source is taken as BT.601 and converted to BT.709, as Reel does.
        let matrix = "scale=in_color_matrix=bt601:out_color_matrix=bt709,"
        let right = try await Pictures.psnr(url, against: upright, referenceFilters: matrix + mirror.filters)
        // What the picture would be without the mirror (the rotation alone, or a half turn, as a
        // mirror used to be read).
        let other = try await Pictures.psnr(url, against: upright, referenceFilters: matrix + wrong)
        #expect(right.average >= 35 && right.average > other.average + 15, "\(right) vs \(other)")
    }
}
