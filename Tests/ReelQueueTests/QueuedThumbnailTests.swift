import Foundation
import ReelExport
import ReelQueue
import TestSupport
import Testing

/// Thumbnail sets as queued jobs: `reel thumbnail --submit` and a manifest line's `thumbnails`
/// object run through `reel work` (isolated and in-process) into a folder published whole; every
/// image is ffmpeg's frame at the actual time the result reports (PSNR), and the folder holds exactly
/// the files the result lists.
@Suite("Thumbnail sets in the queue", .tags(.process, .media), .timeLimit(.minutes(10)))
struct QueuedThumbnailTests {
    typealias Spool = WorkerProcessTests.Spool

    static func id(_ result: ToolResult) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.split(separator: "\n")[0].utf8))
        guard let id = (object as? [String: Any])?["id"] as? String else {
            throw ToolFailure(message: "no id: \(result.stdout) \(result.stderr)")
        }
        return id
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func submittedAndManifestSetsArePublishedWithEveryImageListed(_ mode: String) async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.gop)
        // Exact frames at given times, as PNG, fitted into 320x.
        let submitted = try await ReelBinary.run(
            [
                "thumbnail", source.path, "--submit", "--exact", "--at", "1.99,3.33,50%,11.9", "--format", "png",
                "--max-size", "320x", "-o", spool.outputs.appendingPathComponent("stills").path + "/", "--priority",
                "3",
                "--json",
            ], environment: spool.environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let stills = try Self.id(submitted)
        // Sheets with their track, from a manifest line (keyframes, the default).
        let line =
            ##"{"asset": "\##(source.path)", "outputDir": "\##(spool.outputs.path)", "thumbnails": {"every": "1s", "sheet": "4x2", "maxSize": "160x"}}"##
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        #expect(piped.status == 0, "\(piped.stderr)")
        let sheets = try Self.id(piped)
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: spool.environment)
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")

        let first = try #require(spool.status(stills))
        #expect(first.state == .completed && first.attempts == 1, "\(first.error?.message ?? "")")
        #expect(first.outputType == "thumbnails" && first.priority == 3)
        let set = try #require(first.result?.thumbnails)
        let folder = URL(fileURLWithPath: first.output)
        #expect(set.files == QueuedLadderTests.files(under: folder))
        #expect(set.files == ["gop-12s-001.png", "gop-12s-002.png", "gop-12s-003.png", "gop-12s-004.png"])
        #expect(set.images.map(\.requestedTime) == [1.99, 3.33, 6, 11.9])
        let frames = try await Stills.frames(source).map(\.time)
        for image in set.images {
            // The frame shown at the requested time, as ffprobe lists them, and ffmpeg's picture of it.
            let expected = try #require(frames.last { $0 <= image.requestedTime + 1e-6 })
            #expect(abs(image.actualTime - expected) < 0.001, "asked \(image.requestedTime), got \(image.actualTime)")
            #expect(image.width == 320 && image.height == 180)
            let file = folder.appendingPathComponent(image.file)
            #expect(try await ProbedFile.probe(file).video?.codec_name == "png")
            let right = try await Stills.psnr(file, against: source, at: image.actualTime)
            let next = try await Stills.psnr(file, against: source, at: image.actualTime + 0.04)
            #expect(right.average >= 33 && right.average > next.average + 5, "\(image.file): \(right) vs \(next)")
        }

        let second = try #require(spool.status(sheets))
        #expect(second.state == .completed, "\(second.error?.message ?? "")")
        #expect(URL(fileURLWithPath: second.output).lastPathComponent == "gop-12s.thumbnails.\(sheets)")
        let sheetSet = try #require(second.result?.thumbnails)
        let sheetFolder = URL(fileURLWithPath: second.output)
        #expect(
            sheetSet.files == ["gop-12s-sprite-001.jpg", "gop-12s-sprite-002.jpg", "gop-12s-thumbnails.vtt"]
                && sheetSet.track == "gop-12s-thumbnails.vtt")
        #expect(sheetSet.files == QueuedLadderTests.files(under: sheetFolder))
        #expect(sheetSet.images.count == 12)
        let track = try String(
            contentsOf: sheetFolder.appendingPathComponent("gop-12s-thumbnails.vtt"), encoding: .utf8)
        for index in [0, 5, 11] {
            let image = sheetSet.images[index]
            let (x, y) = (try #require(image.x), try #require(image.y))
            #expect(track.contains("\(image.file)#xywh=\(x),\(y),160,90"), "cell \(index)")
            let right = try await Stills.psnr(
                sheetFolder.appendingPathComponent(image.file), against: source, at: image.actualTime,
                imageFilters: "crop=160:90:\(x):\(y)", size: (160, 90))
            #expect(right.average >= 30, "cell \(index): \(right)")
        }
        #expect(spool.outputFiles() == ["gop-12s.thumbnails.\(sheets)", "stills"].sorted())
    }

    /// What a thumbnail set cannot be is refused at submit in one line, and nothing is queued.
    @Test(arguments: [
        (#""thumbnails": {"at": ["1", "13"]}"#, "past the end of the asset"),
        (#""thumbnails": {"count": 3, "size": "320x"}"#, "unknown key 'thumbnails.size'"),
        (#""thumbnails": {"count": 3, "sheet": "0x2"}"#, "cannot read the sheet '0x2'"),
        (#""thumbnails": {"count": 3}, "preset": "720p""#, "a thumbnail set takes output"),
        (#""thumbnails": {"count": 3}, "output": "{outputs}/exists""#, "already exists"),
    ])
    func aBadSetIsRefusedAtSubmitInOneLine(_ keys: String, _ message: String) async throws {
        let spool = Spool()
        try FileManager.default.createDirectory(
            at: spool.outputs.appendingPathComponent("exists"), withIntermediateDirectories: true)
        let source = try await Fixtures.url(Fixtures.gop).path
        let line = ##"{"asset": "\##(source)", \##(keys)}"##.replacingOccurrences(
            of: "{outputs}", with: spool.outputs.path)
        let refused = try await ReelBinary.run(
            ["submit", "--manifest", "-"], environment: spool.environment, input: Data(line.utf8))
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(message), "\(refused.stderr)")
        #expect(try await spool.store.list(state: nil).isEmpty)
        // The command-line form refuses in the same words.
        let cli = try await ReelBinary.run(
            ["thumbnail", source, "--submit", "--at", "1,13", "-o", spool.outputs.appendingPathComponent("t").path],
            environment: spool.environment)
        #expect(cli.status == 64 && cli.stderr.contains("past the end of the asset"), "\(cli.stderr)")
        #expect(spool.outputFiles() == ["exists"])
    }
}

extension QueuedThumbnailTests {
    /// A worker killed while it makes a set: the job runs again and completes once, and no hidden
    /// folder is left beside the published one.
    @Test(arguments: ["--isolate", "--no-isolate"])
    func aKilledWorkersSetCompletesOnceWithNoHalfFolder(_ mode: String) async throws {
        let spool = Spool()
        let output = spool.outputs.appendingPathComponent("thumbs")
        // Exact frames every 0.2 s of a 20 s 720p clip: long enough to be killed part-way.
        let submitted = try await ReelBinary.run(
            [
                "thumbnail", try await Fixtures.url(Fixtures.long).path, "--submit", "--exact", "--every", "200ms",
                "--format", "png", "-o", output.path, "--json",
            ], environment: spool.environment)
        let id = try Self.id(submitted)
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        let running = await spool.waitFor(id, seconds: 120) { $0.state == .exporting && $0.progress > 0.05 }
        #expect(running != nil, "\(worker.output.suffix(2000))")
        worker.signal(SIGKILL)
        _ = try await worker.exit()
        #expect(!FileManager.default.fileExists(atPath: output.path), "the folder appeared although the worker died")
        let restarted = try ReelBinary.start(["work", "--drain", mode], environment: spool.environment)
        #expect(try await restarted.exit(within: .seconds(300)).status == 0, "\(restarted.output.suffix(2000))")
        let status = try #require(spool.status(id))
        #expect(status.state == .completed && status.attempts == 2, "\(status.state) after \(status.attempts)")
        #expect(spool.outputFiles() == ["thumbs"], "leftovers: \(spool.outputFiles())")
        let set = try #require(status.result?.thumbnails)
        #expect(set.images.count == 100 && set.files.count == 100)
        #expect(set.files == QueuedLadderTests.files(under: output))
    }
}

extension QueuedThumbnailTests {
    /// A set whose reading stops (its threads held still, as a hung decoder or disk holds them) fails
    /// as `stalled` after the worker's stall timeout, in one line, with nothing at the output and no
    /// hidden folder left; in-process as in an export process. The threads are held well past the
    /// timeout (8 s against 2 s), so the outcome does not depend on how fast the machine is.
    @Test(arguments: ["--isolate", "--no-isolate"])
    func aSetWhoseReadingStopsFailsAsStalled(_ mode: String) async throws {
        let spool = Spool()
        let output = spool.outputs.appendingPathComponent("thumbs")
        // Exact frames every 0.2 s of a 20 s 720p clip: seconds of reading to catch.
        let submitted = try await ReelBinary.run(
            [
                "thumbnail", try await Fixtures.url(Fixtures.long).path, "--submit", "--exact", "--every", "200ms",
                "--format", "png", "-o", output.path, "--max-attempts", "1", "--json",
            ], environment: spool.environment)
        let id = try Self.id(submitted)
        let worker = try ReelBinary.start(
            ["work", "--drain", "--jobs", "1", "--stall-timeout", "2", mode], environment: spool.environment)
        let froze = try await ThreadFreezer.freeze(
            threadsNamed: "reel-thumbnails", in: worker.pid, for: 8, waiting: 120, timeLimit: .seconds(180))
        try #require(froze.status == 0 && froze.stdout.contains("froze"), "\(froze.stdout)\(froze.stderr)")
        #expect(try await worker.exit(within: .seconds(120)).status == 0, "\(worker.output.suffix(2000))")
        let status = try #require(spool.status(id))
        #expect(
            status.state == .failed && status.error?.code == .stalled,
            "\(status.state): \(status.error?.message ?? "")")
        let message = status.error?.message ?? ""
        #expect(message.contains("no progress for 2 s") && !message.contains("\n"), "\(message)")
        #expect(spool.outputFiles().isEmpty, "left at the output: \(spool.outputFiles())")
    }
}

extension QueuedThumbnailTests {
    /// `reel thumbnail` in the foreground and its `--submit` run one `ThumbnailSetExport`: the same
    /// options give the same files under the same names, byte for byte (pictures, sheets and the
    /// WebVTT track), in either mode.
    @Test(arguments: [
        ["--count", "3", "--max-size", "160x", "--exact"],
        ["--every", "2s", "--sheet", "3x2", "--format", "png"],
    ])
    func foregroundAndQueuedSetsWriteTheSameFiles(_ options: [String]) async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.gop).path
        let here = spool.outputs.appendingPathComponent("here")
        let there = spool.outputs.appendingPathComponent("there")
        let foreground = try await ReelBinary.run(
            ["thumbnail", source] + options + ["-o", here.path + "/"], environment: spool.environment)
        #expect(foreground.status == 0, "\(foreground.stderr)")
        let submitted = try await ReelBinary.run(
            ["thumbnail", source, "--submit", "--json"] + options + ["-o", there.path],
            environment: spool.environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let id = try Self.id(submitted)
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "1"], environment: spool.environment)
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        #expect(spool.status(id)?.state == .completed, "\(spool.status(id)?.error?.message ?? "")")
        let names = QueuedLadderTests.files(under: here)
        #expect(!names.isEmpty && names == QueuedLadderTests.files(under: there), "\(names)")
        for name in names {
            let mine = try Data(contentsOf: here.appendingPathComponent(name))
            let queued = try Data(contentsOf: there.appendingPathComponent(name))
            #expect(mine == queued, "\(name) differs")
        }
    }

    /// The same bad options are refused in the same line whether the set runs now or is queued, and
    /// neither leaves anything behind.
    @Test func foregroundAndQueuedSetsRefuseInTheSameWords() async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.gop).path
        let cases: [[String]] = [
            ["--count", "0"], ["--at", "1", "--count", "2"], ["--sheet", "0x2"], ["--max-size", "big"],
            ["--quality", "0"], ["--at", "1,13"], ["--at", "soon"], ["--every", "-1s"], ["--format", "gif"],
            ["--at", "1", "--exact", "--tolerance", "1"], ["--at", "1", "--tolerance", "x"], [],
        ]
        for options in cases {
            let output = spool.outputs.appendingPathComponent("set").path
            let now = try await ReelBinary.run(
                ["thumbnail", source] + options + ["-o", output], environment: spool.environment)
            let queued = try await ReelBinary.run(
                ["thumbnail", source, "--submit"] + options + ["-o", output], environment: spool.environment)
            #expect(now.status == 64 && queued.status == 64, "\(options): \(now.status) \(queued.status)")
            #expect(now.stderr.split(separator: "\n").count == 1, "\(options): \(now.stderr)")
            #expect(now.stderr == queued.stderr, "\(options): \(now.stderr) vs \(queued.stderr)")
        }
        #expect(try await spool.store.list(state: nil).isEmpty)
        #expect(spool.outputFiles().isEmpty, "\(spool.outputFiles())")
    }

    /// The foreground set has the queued set's stall watchdog: its reading held still past
    /// `--stall-timeout`, it stops as `stalled` in one line (exit 1), and no temporary is left.
    @Test func aForegroundSetWhoseReadingStopsFailsAsStalled() async throws {
        let spool = Spool()
        let output = spool.outputs.appendingPathComponent("thumbs")
        let run = try ReelBinary.start(
            [
                "thumbnail", try await Fixtures.url(Fixtures.long).path, "--exact", "--every", "200ms", "--format",
                "png", "-o", output.path + "/", "--stall-timeout", "2",
            ], environment: spool.environment)
        let froze = try await ThreadFreezer.freeze(
            threadsNamed: "reel-thumbnails", in: run.pid, for: 8, waiting: 120, timeLimit: .seconds(180))
        try #require(froze.status == 0 && froze.stdout.contains("froze"), "\(froze.stdout)\(froze.stderr)")
        let ended = try await run.exit(within: .seconds(120))
        #expect(ended.reason == .exit && ended.status == 1, "\(run.output.suffix(600))")
        let errors = run.output.split(separator: "\n").filter { $0.hasPrefix("reel: error:") }
        #expect(errors.count == 1 && errors[0].contains("no progress for 2 s"), "\(run.output.suffix(600))")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []
        #expect(files.count < 100 && files.allSatisfy { !$0.hasPrefix(".") }, "\(files)")
    }
}
