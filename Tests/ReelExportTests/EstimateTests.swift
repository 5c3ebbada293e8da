import Foundation
import ReelExport
import TestSupport
import Testing

/// `estimatedBytes` against the size of the file the same export writes: within 25 % on clips of
/// varied content (issue 10's target). The clips are 960x540, a size the model was not fitted on, and
/// one 1080p clip kept at its size.
@Suite("Size estimates", .tags(.media), .timeLimit(.minutes(10)))
struct EstimateTests {
    static let tone = [
        "-f", "lavfi", "-i",
        "aevalsrc=exprs=0.25*sin(2*PI*220*t)*(0.6+0.4*sin(2*PI*0.5*t))+0.04*(random(0)-0.5)|0.25*sin(2*PI*330*t)*(0.6+0.4*sin(2*PI*0.7*t))+0.04*(random(1)-0.5):s=48000",
    ]
    /// Encoded as a camera would (x264 veryfast CRF 16, AAC 256k), 2 s.
    static func clip(_ name: String, _ source: String) -> Fixtures.Recipe {
        Fixtures.Recipe(
            "estimate-\(name).mp4",
            ["-f", "lavfi", "-i", source] + tone + [
                "-t", "2", "-c:v", "libx264", "-preset", "veryfast", "-crf", "16", "-pix_fmt", "yuv420p", "-c:a", "aac",
                "-b:a", "256k", "-shortest",
            ])
    }
    static let testsrc = clip("testsrc2", "testsrc2=size=960x540:rate=30")
    static let mandelbrot = clip("mandelbrot", "mandelbrot=size=960x540:rate=30,noise=alls=6:allf=t+u")
    static let still = clip(
        "still", "mandelbrot=size=960x540:rate=30,trim=end_frame=1,loop=loop=-1:size=1,setpts=N/30/TB")
    /// Re-encoded at its own size (1920x1080): the case the benchmark's 20 s 1080p clip missed by 28 %.
    static let testsrc1080 = clip("testsrc2-1080p", "testsrc2=size=1920x1080:rate=30")
    /// Noise is estimated well only where the VBV cap decides the size (see README).
    static let noise = clip("noise", "color=c=gray:size=640x360:rate=30,noise=alls=30:allf=t+u")

    static let cases: [(Fixtures.Recipe, String)] =
        [testsrc, mandelbrot, still].flatMap { clip in
            ["LowQuality", "MediumQuality", "640x480", "1280x720"].map { (clip, $0) }
        } + [
            (mandelbrot, "HEVC1920x1080"), (still, "HEVC1920x1080"), (mandelbrot, "Passthrough"),
            (still, "Passthrough"), (testsrc, "AppleM4A"), (noise, "640x480"), (testsrc1080, "1920x1080"),
        ]

    @Test(arguments: cases)
    func theEstimateIsWithinAQuarterOfTheRealSize(_ recipe: Fixtures.Recipe, _ preset: String) async throws {
        let source = try await Fixtures.url(recipe)
        let session = try ExportSession(asset: try await Asset.load(source), presetName: preset)
        session.forceTranscode = true
        let type = ExportPlanner.defaultType(for: session.preset)
        session.outputFileType = type
        session.outputURL = Fixtures.scratchFolder("estimate").appendingPathComponent("out.\(type.fileExtension)")
        try await Self.expectEstimateWithinAQuarter(session, "\(recipe) \(preset)")
    }

    /// Estimates, exports, and expects the estimate within 25 % of the bytes written.
    static func expectEstimateWithinAQuarter(_ session: ExportSession, _ label: String) async throws {
        let estimate = try session.estimateOutputFileLength()
        try await session.export()
        let real = try #require(session.result?.bytes)
        let error = Double(estimate) / Double(real) - 1
        #expect(abs(error) <= 0.25, "\(label): estimated \(estimate), wrote \(real) (\(Int(error * 100)) %)")
    }

    // MARK: - Measured estimates (`measuredPlan()`, `reel export --estimate`)

    /// 14 s, longer than the five keyframe intervals an export is encoded whole up to, so the
    /// estimate comes from four 2 s samples.
    static func phoneClip(_ name: String, _ source: String, video: [String], remux: [String] = []) -> Fixtures.Recipe {
        let encoded = Fixtures.Recipe(
            "estimate-phone-\(name)\(remux.isEmpty ? "" : "-encoded").mp4",
            ["-f", "lavfi", "-i", source] + tone + ["-t", "14"] + video + ["-c:a", "aac", "-b:a", "128k", "-shortest"])
        guard !remux.isEmpty else { return encoded }
        // A display matrix survives a remux, not an encode (as the tests' rotated fixtures are made).
        return Fixtures.Recipe(
            "estimate-phone-\(name).mp4", ["-i", "$0", "-map", "0", "-c", "copy"] + remux, inputs: [encoded])
    }
    static let camera = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "16", "-pix_fmt", "yuv420p"]
    /// The sweep the model missed on (issue 31: up to 2.2x low): a still, film-like grain, noise, a
    /// quick tool's portrait (x264 ultrafast, as the tests' fixtures are) and HLG in HEVC Main 10
    /// turned 270 degrees, the last tone-mapped to SDR.
    static let phoneCases: [(Fixtures.Recipe, String)] = [
        (
            phoneClip(
                "still", "mandelbrot=size=960x540:rate=30,trim=end_frame=1,loop=loop=-1:size=1,setpts=N/30/TB",
                video: camera), "640x480"
        ),
        (phoneClip("film", "mandelbrot=size=960x540:rate=30,noise=alls=8:allf=t+u", video: camera), "640x480"),
        (phoneClip("noise", "color=c=gray:size=640x360:rate=30,noise=alls=30:allf=t+u", video: camera), "640x480"),
        (
            phoneClip(
                "portrait", "testsrc2=size=720x1280:rate=30",
                video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]), "1280x720"
        ),
        (
            phoneClip(
                "hlg-rot270", "testsrc2=size=960x540:rate=30",
                video: [
                    "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1",
                    "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc",
                    "-x265-params",
                    "log-level=error:pools=none:frame-threads=1:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc",
                ], remux: ["-metadata:s:v:0", "rotate=270"]), "640x480"
        ),
    ]

    /// The measured estimate within 15 % of the file the same export writes (the issue asks 25 %),
    /// from four samples; the error is printed for each clip.
    @Test(arguments: phoneCases)
    func theMeasuredEstimateIsWithinAQuarter(_ recipe: Fixtures.Recipe, _ preset: String) async throws {
        let source = try await Fixtures.url(recipe)
        let session = try ExportSession(asset: try await Asset.load(source), presetName: preset)
        session.forceTranscode = true
        session.outputURL = Fixtures.scratchFolder("estimate-measured").appendingPathComponent("out.mp4")
        let plan = try await session.measuredPlan()
        #expect(plan.estimateMethod == .samples)
        let samples = try #require(plan.estimateSamples)
        #expect(samples.count == 4 && abs(samples.seconds - 8) < 0.5, "\(samples)")
        try await session.export()
        let real = try #require(session.result?.bytes)
        let error = Double(plan.estimatedBytes) / Double(real) - 1
        let modelled = try ExportSession(asset: session.asset, presetName: preset)
        modelled.forceTranscode = true
        let model = try modelled.estimateOutputFileLength()
        let line =
            "estimate \(recipe.name) \(preset): measured \(plan.estimatedBytes), wrote \(real) "
            + String(format: "(%+.1f %%)", error * 100) + "; the model said \(model)\n"
        FileHandle.standardError.write(Data(line.utf8))
        #expect(abs(error) <= 0.15, "\(line)")
    }

    /// An export no longer than the samples is encoded whole: the estimate is the file's size.
    @Test func aShortExportIsEncodedWhole() async throws {
        let source = try await Fixtures.url(Self.mandelbrot)
        let session = try ExportSession(asset: try await Asset.load(source), presetName: "640x480")
        session.forceTranscode = true
        session.outputURL = Fixtures.scratchFolder("estimate-whole").appendingPathComponent("out.mp4")
        #expect(try session.determineCompatibility().estimateMethod == .model)
        let plan = try await session.measuredPlan()
        #expect(plan.estimateMethod == .encoded && plan.estimateSamples?.count == 1)
        try await session.export()
        let real = try #require(session.result?.bytes)
        #expect(abs(Double(plan.estimatedBytes) / Double(real) - 1) < 0.01, "\(plan.estimatedBytes) vs \(real)")
        // A copy needs no encode.
        let copy = try ExportSession(asset: session.asset, presetName: "Passthrough")
        copy.outputURL = session.outputURL
        let copied = try await copy.measuredPlan()
        #expect(copied.estimateMethod == .copy && copied.estimateSamples == nil)
    }

    /// A Passthrough cut copies from the keyframe before its start: 2-4 s of a clip with keyframes
    /// every 3 s holds 4 s of packets, which an estimate from the range alone put 36 % low.
    @Test(arguments: [TimeRange(start: 2, end: 4), TimeRange(start: 3, end: 5), TimeRange(start: 6.5, end: nil)])
    func aPassthroughCutIsEstimatedFromItsKeyframe(_ range: TimeRange) async throws {
        let source = try await Fixtures.url(Fixtures.gopsWithBFrames)
        let session = try ExportSession(asset: try await Asset.load(source), presetName: "Passthrough")
        session.timeRange = range
        session.outputURL = Fixtures.scratchFolder("estimate-cut").appendingPathComponent("out.mp4")
        try await Self.expectEstimateWithinAQuarter(session, "Passthrough \(range)")
    }
}
