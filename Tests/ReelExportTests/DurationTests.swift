import Foundation
import ReelExport
import TestSupport
import Testing

/// Durations are the source's: every frame lasts its own time (a GIF's last delay included), and
/// verification holds the output to what was read and written, not to what a container declares, so
/// Reel converts what ffmpeg converts. Outputs are read with ffprobe and compared with ffmpeg's own
/// conversion of the same input.
@Suite("Durations", .tags(.process, .media), .timeLimit(.minutes(10)))
struct DurationTests {
    /// ffmpeg's conversion of `source` into MP4: libx264 + AAC (its defaults), or a copy of every stream.
    static func ffmpegConversion(of source: URL, copy: Bool) async throws -> ProbedFile {
        let output = Fixtures.scratchFolder("ffmpeg").appendingPathComponent("out.mp4")
        let codecs = copy ? ["-map", "0", "-c", "copy"] : ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"]
        try await Tools.ffmpeg(["-i", source.path] + codecs + [output.path])
        return try await ProbedFile.probe(output)
    }

    @Test func aGIFsLastFrameLastsItsOwnDelay() async throws {
        let source = try await Fixtures.url(Fixtures.gifLastDelay)
        let sourceTimes = try await ProbedFile.videoTimestamps(source)
        #expect(sourceTimes == [0, 0.12, 1.12, 1.2, 1.72], "the GIF is not what the test means: \(sourceTimes)")
        let (url, _) = try await export(Fixtures.gifLastDelay, preset: "640x480")
        let times = try await ProbedFile.videoTimestamps(url)
        #expect(times.count == 5, "\(times)")
        for (time, expected) in zip(times, sourceTimes) { #expect(abs(time - expected) < 0.002, "\(times)") }
        let output = try await ProbedFile.probe(url)
        let seconds = try #require(output.video?.durationSeconds)
        #expect(abs(seconds - 2.24) < 0.005, "the video lasts \(seconds) s")
        #expect(abs((output.format.durationSeconds ?? 0) - 2.24) < 0.005)
        // ffmpeg makes 25 fps of it, repeating each frame until its delay is over: as long.
        let reference = try await Self.ffmpegConversion(of: source, copy: false)
        #expect(abs((reference.format.durationSeconds ?? 0) - seconds) < 0.005, "ffmpeg: \(reference.format)")
    }

    @Test func aGIFHeldAtItsEndExportsWhole() async throws {
        let source = try await Fixtures.url(Fixtures.gifHeld)
        #expect(try await ProbedFile.videoTimestamps(source) == [0, 0.2, 0.4, 2.4])
        let (url, session) = try await export(Fixtures.gifHeld, preset: "640x480")
        let output = try await ProbedFile.probe(url, countFrames: true)
        let seconds = try #require(output.video?.durationSeconds)
        #expect(abs(seconds - 4.4) < 0.005, "the video lasts \(seconds) s")
        #expect(output.video?.frames == 4)
        #expect(abs((session.result?.durationSeconds ?? 0) - 4.4) < 0.005)
        let reference = try await Self.ffmpegConversion(of: source, copy: false)
        #expect(abs((reference.format.durationSeconds ?? 0) - seconds) < 0.005, "ffmpeg: \(reference.format)")
    }

    struct Case: Sendable, CustomStringConvertible {
        var source: Fixtures.Recipe
        var preset: String
        var description: String { "\(source.name) \(preset)" }
    }

    /// Files ffmpeg converts whose containers declare other durations than their streams have.
    static let misdeclared: [Case] = [
        Case(source: Fixtures.sparseTheora, preset: "640x480"),
        Case(source: Fixtures.flvLyingDuration, preset: "640x480"),
        Case(source: Fixtures.flvLyingDuration, preset: "Passthrough"),
        Case(source: Fixtures.flvAudioLonger, preset: "640x480"),
        Case(source: Fixtures.flvAudioLonger, preset: "Passthrough"),
        Case(source: Fixtures.wmvAudioLonger, preset: "640x480"),
        Case(source: Fixtures.wmvAudioShorter, preset: "640x480"),
        // (Not Passthrough: ffmpeg moves the stray packet's timestamp next to the others, as it does
        // for any jump of more than 10 s in an MPEG-PS or TS; Reel copies it where it is stamped.)
        Case(source: Fixtures.psBogusDuration, preset: "640x480"),
    ]

    @Test(arguments: misdeclared)
    func exportsWhatFFmpegConverts(_ spec: Case) async throws {
        let source = try await Fixtures.url(spec.source)
        let declared = try await ProbedFile.probe(source)
        let (url, _) = try await export(spec.source, preset: spec.preset)
        let output = try await ProbedFile.probe(url)
        let reference = try await Self.ffmpegConversion(of: source, copy: spec.preset == "Passthrough")
        var misdeclared = false
        for (kind, mine, theirs, tolerance) in [
            ("video", output.video, reference.video, 2.0 / 25),
            ("audio", output.audio, reference.audio, 2 * 1152.0 / 44_100),
        ] {
            guard let theirs else {
                #expect(mine == nil, "Reel wrote a \(kind) stream ffmpeg did not")
                continue
            }
            let seconds = try #require(mine?.durationSeconds, "no \(kind) duration in Reel's output")
            let expected = try #require(theirs.durationSeconds)
            #expect(abs(seconds - expected) <= tolerance + 0.002, "\(kind): Reel \(seconds) s, ffmpeg \(expected) s")
            let stated =
                declared.streams.first { $0.codec_type == kind }?.durationSeconds
                ?? declared.format.durationSeconds ?? seconds
            if abs(stated - seconds) > 0.05 { misdeclared = true }
        }
        // The premise: what the container declares is not what the streams hold.
        #expect(misdeclared, "the source declares what its streams hold: \(declared.format)")
    }
}
