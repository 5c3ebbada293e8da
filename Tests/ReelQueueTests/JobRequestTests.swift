import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// Requests become specs in the library: strict keys, one key and attempts rule, and the checks
/// `reel export` makes before work, run at submit on a header-only probe.
@Suite("Job requests", .tags(.media), .timeLimit(.minutes(3)))
struct JobRequestTests {
    static let presets = PresetLibrary.shipped
    static let here = Fixtures.scratchFolder("requests")

    static func resolve(_ request: JobRequest, checks: JobRequest.Checks = .plan) throws(ExportError) -> JobSpec {
        try request.resolve(presets: presets, limits: .standard, workingDirectory: here, checks: checks)
    }

    static func manifest(_ lines: String) throws(ExportError) -> [JobSpec] {
        try Manifest.resolve(Data(lines.utf8), presets: presets, limits: .standard, workingDirectory: here)
    }

    /// The error `body` throws.
    static func failure(_ body: () throws -> Void) -> ExportError? {
        do {
            try body()
            return nil
        } catch {
            return error as? ExportError
        }
    }

    @Test func aRequestResolvesToASpec() async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let spec = try Self.resolve(
            JobRequest(
                asset: source, preset: "medium", outputDir: ".", priority: 4, key: "k-1", timeRange: "0.2-0.8",
                metadata: "sharing", maxAttempts: 5, overwrite: true))
        #expect(spec.preset == "MediumQuality" && spec.outputType == .mp4 && spec.priority == 4)
        #expect(spec.output == Self.here.appendingPathComponent("landscape.MediumQuality.{id}.mp4").path)
        #expect(spec.timeRange == TimeRange(start: 0.2, end: 0.8) && spec.metadata == .forSharing)
        #expect(spec.maxAttempts == 5 && spec.overwrite && spec.key == "k-1")
        let plain = try Self.resolve(JobRequest(asset: source, preset: "AppleM4A", output: "song.m4a"))
        #expect(plain.outputType == .m4a && !plain.overwrite && plain.maxAttempts == 3)
        #expect(plain.output == Self.here.appendingPathComponent("song.m4a").path)
    }

    @Test func overwriteIsReadFromManifestsAndOldSpecsDecodeWithoutIt() async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let specs = try Self.manifest(
            """
            {"asset": "\(source)", "preset": "LowQuality", "output": "a.mp4", "overwrite": true}
            {"asset": "\(source)", "preset": "LowQuality", "output": "b.mp4"}
            """)
        #expect(specs.map(\.overwrite) == [true, false])
        var old = try JSONSerialization.jsonObject(with: JSONEncoder().encode(specs[0])) as! [String: Any]
        old.removeValue(forKey: "overwrite")
        let decoded = try JSONDecoder().decode(JobSpec.self, from: JSONSerialization.data(withJSONObject: old))
        #expect(!decoded.overwrite && decoded.output == specs[0].output)
    }

    @Test func backgroundIsReadFromManifestsAndOldSpecsDecodeAsBlack() async throws {
        let source = try await Fixtures.url(Fixtures.animatedGIF).path
        let specs = try Self.manifest(
            """
            {"asset": "\(source)", "preset": "640x480", "output": "a.mp4", "background": "#ff8000"}
            {"asset": "\(source)", "preset": "640x480", "output": "b.mp4", "background": "white"}
            {"asset": "\(source)", "preset": "640x480", "output": "c.mp4"}
            """)
        #expect(specs.map(\.background.description) == ["#ff8000", "#ffffff", "#000000"])
        // The spec writes it as `#rrggbb`; a spec written before the field existed decodes as black.
        var old = try JSONSerialization.jsonObject(with: JSONEncoder().encode(specs[0])) as! [String: Any]
        #expect(old["background"] as? String == "#ff8000")
        old.removeValue(forKey: "background")
        let decoded = try JSONDecoder().decode(JobSpec.self, from: JSONSerialization.data(withJSONObject: old))
        #expect(decoded.background == .black && decoded.output == specs[0].output)
        // A colour that cannot be read is refused in `reel export`'s words; a near miss of the key is named.
        let bad = Self.failure {
            _ = try Self.manifest(#"{"asset": "\#(source)", "preset": "640x480", "background": "orange"}"#)
        }
        #expect(bad?.code == .invalidArgument)
        #expect(bad?.message.contains("line 1: cannot read the colour 'orange'; write #rrggbb, black or white") == true)
        let misspelt = Self.failure {
            _ = try Self.manifest(##"{"asset": "\##(source)", "preset": "640x480", "backround": "#ffffff"}"##)
        }
        #expect(misspelt?.message.contains("unknown key 'backround' (did you mean 'background'?)") == true)
    }

    @Test(arguments: [
        (
            #"{"asset": "A", "preset": "LowQuality", "outputdir": "."}"#,
            ["line 1", "'outputdir'", "did you mean 'outputDir'"]
        ),
        (
            #"{"asset": "A", "preset": "LowQuality", "time_range": "1-2"}"#,
            ["'time_range'", "did you mean 'timeRange'"]
        ),
        (#"{"asset": "A", "preset": "LowQuality", "colour": "hdr"}"#, ["'colour'"]),
        (#"{"asset": "A", "preset": "1280x720p"}"#, ["unknown preset '1280x720p'", "did you mean '1280x720'"]),
        (#"{"asset": "A", "preset": "LowQuality", "maxAttempts": 21}"#, ["between 1 and 20"]),
        (#"{"asset": "A", "preset": "LowQuality", "key": ""}"#, ["1 to 100 bytes"]),
        (#"{"asset": "A", "preset": "LowQuality", "output": "a.mp4", "outputDir": "."}"#, ["not both"]),
        (#"{"asset": "A", "preset": "LowQuality", "type": "mov", "output": "a.mp4"}"#, ["a.mp4", "mov"]),
        (#"{"asset": "A"}"#, ["missing \"preset\""]),
        (#"["A"]"#, ["not a JSON object"]),
    ])
    func aBadLineIsNamedWithWhatIsWrong(_ line: String, _ words: [String]) async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let text = line.replacingOccurrences(of: #""A""#, with: "\"\(source)\"")
        let error = try #require(Self.failure { _ = try Self.manifest(text) })
        #expect(error.code == .invalidArgument || error.code == .unknownPreset)
        #expect(error.message.hasPrefix("manifest rejected, nothing was queued: line 1: "))
        #expect(words.allSatisfy(error.message.contains), "\(error.message)")
    }

    @Test func everyBadLineIsNamedAndTheFirstGivesTheCode() async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let error = try #require(
            Self.failure {
                _ = try Self.manifest(
                    """
                    # a comment, then a good line
                    {"asset": "\(source)", "preset": "LowQuality"}

                    {"asset": "\(source)", "preset": "1280x720", "type": "m4a"}
                    {"asset": "\(source)", "preset": "LowQuality", "crff": 3}
                    """)
            })
        #expect(error.code == .incompatiblePreset)
        #expect(error.message.contains("line 4: ") && error.message.contains("line 5: "))
        #expect(!error.message.contains("line 2:"))
    }

    /// What `reel export` refuses before work is refused at submit, with its code.
    @Test func submitRefusesWhatIsSureToFail() async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let text = Self.here.appendingPathComponent("notes.mov")
        try Data("not a video at all".utf8).write(to: text)
        let cases: [(JobRequest, ExportError.Code, String)] = [
            (JobRequest(asset: source, preset: "1280x720", type: "m4a"), .incompatiblePreset, "m4a"),
            (JobRequest(asset: source, preset: "LowQuality", timeRange: "5-9"), .invalidArgument, "after the end"),
            (JobRequest(asset: text.path, preset: "LowQuality"), .unreadableInput, "notes.mov"),
            (JobRequest(asset: "/nonexistent/clip.mp4", preset: "LowQuality"), .unreadableInput, "clip.mp4"),
            (JobRequest(asset: source, preset: "LowQuality", outputDir: "/nonexistent"), .outputFailed, "/nonexistent"),
            (JobRequest(asset: source, preset: "Passthrough", output: "x.m4a"), .incompatiblePreset, "m4a"),
        ]
        for (request, code, words) in cases {
            let error = Self.failure { _ = try Self.resolve(request) }
            #expect(
                error?.code == code && error?.message.contains(words) == true,
                "\(request): \(String(describing: error))")
        }
        // Only the access checks: the text file passes them (the worker would find out).
        #expect(throws: Never.self) {
            _ = try Self.resolve(JobRequest(asset: text.path, preset: "LowQuality"), checks: .access)
        }
    }

    @Test func limitsAndAllowedRootsApplyAtSubmit() async throws {
        let source = try await Fixtures.url(Fixtures.landscape)
        var limits = InputLimits.standard
        limits.maxDurationSeconds = 0.5
        let long = Self.failure {
            _ = try JobRequest(asset: source.path, preset: "LowQuality").resolve(
                presets: Self.presets, limits: limits, workingDirectory: Self.here)
        }
        #expect(long?.code == .limitExceeded && long?.message.contains("over the limit") == true)
        limits = .standard
        limits.allowedRoots = [Self.here.path]
        let outside = Self.failure {
            _ = try JobRequest(asset: source.path, preset: "LowQuality").resolve(
                presets: Self.presets, limits: limits, workingDirectory: Self.here)
        }
        #expect(outside?.code == .unreadableInput && outside?.message.contains("outside the allowed folders") == true)
    }

    @Test func theKeyRuleIsTheStoresRule() throws {
        #expect(JobSpec.isValidKey("k") && JobSpec.isValidKey(String(repeating: "é", count: 50)))
        #expect(!JobSpec.isValidKey("") && !JobSpec.isValidKey(String(repeating: "é", count: 51)))
        #expect(throws: (any Error).self) { _ = try SpoolStore.keyName(String(repeating: "x", count: 101)) }
        #expect(try SpoolStore.keyName("k") == "6b")
    }
}
