import Foundation
import ReelExport
import TestSupport
import Testing

/// Bad input, impossible combinations and cancellation end in a clear error and leave nothing.
@Suite("Failures", .tags(.process, .media), .timeLimit(.minutes(10)))
struct FailureTests {
    /// Builds a hostile or broken input file in a fresh folder and returns it.
    static func make(_ name: String, _ write: (URL) async throws -> Void) async throws -> URL {
        let url = Fixtures.scratchFolder("bad-input").appendingPathComponent(name)
        try await write(url)
        return url
    }

    static func sourceBytes() async throws -> Data { try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)) }

    enum BadInput: String, CaseIterable, Sendable {
        case missing, empty, text, random, directory, truncatedHeader, zeroedHeader, hlsPlaylist, concatList, fifo
        case undecodableAudio, playlistOfANeighbour, hugeDeclaredSize

        func file() async throws -> URL {
            switch self {
            case .missing:
                return Fixtures.scratchFolder("bad-input").appendingPathComponent("missing.mp4")
            case .empty:
                return try await make("empty.mp4") { try Data().write(to: $0) }
            case .text:
                return try await make("notes.mp4") { try Data("This is not a video.\n".utf8).write(to: $0) }
            case .random:
                return try await make("random.mp4") { url in
                    var generator = SeededGenerator(seed: 0x5EED_0001)
                    try Data((0..<65536).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: url)
                }
            case .directory:
                return try await make("folder.mp4") {
                    try FileManager.default.createDirectory(at: $0, withIntermediateDirectories: false)
                }
            case .truncatedHeader:
                return try await make("truncated.mp4") {
                    try await FailureTests.sourceBytes().prefix(600).write(to: $0)
                }
            case .zeroedHeader:
                return try await make("zeroed.mp4") { url in
                    var bytes = try await FailureTests.sourceBytes()
                    bytes.replaceSubrange(0..<min(4096, bytes.count), with: Data(count: min(4096, bytes.count)))
                    try bytes.write(to: url)
                }
            case .hlsPlaylist:
                // An HLS playlist disguised as MP4 would pull in another file; the demuxer is not allowed.
                return try await make("playlist.mp4") { url in
                    try Data("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n".utf8).write(
                        to: url)
                }
            case .concatList:
                return try await make("list.mp4") { url in
                    try Data("ffconcat version 1.0\nfile '/etc/passwd'\n".utf8).write(to: url)
                }
            case .playlistOfANeighbour:
                // A playlist that would pull in a real video sitting beside it.
                return try await make("neighbour.mp4") { url in
                    let beside = url.deletingLastPathComponent().appendingPathComponent("beside.mp4")
                    try FileManager.default.copyItem(at: try await Fixtures.url(Fixtures.landscape), to: beside)
                    try Data("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nbeside.mp4\n#EXT-X-ENDLIST\n".utf8).write(
                        to: url)
                }
            case .hugeDeclaredSize:
                // A raw video header declaring a 60000x60000 picture (5 GB per frame).
                return try await make("huge.y4m") { url in
                    try (Data("YUV4MPEG2 W60000 H60000 F30:1 C420jpeg\nFRAME\n".utf8) + Data(count: 65536)).write(
                        to: url)
                }
            case .undecodableAudio:
                // A FLAC header that promises audio, followed by nothing decodable.
                return try await make("silent.flac") { url in
                    let bytes = try Data(contentsOf: try await Fixtures.url(Fixtures.flac))
                    try (bytes.prefix(8192) + Data(count: max(0, bytes.count - 8192))).write(to: url)
                }
            case .fifo:
                return try await make("pipe.mp4") { url in
                    guard mkfifo(url.path, 0o600) == 0 else { throw ToolFailure(message: "mkfifo failed") }
                }
            }
        }
    }

    @Test(arguments: BadInput.allCases)
    func badInputFailsWithOneClearLine(_ kind: BadInput) async throws {
        let url = try await kind.file()
        let folder = Fixtures.scratchFolder("bad-output")
        do {
            let asset = try await Asset.load(url)
            let session = try ExportSession(asset: asset, presetName: "1280x720")
            // What goes wrong here is reading the input: an audio-only one (the FLAC) is let through
            // the preset's `no-video` refusal, so its audio is decoded.
            session.allowsAudioOnly = true
            session.outputURL = folder.appendingPathComponent("out.mp4")
            try await session.export()
            Issue.record("\(kind) was exported")
        } catch {
            #expect(
                [.unreadableInput, .unsupportedCodec, .limitExceeded].contains(error.code),
                "\(kind): \(error.code) \(error.message)")
            #expect(!error.message.isEmpty && !error.message.contains("\n"))
        }
        #expect(contents(of: folder).isEmpty)
    }

    /// A file cut short in its media data (moov first, so the header survives) either exports what is
    /// there or fails; either way nothing partial is left behind.
    @Test(arguments: [0.3, 0.6, 0.9])
    func truncatedMediaEndsCleanly(_ fraction: Double) async throws {
        let source = try await Fixtures.url(Fixtures.landscape)
        let faststart = Fixtures.scratchFolder("faststart").appendingPathComponent("fs.mp4")
        try await Tools.ffmpeg(["-i", source.path, "-c", "copy", "-movflags", "+faststart", faststart.path])
        let bytes = try Data(contentsOf: faststart)
        let cut = try await FailureTests.make("cut.mp4") {
            try bytes.prefix(Int(Double(bytes.count) * fraction)).write(to: $0)
        }
        let folder = Fixtures.scratchFolder("cut-output")
        let output = folder.appendingPathComponent("out.mp4")
        do {
            let session = try ExportSession(asset: try await Asset.load(cut), presetName: "MediumQuality")
            session.outputURL = output
            try await session.export()
            let probed = try await ProbedFile.probe(output, countFrames: true)
            #expect((probed.video?.frames ?? 0) > 0)
            #expect(contents(of: folder) == ["out.mp4"])
        } catch let error as ExportError {
            #expect(!error.message.contains("\n"))
            // The reader's real failure, never the pipeline's internal "stopped".
            #expect(error.code != .cancelled, "\(error.message)")
            #expect(contents(of: folder).isEmpty)
        }
    }

    @Test func flippedBytesEndInACleanResult() async throws {
        var bytes = try await FailureTests.sourceBytes()
        var generator = SeededGenerator(seed: 0x5EED_0002)
        for _ in 0..<200 {
            let index = Int.random(in: 2048..<bytes.count, using: &generator)
            bytes[index] ^= 0xFF
        }
        let url = try await FailureTests.make("flipped.mp4") { try bytes.write(to: $0) }
        let folder = Fixtures.scratchFolder("flipped-output")
        do {
            let session = try ExportSession(asset: try await Asset.load(url), presetName: "MediumQuality")
            session.outputURL = folder.appendingPathComponent("out.mp4")
            try await session.export()
            #expect(try await ProbedFile.probe(folder.appendingPathComponent("out.mp4")).video != nil)
        } catch let error as ExportError {
            #expect(error.code != .cancelled, "\(error.message) (seed \(generator.seed))")
            #expect(contents(of: folder).isEmpty)
        }
    }

    @Test(arguments: [
        (Fixtures.landscape, "1280x720", OutputType.m4a, "m4a"),
        (Fixtures.landscape, "AppleM4A", OutputType.m4v, "audio only"),
        (Fixtures.noAudio, "AppleM4A", OutputType.m4a, "no"),
        (Fixtures.landscape, "Passthrough", OutputType.m4a, "m4a"),
        (Fixtures.wav, "Passthrough", OutputType.mp4, "pcm_s16le"),
        (Fixtures.flac, "Passthrough", OutputType.m4a, "flac"),
        (Fixtures.tiny12, "HEVC1920x1080", OutputType.mp4, "at least 16 pixels"),
    ])
    func incompatibleCombinationsAreRefusedBeforeAnyWork(
        _ recipe: Fixtures.Recipe, _ preset: String, _ type: OutputType, _ words: String
    ) async throws {
        let session = try ExportSession(asset: try await Asset.load(try await Fixtures.url(recipe)), presetName: preset)
        session.outputFileType = type
        #expect {
            try session.determineCompatibility()
        } throws: { error in
            let error = error as! ExportError
            return error.code == .incompatiblePreset && error.message.contains(words)
        }
        let folder = Fixtures.scratchFolder("incompatible")
        session.outputURL = folder.appendingPathComponent("out.\(type.fileExtension)")
        await #expect(throws: ExportError.self) { try await session.export() }
        #expect(session.status == .failed)
        #expect(contents(of: folder).isEmpty)
    }

    @Test func existingOutputIsNotReplacedUnlessAsked() async throws {
        let folder = Fixtures.scratchFolder("exists")
        let output = folder.appendingPathComponent("out.mp4")
        try Data("keep me".utf8).write(to: output)
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "LowQuality")
        session.outputURL = output
        await #expect(throws: ExportError.self) { try await session.export() }
        #expect(try Data(contentsOf: output) == Data("keep me".utf8))
        let again = try ExportSession(asset: asset, presetName: "LowQuality")
        again.outputURL = output
        again.overwritesExistingFile = true
        try await again.export()
        #expect(try await ProbedFile.probe(output).video?.width == 224)
        #expect(contents(of: folder) == ["out.mp4"])
    }

    @Test func cancelMidExportLeavesNothing() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.long))
        let session = try ExportSession(asset: asset, presetName: "HighestQuality")
        session.forceTranscode = true
        let folder = Fixtures.scratchFolder("cancel")
        session.outputURL = folder.appendingPathComponent("out.mp4")
        // The cancel comes from the export's own thread, so a busy cooperative pool cannot delay it.
        session.progressHandler = { update in
            if update.fraction > 0.05 && update.status == .exporting { session.cancelExport() }
        }
        let updates = session.progressUpdates
        let watcher = Task { await Array(updates).map(\.fraction) }
        do {
            try await session.export()
            Issue.record("the export finished despite the cancel")
        } catch {
            #expect(error.code == .cancelled)
        }
        let seen = await watcher.value
        #expect(seen.contains { $0 > 0.05 })
        #expect(session.status == .cancelled)
        #expect(contents(of: folder).isEmpty)
    }

    @Test func cancellingTheTaskCancelsTheExport() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.long))
        let session = try ExportSession(asset: asset, presetName: "HighestQuality")
        session.forceTranscode = true
        let folder = Fixtures.scratchFolder("task-cancel")
        session.outputURL = folder.appendingPathComponent("out.mp4")
        let task = Task { try await session.export() }
        _ = await eventually(every: .milliseconds(10)) {
            session.progress >= 0.02 || session.status == .completed ? true : nil
        }
        task.cancel()
        await #expect(throws: ExportError.self) { try await task.value }
        #expect(session.status == .cancelled)
        #expect(contents(of: folder).isEmpty)
    }

    @Test func progressRisesToOneThroughFinalizing() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "MediumQuality")
        session.outputURL = Fixtures.scratchFolder("progress").appendingPathComponent("out.mp4")
        let updates = session.progressUpdates
        let watcher = Task { await Array(updates) }
        try await session.export()
        let seen = await watcher.value
        let fractions = seen.map(\.fraction)
        #expect(fractions == fractions.sorted(), "progress went backwards: \(fractions)")
        #expect(seen.last?.status == .completed && seen.last?.fraction == 1)
        #expect(seen.contains { $0.phase == .finalizing })
        #expect(seen.contains { $0.status == .exporting })
    }
}

extension Array {
    init<S: AsyncSequence>(_ sequence: S) async where S.Element == Element, S.Failure == Never {
        var result: [Element] = []
        for await element in sequence { result.append(element) }
        self = result
    }
}
