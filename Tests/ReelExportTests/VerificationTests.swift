import Foundation
import TestSupport
import Testing

@testable import ReelExport
@testable import ReelMedia

/// Every export reads its file back before it completes; a damaged file fails as `output-invalid`
/// and leaves nothing behind (faults injected through the debug-only hook).
@Suite("Verification", .timeLimit(.minutes(10)))
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
        #expect(failure.error.code == "output-invalid")
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
            try ExportSession.summarize(garbage, started: Date())
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
