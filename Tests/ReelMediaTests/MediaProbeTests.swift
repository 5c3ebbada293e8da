import Foundation
import ReelSystem
import TestSupport
import Testing

@testable import ReelMedia

/// ReelMedia's reader agrees with ffprobe, and its input policy refuses what it should.
@Suite("Media probe", .tags(.process, .media), .timeLimit(.minutes(10)))
struct MediaProbeTests {
    @Test(
        arguments: [Fixtures.landscape, Fixtures.hevc10, Fixtures.surround, Fixtures.mono22k, Fixtures.anamorphic]
            + Fixtures.legacy)
    func probeAgreesWithFFprobe(_ recipe: Fixtures.Recipe) async throws {
        let url = try await Fixtures.url(recipe)
        let ours = try MediaProbe.probe(path: url.path)
        let theirs = try await ProbedFile.probe(url)
        #expect(ours.streams.count == theirs.streams.count)
        #expect(abs(ours.durationSeconds - (theirs.format.durationSeconds ?? 0)) < 0.01)
        for (mine, other) in zip(ours.streams, theirs.streams) {
            #expect(mine.codec == other.codec_name)
            #expect(mine.kind.rawValue == other.codec_type)
            if mine.kind == .video {
                #expect(mine.width == other.width && mine.height == other.height)
                #expect(mine.pixelFormat == other.pix_fmt)
            }
            if mine.kind == .audio {
                #expect(mine.sampleRate.map(String.init) == other.sample_rate)
                #expect(mine.channels == other.channels)
            }
        }
    }

    @Test func rotationAndDisplaySize() async throws {
        let info = try MediaProbe.probe(path: try await Fixtures.url(Fixtures.rotated(90)).path)
        let video = try #require(info.bestVideoStream)
        #expect(video.rotation == 270)
        #expect(video.displaySize?.width == 270 && video.displaySize?.height == 480)
        let anamorphic = try #require(
            try MediaProbe.probe(path: try await Fixtures.url(Fixtures.anamorphic).path).bestVideoStream)
        #expect(anamorphic.sampleAspectRatio == Rational(64, 45))
        #expect(anamorphic.displaySize?.width == 1024 && anamorphic.displaySize?.height == 576)
    }

    @Test func tenBitHEVCIsReportedAsSuch() async throws {
        let video = try #require(
            try MediaProbe.probe(path: try await Fixtures.url(Fixtures.hevc10).path).bestVideoStream)
        #expect(video.bitDepth == 10 && video.codec == "hevc" && video.chromaSubsampling == "4:2:0")
        #expect(video.codecTag == "hvc1")
    }

    @Test func demuxerOutsideTheAllowlistIsRefused() async throws {
        let url = try await Fixtures.url(Fixtures.wav)
        var policy = InputPolicy.standard
        policy.allowedDemuxers = ["mov"]
        #expect {
            _ = try MediaProbe.probe(path: url.path, policy: policy)
        } throws: { ($0 as? MediaError)?.kind == .unreadableInput }
    }

    /// Naming the demuxer skips FFmpeg's probe and nothing else: what it reads agrees with ffprobe,
    /// the allowlist still refuses a demuxer it does not hold, and a file the named demuxer cannot
    /// read fails as unreadable.
    @Test func aNamedDemuxerIsHeldToTheAllowlist() async throws {
        let url = try await Fixtures.url(Fixtures.landscape)
        let named = try MediaProbe.probeHeader(path: url.path, demuxer: "mov")
        let theirs = try await ProbedFile.probe(url)
        #expect(named.streams.count == theirs.streams.count)
        #expect(abs(named.durationSeconds - (theirs.format.durationSeconds ?? 0)) < 0.01)
        for (mine, other) in zip(named.streams, theirs.streams) {
            #expect(mine.codec == other.codec_name && mine.width == other.width && mine.height == other.height)
        }
        var policy = InputPolicy.standard
        policy.allowedDemuxers = ["matroska,webm"]
        #expect {
            _ = try InputFile(path: url.path, policy: policy, analysis: .headerSuffices, demuxer: "mov")
        } throws: { ($0 as? MediaError)?.kind == .unreadableInput }
        let wav = try await Fixtures.url(Fixtures.wav)
        #expect {
            _ = try MediaProbe.probeHeader(path: wav.path, demuxer: "mov")
        } throws: { ($0 as? MediaError)?.kind == .unreadableInput }
    }

    @Test func limitsAreEnforcedAfterProbing() async throws {
        let url = try await Fixtures.url(Fixtures.landscape)
        for policy in [
            InputPolicy(maxDimension: 320), InputPolicy(maxStreams: 1), InputPolicy(maxDurationSeconds: 0.5),
            InputPolicy(maxFileBytes: 1000),
        ] {
            #expect {
                _ = try MediaProbe.probe(path: url.path, policy: policy)
            } throws: { ($0 as? MediaError)?.kind == .limitExceeded }
        }
    }

    @Test func errorsCarryTheCallAndFFmpegsText() async throws {
        #expect(MediaError.string(for: -2) == "No such file or directory")
        do {
            _ = try MediaProbe.probe(path: "/nonexistent.mp4")
            Issue.record("probed a missing file")
        } catch {
            #expect(error.call == "realpath" && error.message.contains("/nonexistent.mp4"))
        }
    }

    @Test func capabilities() {
        #expect(MediaCapabilities.container("mp4", canHold: "h264"))
        #expect(MediaCapabilities.container("mp4", canHold: "hevc"))
        #expect(!MediaCapabilities.container("mp4", canHold: "pcm_s16le"))
        #expect(MediaCapabilities.container("mov", canHold: "pcm_s16le"))
        #expect(MediaCapabilities.canDecode("prores"))
    }

    /// The flag reaches FFmpeg: raised by another thread, it makes the input's next read from the
    /// file (not from the buffer AVIO already holds) fail as cancelled, through the interrupt callback.
    @Test func aFlagRaisedElsewhereStopsFFmpegsReads() async throws {
        let url = try await Fixtures.url(Fixtures.long)
        let flag = CancellationFlag()
        let outcome = try await onOwnThread { () throws -> (before: Int, error: MediaError?) in
            let input = try InputFile(path: url.path, policy: .standard, interrupt: flag, analysis: .headerSuffices)
            let packet = try Packet()
            var before = 0
            while before < 10, try input.read(into: packet) {
                packet.unref()
                before += 1
            }
            startThread(named: "reel-test-raiser") { flag.raise() }
            _ = waitBlocking { flag.isRaised }
            do throws(MediaError) {
                // The fixture is megabytes long: the buffer runs dry long before the end.
                while try input.read(into: packet) { packet.unref() }
                return (before, nil)
            } catch {
                return (before, error)
            }
        }
        #expect(outcome.before == 10)
        #expect(outcome.error?.kind == .cancelled)
    }
}
