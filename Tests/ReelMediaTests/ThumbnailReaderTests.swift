import Foundation
import ReelMedia
import ReelSystem
import TestSupport
import Testing

/// The reader decodes the source once, in time order: it seeks only when a keyframe lies between one
/// picture and the next, and in keyframe mode decodes each keyframe once, counted against ffprobe's
/// packets.
@Suite("Thumbnail reader", .tags(.media), .timeLimit(.minutes(5)))
struct ThumbnailReaderTests {
    static func read(_ times: [Double], exact: Bool) async throws -> (ThumbnailReader.Statistics, [ThumbnailPick]) {
        let source = try await Fixtures.url(Fixtures.gop)
        let request = ThumbnailRequest(
            inputPath: source.path, times: times, toleranceBefore: exact ? 0 : .infinity,
            toleranceAfter: exact ? 0 : .infinity, maximumWidth: 64)
        return try await Task.detached {
            var picks: [ThumbnailPick] = []
            let statistics = try ThumbnailReader.read(request) { picks += $0.picks }
            return (statistics, picks)
        }.value
    }

    /// A queued set's share of the cores reaches the decoder: one thread when given one (a worker
    /// running a job per core), libavcodec's own choice, more than one on this machine, when given none.
    @Test func theDecoderRunsWithTheThreadsItIsGiven() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        var request = ThumbnailRequest(inputPath: source.path, times: [1, 5], maximumWidth: 64)
        for threads in [1, 2, 0] {
            request.threads = threads
            let statistics = try await onOwnThread { [request] in try ThumbnailReader.read(request) { _ in } }
            if threads > 0 {
                #expect(statistics.decoderThreads == threads, "\(statistics)")
            } else if ProcessInfo.processInfo.activeProcessorCount > 1 {
                #expect(statistics.decoderThreads > 1, "\(statistics)")
            }
        }
    }

    /// 30 times over 12 s with a keyframe every 2 s: six keyframes, each decoded once, one seek.
    @Test func keyframeModeDecodesEachKeyframeOnce() async throws {
        let times = (0..<30).map { Double($0) * 0.4 }
        let (statistics, picks) = try await Self.read(times.reversed(), exact: false)
        let keyframes = try await Stills.frames(try await Fixtures.url(Fixtures.gop)).filter(\.key).map(\.time)
        #expect(picks.map(\.requestedSeconds) == times)
        #expect(Set(picks.map(\.actualSeconds)).count == keyframes.count)
        #expect(statistics.seeks == 1 && statistics.packetsDecoded == keyframes.count, "\(statistics)")
    }

    /// 30 times over 12 s, exactly: one pass from the start, every packet at most once.
    @Test func exactModeDecodesForwardInOnePass() async throws {
        let times = (0..<30).map { Double($0) * 0.4 }
        let (statistics, picks) = try await Self.read(times, exact: true)
        let packets = try await Stills.frames(try await Fixtures.url(Fixtures.gop)).count
        #expect(picks.count == 30)
        #expect(statistics.seeks == 1 && statistics.packetsDecoded <= packets, "\(statistics) of \(packets) packets")
    }

    /// Two exact times 8 s apart: a seek to the keyframe before each, not a decode through the gap.
    @Test func exactModeSeeksPastKeyframes() async throws {
        let (statistics, picks) = try await Self.read([9.5, 1.0], exact: true)
        #expect(picks.map(\.requestedSeconds) == [1.0, 9.5])
        // From 0 s to 1 s and from 8 s to 9.5 s: 25 + 38 frames, plus the decoder's read-ahead.
        #expect(statistics.seeks == 2 && statistics.packetsDecoded < 120, "\(statistics)")
    }
}
