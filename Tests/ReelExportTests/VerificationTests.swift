import Foundation
import TestSupport
import Testing

@testable import ReelExport

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
}
