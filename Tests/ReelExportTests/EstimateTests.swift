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
