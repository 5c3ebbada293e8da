import Foundation
import ReelExport
import TestSupport
import Testing

/// `MovieAtoms` (read with ReelBoxes) says whether the moov comes first as mediainfo does, and lists
/// a file cut short up to the box that the cut runs through.
@Suite("Movie atoms", .tags(.process, .media), .timeLimit(.minutes(4)))
struct MovieAtomsTests {
    @Test(arguments: [true, false])
    func theMoovIsFirstExactlyWhenMediaInfoSaysTheFileStreams(_ faststart: Bool) async throws {
        let source = try await Fixtures.url(Fixtures.upright)
        let url = Fixtures.scratchFolder("atoms").appendingPathComponent("copy.mp4")
        try await Tools.ffmpeg(
            ["-i", source.path, "-c", "copy"] + (faststart ? ["-movflags", "+faststart"] : []) + [url.path])
        let streams = try await MediaInfoTool.general(url)["IsStreamable"]
        #expect(streams == (faststart ? "Yes" : "No"))
        #expect(try MovieAtoms.moovPrecedesMdat(url) == faststart)
        let boxes = try MovieAtoms.topLevelBoxes(url)
        #expect(boxes.first == "ftyp" && boxes.contains("moov") && boxes.contains("mdat"), "\(boxes)")
    }

    @Test func aFileCutInsideItsMediaListsTheBoxesBeforeTheCut() async throws {
        let source = try await Fixtures.url(Fixtures.upright)
        let url = Fixtures.scratchFolder("atoms-cut").appendingPathComponent("cut.mp4")
        try await Tools.ffmpeg(["-i", source.path, "-c", "copy", "-movflags", "+faststart", url.path])
        let whole = try MovieAtoms.topLevelBoxes(url)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(size - 1000))
        try handle.close()
        let cut = try MovieAtoms.topLevelBoxes(url)
        // The mdat is the last box: the cut runs through it, so it is no longer listed.
        #expect(whole.last == "mdat" && cut == Array(whole.dropLast()), "\(whole) then \(cut)")
        #expect(try MovieAtoms.moovPrecedesMdat(url))
    }
}
