import Foundation
import ReelExport
import TestSupport
import Testing

/// The output type and the output's name agree: an extension that names a type sets it, one that
/// contradicts `--type` or names no type is refused unless the extension is forced.
@Suite("Output type and name", .tags(.process, .media), .timeLimit(.minutes(4)))
struct OutputTypeTests {
    static let video = try! PresetLibrary.shipped.preset(named: "1280x720")
    static let audio = try! PresetLibrary.shipped.preset(named: "AppleM4A")

    @Test(
        arguments: [
            (nil, nil, false, OutputType.mp4), (nil, "out/clip.mov", false, .mov), (nil, "clip.M4V", false, .m4v),
            ("mov", nil, false, .mov), ("mov", "clip.mov", false, .mov),
            ("com.apple.quicktime-movie", "a.mov", false, .mov),
            ("mov", "clip.mp4", true, .mov), ("mp4", "clip.avi", true, .mp4), ("mp4", "clip", true, .mp4),
        ] as [(String?, String?, Bool, OutputType)])
    func theTypeComesFromTheRequest(_ explicit: String?, _ path: String?, _ force: Bool, _ expected: OutputType)
        throws
    {
        #expect(
            try OutputType.infer(explicit: explicit, outputPath: path, preset: Self.video, forceExtension: force)
                == expected)
    }

    @Test func anAudioPresetDefaultsToM4A() throws {
        #expect(try OutputType.infer(explicit: nil, outputPath: nil, preset: Self.audio) == .m4a)
        #expect(try OutputType.infer(explicit: nil, outputPath: "song.mp4", preset: Self.audio) == .mp4)
    }

    @Test(
        arguments: [
            ("mov", "x.mp4", false, [".mp4", "mov"]), (nil, "out/foo.avi", false, [".avi"]),
            ("mp4", "out/foo.avi", false, [".avi", "--force-extension"]), (nil, "foo", false, ["no extension"]),
            ("mkv", "foo.mkv", true, ["mkv"]), (nil, "foo.avi", true, ["--type"]),
        ] as [(String?, String, Bool, [String])])
    func aContradictionIsAnError(_ explicit: String?, _ path: String, _ force: Bool, _ words: [String]) {
        #expect {
            _ = try OutputType.infer(explicit: explicit, outputPath: path, preset: Self.video, forceExtension: force)
        } throws: { error in
            let error = error as! ExportError
            return error.code == .invalidArgument && words.allSatisfy(error.message.contains)
                && !error.message.contains("\n")
        }
    }

    @Test func defaultNamesCarryThePresetAndTheTag() {
        let asset = URL(fileURLWithPath: "/media/holiday.clip.mov")
        #expect(OutputType.defaultFileName(asset: asset, preset: Self.video, type: .mp4) == "holiday.clip.1280x720.mp4")
        #expect(
            OutputType.defaultFileName(asset: asset, preset: Self.audio, type: .m4a, tag: "{id}")
                == "holiday.clip.AppleM4A.{id}.m4a")
    }

    /// Through the CLI: exit 64 and one line naming both; nothing written.
    @Test(arguments: [
        (["--type", "mov", "-o", "x.mp4"], ["x.mp4", "mov"]), (["-o", "out-foo.avi"], ["out-foo.avi", ".avi"]),
    ])
    func theCommandLineRefusesAContradiction(_ arguments: [String], _ words: [String]) async throws {
        let folder = Fixtures.scratchFolder("cli-type")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let result = try await ReelBinary.run(
            ["export", source, "--preset", "LowQuality"]
                + arguments.map { $0.contains(".") ? folder.appendingPathComponent($0).path : $0 })
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("reel: error: ") && words.allSatisfy(result.stderr.contains))
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(contents(of: folder).isEmpty)
    }

    @Test func aForcedExtensionWritesTheTypeAskedFor() async throws {
        let folder = Fixtures.scratchFolder("cli-force")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let forced = folder.appendingPathComponent("x.mp4")
        let result = try await ReelBinary.run([
            "export", source, "--preset", "LowQuality", "--type", "mov", "--force-extension", "-o", forced.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await ProbedFile.probe(forced).format.tags?["major_brand"] == "qt  ")
        let named = folder.appendingPathComponent("y.m4v")
        let inferred = try await ReelBinary.run(["export", source, "--preset", "LowQuality", "-o", named.path])
        #expect(inferred.status == 0, "\(inferred.stderr)")
        #expect(try await ProbedFile.probe(named).format.tags?["major_brand"] == "M4V ")
    }
}
