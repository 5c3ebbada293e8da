import Foundation
import TestSupport
import Testing

@testable import ReelExport
@testable import ReelMedia

/// Every export reads its file back before it completes; a damaged file fails as `output-invalid`
/// and leaves nothing behind (faults injected through the debug-only hook).
@Suite("Verification", .tags(.process, .media), .timeLimit(.minutes(10)))
struct VerificationTests {
    @Test("a good export is verified, and the time it took is reported")
    func verified() async throws {
        let (url, session) = try await export(Fixtures.landscape, preset: "960x540")
        let result = try #require(session.result)
        let seconds = try #require(result.verificationSeconds)
        #expect(seconds > 0 && seconds <= result.elapsedSeconds)
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    @Test(
        "a damaged file fails the export as output-invalid and leaves nothing",
        arguments: [
            (ExportSession.OutputFault.truncate, "960x540"), (.corrupt, "960x540"), (.truncate, "Passthrough"),
            (.corrupt, "AppleM4A"),
        ])
    func damaged(fault: ExportSession.OutputFault, preset: String) async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: preset)
        let folder = Fixtures.scratchFolder("damaged")
        session.outputURL = folder.appendingPathComponent(
            "out.\(ExportPlanner.defaultType(for: session.preset).fileExtension)")
        session.forceTranscode = true
        session.outputFault = fault
        await #expect(throws: ExportError.self) { try await session.export() }
        let error = try #require(session.error)
        #expect(error.code == .outputInvalid, "\(error.message)")
        #expect(!error.isRetryable)
        #expect(session.status == .failed)
        #expect(contents(of: folder).isEmpty)
    }

    @Test("reel export with a truncated output fails as output-invalid, not retryable")
    func cli() async throws {
        let source = try await Fixtures.url(Fixtures.landscape)
        let folder = Fixtures.scratchFolder("damaged-cli")
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_TEST_OUTPUT_FAULT"] = "truncate"
        let result = try await ReelBinary.run(
            [
                "export", source.path, "--preset", "640x480", "-o", folder.appendingPathComponent("out.mp4").path,
                "--json",
            ],
            environment: environment)
        #expect(result.status != 0)
        let failure = try #require(
            result.stdout.split(separator: "\n").compactMap { line in
                try? JSONDecoder().decode(ExportEvent.self, from: Data(line.utf8))
            }.compactMap { event -> ExportEvent.Failure? in
                if case .failed(let failure) = event { return failure }
                return nil
            }.first)
        #expect(failure.error.code == .outputInvalid)
        #expect(!failure.error.retryable)
        #expect(contents(of: folder).isEmpty)
    }

    /// The published file is read once more for the result: one that cannot be read is `output-invalid`
    /// like one that fails verification; only an I/O failure while reading stays retryable.
    @Test("an output that cannot be read back is output-invalid, unless reading failed for an I/O reason")
    func unreadableOutput() throws {
        let garbage = Fixtures.scratchFolder("unreadable").appendingPathComponent("out.mp4")
        try Data(repeating: 0x5A, count: 4096).write(to: garbage)
        #expect {
            try ExportSession.summarize(garbage, started: .now)
        } throws: { error in
            let error = error as! ExportError
            return error.code == .outputInvalid && !error.isRetryable && error.message.contains("cannot be opened")
        }
        let cases: [(MediaError, ExportError.Code, Bool)] = [
            (
                MediaError(kind: .unreadableInput, call: "avformat_open_input", code: -EIO, message: "I/O"),
                .outputFailed, true
            ),
            (MediaError(kind: .unreadableInput, call: "stat", code: -ESTALE, message: "stale"), .outputFailed, true),
            (
                MediaError(kind: .unreadableInput, call: "av_read_frame", code: -EMFILE, message: "files"),
                .outputFailed, true
            ),
            (MediaError(kind: .noSpace, call: "avio_open", code: -ENOSPC, message: "full"), .noSpace, true),
            (MediaError(kind: .unreadableInput, call: "truncation", message: "ends after 6 KB"), .outputInvalid, false),
            (MediaError(kind: .unreadableInput, call: "stat", code: -ENOENT, message: "gone"), .outputInvalid, false),
        ]
        for (cause, code, retryable) in cases {
            let error = OutputVerification.unreadable(cause)
            #expect(error.code == code && error.isRetryable == retryable, "\(cause): \(error.code) \(error.message)")
        }
    }
}

/// Each check of `OutputVerification` refuses a file made wrong by ffmpeg (from `Fixtures.landscape`,
/// 640x360 H.264 + AAC, 1 s) and judged against the plan of exporting that source with 960x540,
/// network-optimised; a copy of the source made right passes the same plan, so no refusal is vacuous.
@Suite("Verification refuses", .tags(.process, .media), .timeLimit(.minutes(10)))
struct VerificationRefusalTests {
    /// The source's streams copied, moov first: what the plan expects.
    static let right = Recipe(
        "verify-right.mp4", ["-i", "$0", "-map", "0", "-c", "copy", "-movflags", "+faststart"],
        inputs: [Fixtures.landscape])

    typealias Recipe = Fixtures.Recipe

    struct Case: Sendable, CustomStringConvertible {
        var wrong: Recipe
        /// What the refusal's message must say.
        var reason: String
        var description: String { wrong.name }
    }

    static let cases: [Case] = [
        // ffmpeg writes the moov after the media data unless told `faststart`.
        Case(
            wrong: Recipe(
                "verify-moov-last.mp4", ["-i", "$0", "-map", "0", "-c", "copy"], inputs: [Fixtures.landscape]),
            reason: "its moov atom does not precede the media data"),
        Case(
            wrong: Recipe(
                "verify-no-audio.mp4", ["-i", "$0", "-map", "0", "-c", "copy", "-an", "-movflags", "+faststart"],
                inputs: [Fixtures.landscape]),
            reason: "it has 0 audio streams, 1 expected"),
        Case(
            wrong: Recipe(
                "verify-short.mp4", ["-i", "$0", "-map", "0", "-t", "0.5", "-c", "copy", "-movflags", "+faststart"],
                inputs: [Fixtures.landscape]),
            reason: "its video lasts 0.500 s, not 1.000 s (±0.069)"),
        // The same streams as the source, twice as long.
        Case(
            wrong: Recipe(
                "verify-long.mp4",
                [
                    "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=2", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=48000:duration=2", "-af", "aformat=channel_layouts=stereo",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k",
                    "-movflags", "+faststart",
                ]),
            reason: "its video lasts 2.000 s, not 1.000 s (±0.069)"),
        // The audio delayed by 0.3 s (an empty edit; less the AAC priming ffmpeg trims).
        Case(
            wrong: Recipe(
                "verify-audio-late.mp4",
                [
                    "-i", "$0", "-itsoffset", "0.3", "-i", "$0", "-map", "0:v", "-map", "1:a", "-c", "copy",
                    "-movflags", "+faststart",
                ], inputs: [Fixtures.landscape]),
            reason: "after its video (expected 0.000 s)"),
    ]

    /// The source and the plan of exporting it (960x540, network-optimised).
    static func plan(optimize: Bool = true) async throws -> (ExportPlan, Asset) {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "960x540")
        session.forceTranscode = true
        session.shouldOptimizeForNetworkUse = optimize
        return (try session.determineCompatibility(), asset)
    }

    static func refusal(_ recipe: Recipe, plan: ExportPlan, asset: Asset) async throws -> ExportError? {
        let url = try await Fixtures.url(recipe)
        do {
            try OutputVerification.check(url, plan: plan, asset: asset)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: cases)
    func aWrongFile(_ spec: Case) async throws {
        let (plan, asset) = try await Self.plan()
        #expect(plan.output.networkOptimized && plan.durationSeconds == 1)
        let right = try await Self.refusal(Self.right, plan: plan, asset: asset)
        #expect(right == nil, "the right file is refused: \(right?.message ?? "")")
        let error = try #require(try await Self.refusal(spec.wrong, plan: plan, asset: asset), "not refused")
        #expect(error.code == .outputInvalid && !error.isRetryable)
        #expect(error.message.hasPrefix("the output failed verification: "), "\(error.message)")
        #expect(error.message.contains(spec.reason), "\(error.message)")
    }

    /// The moov-last file is refused for its moov alone: a plan that is not network-optimised takes it.
    @Test func moovLastPassesAPlanNotNetworkOptimized() async throws {
        let (plan, asset) = try await Self.plan(optimize: false)
        let error = try await Self.refusal(Self.cases[0].wrong, plan: plan, asset: asset)
        #expect(error == nil, "\(error?.message ?? "")")
    }
}
