import Foundation
import ReelExport
import TestSupport
import Testing

/// The threads an export's codecs get (`codecThreads`), checked in the settings x264 and x265 write
/// into every stream they encode (mediainfo).
@Suite("Codec threads", .tags(.process), .timeLimit(.minutes(10)))
struct CodecThreadTests {
    /// One thread is one thread: x265 runs without its thread pool (and so without wavefront rows
    /// handed between threads); more threads size the pool.
    @Test func x265RunsWithoutAPoolOnOneThreadAndWithOneOfTheGivenSizeOnMore() async throws {
        let (single, _) = try await export(Fixtures.fourThree, preset: "HEVC1920x1080", threads: 1)
        let alone = try await MediaInfoTool.encoderSettings(single)
        #expect(alone.contains("numa-pools=none") && alone.contains("frame-threads=1"), "\(alone)")
        #expect(alone.contains("no-wpp"), "\(alone)")
        let (pooled, _) = try await export(Fixtures.fourThree, preset: "HEVC1920x1080", threads: 2)
        let pool = try await MediaInfoTool.encoderSettings(pooled)
        #expect(pool.contains("numa-pools=2") && pool.contains("wpp"), "\(pool)")
    }

    @Test func x264TakesTheThreadsItIsGiven() async throws {
        let (single, _) = try await export(Fixtures.fourThree, preset: "640x480", threads: 1)
        #expect(try await MediaInfoTool.x264Threads(single) == 1)
        let (two, _) = try await export(Fixtures.fourThree, preset: "640x480", threads: 2)
        #expect(try await MediaInfoTool.x264Threads(two) == 2)
    }
}
