import Foundation
import ReelExport
import ReelQueue
import TestSupport
import Testing

/// HLS ladders as queued jobs: `reel submit --type hls --ladder …` and a manifest line with the same
/// keys run through `reel work` (isolated and in-process) into a folder published whole, whose
/// result lists every file in it; checked with ffprobe and by listing the folder, never with Reel's
/// own reader.
@Suite("Ladders in the queue", .tags(.process, .media), .timeLimit(.minutes(10)))
struct QueuedLadderTests {
    typealias Spool = WorkerProcessTests.Spool

    /// Every entry under `folder` (hidden ones too), relative to it, sorted; folders not listed.
    static func files(under folder: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        var found: [String] = []
        while let path = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(
                atPath: folder.appendingPathComponent(path).path, isDirectory: &isDirectory)
            if !isDirectory.boolValue { found.append(path) }
        }
        return found.sorted()
    }

    /// ffprobe's streams of `url` (a playlist or a manifest), as `codec_type` and `width`.
    static func probe(_ url: URL) async throws -> [(type: String, width: Int?)] {
        let probe = try await Tools.run(
            "ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width", "-of", "json", url.path])
        #expect(probe.status == 0, "\(url.lastPathComponent): \(probe.stderr)")
        let streams =
            (try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])?["streams"]
            as? [[String: Any]] ?? []
        return streams.map { ($0["codec_type"] as? String ?? "", $0["width"] as? Int) }
    }

    /// A completed ladder job: its folder holds exactly the files its result lists, ffprobe opens
    /// the master playlist and every variant (and the MPD when asked), and every rendition's progress
    /// ended at 1. With `sdr`, an HDR ladder's SDR rungs (`s0`, …) are there beside its HDR ones, in
    /// the same widths, in the files, the variants and the renditions' progress alike.
    static func checkPublished(_ status: JobStatus, widths: [Int], dash: Bool, sdr: Bool = false) async throws {
        #expect(status.state == .completed, "\(status.error?.message ?? "")")
        #expect(status.outputType == "hls")
        let folder = URL(fileURLWithPath: status.output)
        let ladder = try #require(status.result?.ladder, "no ladder in the result")
        #expect(ladder.files == files(under: folder), "the folder holds other files than the result lists")
        #expect(ladder.files.contains("master.m3u8") && ladder.files.contains("a/init.mp4"))
        #expect(ladder.files.contains { $0.hasSuffix(".m4s") } && (ladder.dash != nil) == dash)
        #expect(ladder.files.contains("manifest.mpd") == dash)
        let master = try await probe(folder.appendingPathComponent("master.m3u8"))
        #expect(Set(master.compactMap(\.width)) == Set(widths), "\(master)")
        let sets = sdr ? ["v", "s"] : ["v"]
        for set in sets {
            for (index, width) in widths.sorted(by: >).enumerated() {
                let variant = try await probe(folder.appendingPathComponent("\(set)\(index)/index.m3u8"))
                #expect(
                    variant.map(\.type) == ["video"] && variant.first?.width == width, "\(set)\(index): \(variant)")
            }
        }
        #expect(
            ladder.files.filter { $0.hasSuffix("/init.mp4") }.count == sets.count * widths.count + 1, "\(ladder.files)")
        #expect(try await probe(folder.appendingPathComponent("a/index.m3u8")).map(\.type) == ["audio"])
        if dash {
            let streams = try await probe(folder.appendingPathComponent("manifest.mpd"))
            #expect(Set(streams.compactMap(\.width)) == Set(widths) && streams.contains { $0.type == "audio" })
        }
        let renditions = try #require(status.renditions, "no renditions in the status")
        #expect(renditions.map(\.name) == sets.flatMap { set in widths.indices.map { "\(set)\($0)" } } + ["a"])
        #expect(renditions.allSatisfy { $0.fraction == 1 }, "\(renditions)")
        #expect(renditions.compactMap(\.width) == sets.flatMap { _ in widths.sorted(by: >) })
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func submittedAndManifestLaddersArePublishedWithEveryFileListed(_ mode: String) async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.ladderSource).path
        // No preset: the rungs take the ladder's default, as with `reel export --type hls`.
        let submitted = try await ReelBinary.run(
            [
                "submit", source, "--type", "hls", "--ladder", "1280x720,640x360,320x180", "--segment-duration", "2",
                "--manifests", "hls,dash", "-o", spool.outputs.appendingPathComponent("cli").path + "/", "--json",
            ], environment: spool.environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let cli = try #require(
            (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"] as? String)
        let line =
            ##"{"asset": "\##(source)", "type": "hls", "ladder": "640x360,320x180", "segmentDuration": "2", "outputDir": "\##(spool.outputs.path)", "priority": 5}"##
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        let manifest = try #require(
            (try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(piped.stderr)")
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: spool.environment)
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")

        let first = try #require(spool.status(cli))
        #expect(first.attempts == 1 && first.spec?.ladder?.manifests == [.hls, .dash])
        try await Self.checkPublished(first, widths: [640, 320], dash: true)
        #expect(first.result?.ladder?.dropped == ["1280x720"])
        let second = try #require(spool.status(manifest))
        #expect(second.priority == 5 && second.attempts == 1)
        #expect(URL(fileURLWithPath: second.output).lastPathComponent == "ladder-source.1920x1080.\(manifest).hls")
        try await Self.checkPublished(second, widths: [640, 320], dash: false)
        // Both folders, published by rename: no hidden folder beside them.
        #expect(spool.outputFiles() == ["cli", "ladder-source.1920x1080.\(manifest).hls"].sorted())
        // `reel status --json` carries the same result.
        let shown = try await ReelBinary.run(["status", cli, "--json"], environment: spool.environment)
        let decoded = try JSONCoding.decoder.decode(JobStatus.self, from: Data(shown.stdout.utf8))
        #expect(decoded.result?.ladder == first.result?.ladder && decoded.renditions == first.renditions)
    }

    /// `--ladder` alone implies type hls and a ladder preset names the rungs, at submit as at export.
    @Test func aLadderPresetOrLadderAloneQueuesALadder() async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.ladderSource).path
        var ids: [String] = []
        for options in [["--preset", "HLSLadder1080"], ["--ladder", "640x360,320x180"]] {
            let name = options[0] == "--preset" ? "preset" : "rungs"
            let submitted = try await ReelBinary.run(
                ["submit", source] + options + ["-o", spool.outputs.appendingPathComponent(name).path, "--json"],
                environment: spool.environment)
            #expect(submitted.status == 0, "\(options): \(submitted.stderr)")
            ids.append(
                try #require(
                    (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"]
                        as? String, "\(submitted.stderr)"))
        }
        let worker = try ReelBinary.start(["work", "--drain", "--no-isolate"], environment: spool.environment)
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        // HLSLadder1080's rungs on a 640x360 source: only the 640x480 box's 640x360 is not above it.
        try await Self.checkPublished(try #require(spool.status(ids[0])), widths: [640], dash: false)
        try await Self.checkPublished(try #require(spool.status(ids[1])), widths: [640, 320], dash: false)
    }

    /// HDR kept in the queue: `reel submit --preset HLSLadderHDR1080` and a manifest line naming an
    /// HEVC preset and rungs make HEVC Main 10 rungs said to be HLG, with H.264 SDR rungs beside them
    /// (in the result's files and the status's renditions too), as `reel export` does; a Dolby Vision
    /// profile 5 source is refused at submit in one line, nothing queued.
    @Test func hdrLaddersAreQueuedLikeOthers() async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.ladderHLG).path
        let submitted = try await ReelBinary.run(
            [
                "submit", source, "--preset", "HLSLadderHDR1080", "--segment-duration", "1", "-o",
                spool.outputs.appendingPathComponent("preset").path, "--json",
            ], environment: spool.environment)
        let preset = try #require(
            (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(submitted.stderr)")
        let line =
            ##"{"asset": "\##(source)", "preset": "HEVC1920x1080", "ladder": "640x360,320x180", "segmentDuration": "1", "output": "\##(spool.outputs.appendingPathComponent("line").path)"}"##
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        let manifest = try #require(
            (try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(piped.stderr)")
        let refused = try await ReelBinary.run(
            [
                "submit", try await Fixtures.url(Fixtures.dolbyVision5).path, "--preset", "HLSLadderHDR1080", "-o",
                spool.outputs.appendingPathComponent("dv5").path,
            ], environment: spool.environment)
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("Dolby Vision profile 5"), "\(refused.stderr)")

        let worker = try ReelBinary.start(["work", "--drain", "--no-isolate"], environment: spool.environment)
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        // HLSLadderHDR1080's boxes on the 640x360 source: only HEVC640x480's 640x360 is not above it.
        for (id, widths) in [(preset, [640]), (manifest, [640, 320])] {
            let status = try #require(spool.status(id))
            try await Self.checkPublished(status, widths: widths, dash: false, sdr: true)
            let folder = URL(fileURLWithPath: status.output)
            let master = try String(contentsOf: folder.appendingPathComponent("master.m3u8"), encoding: .utf8)
            let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
            let hdr = variants.filter { $0.contains("CODECS=\"hvc1.2.4.") && $0.contains(",VIDEO-RANGE=HLG,") }
            let sdr = variants.filter { $0.contains("CODECS=\"avc1.64") && $0.contains(",VIDEO-RANGE=SDR,") }
            #expect(
                hdr.count == widths.count && sdr.count == widths.count && variants.count == 2 * widths.count,
                "\(master)")
        }
        #expect(spool.outputFiles() == ["line", "preset"])
    }

    /// A worker killed mid-ladder (with its export process, when isolated): the job runs again and
    /// completes once; no hidden folder is left; the status showed each rendition's progress while it ran.
    @Test(arguments: ["--isolate", "--no-isolate"])
    func aKilledWorkersLadderCompletesOnceWithNoHalfFolder(_ mode: String) async throws {
        let spool = Spool()
        let output = spool.outputs.appendingPathComponent("out")
        let submitted = try await ReelBinary.run(
            [
                "submit", try await Fixtures.url(Fixtures.long).path, "--type", "hls", "--ladder", "640x360,320x180",
                "--segment-duration", "2", "--time-range", "0-12", "-o", output.path, "--json",
            ], environment: spool.environment)
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(submitted.stderr)")
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        let running = await spool.waitFor(id, seconds: 120) {
            $0.state == .exporting && $0.progress > 0.05 && $0.renditions != nil
        }
        let renditions = try #require(running?.renditions, "no per-rendition progress while exporting")
        #expect(renditions.map(\.name) == ["v0", "v1", "a"], "\(renditions)")
        #expect(renditions.allSatisfy { (0...1).contains($0.fraction) } && renditions.contains { $0.fraction > 0 })
        #expect(renditions.contains { $0.fraction < 1 }, "\(renditions)")
        worker.signal(SIGKILL)
        _ = try await worker.exit()
        #expect(!FileManager.default.fileExists(atPath: output.path), "the folder appeared although the worker died")
        let restarted = try ReelBinary.start(["work", "--drain", mode], environment: spool.environment)
        #expect(try await restarted.exit(within: .seconds(300)).status == 0, "\(restarted.output.suffix(2000))")
        let status = try #require(spool.status(id))
        #expect(status.state == .completed && status.attempts == 2, "\(status.state) after \(status.attempts)")
        #expect(spool.outputFiles() == ["out"], "leftovers: \(spool.outputFiles())")
        try await Self.checkPublished(status, widths: [640, 320], dash: false)
    }

    /// What is wrong with a queued ladder is refused at submit, in one line, and nothing is queued.
    @Test(arguments: [
        (#""ladder": "1280x""#, "cannot read the ladder rung '1280x'"),
        (#""ladder": "640x360", "segmentDuration": "0""#, "segment duration '0'"),
        (#""ladder": "1920x1080,1280x720""#, "is larger than the source (640x360)"),
        (#""ladder": "320x180", "poster": true"#, "an hls ladder does not take a poster"),
        (#""ladder": "320x180", "output": "{outputs}/exists/""#, "already exists"),
        (#""manifests": "hls""#, "needs its rungs"),
    ])
    func aBadLadderIsRefusedAtSubmitInOneLine(_ keys: String, _ message: String) async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.ladderSource).path
        try FileManager.default.createDirectory(
            at: spool.outputs.appendingPathComponent("exists"), withIntermediateDirectories: true)
        let line = ##"{"asset": "\##(source)", "type": "hls", \##(keys)}"##
            .replacingOccurrences(of: "{outputs}", with: spool.outputs.path)
        let refused = try await ReelBinary.run(
            ["submit", "--manifest", "-"], environment: spool.environment, input: Data(line.utf8))
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("line 1: ") && lines[0].contains(message), "\(refused.stderr)")
        #expect(try await spool.store.list(state: nil).isEmpty)
        #expect(spool.outputFiles() == ["exists"])
    }

    /// A queued ladder whose rung's encoder fails mid-run (`REEL_TEST_OUTPUT_FAULT=rung-encoder`,
    /// debug builds), H.264 and HEVC: the job fails, not completes, its error the one line naming the
    /// rendition and the cause; nothing at its output and no hidden folder; the worker drains and
    /// exits (no thread of the export left waiting).
    @Test(arguments: ["--isolate", "--no-isolate"])
    func aLadderWhoseRungFailsFailsItsJobAndLeavesNothing(_ mode: String) async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.ladderTiny).path
        var ids: [String] = []
        for preset in ["1280x720", "HEVC1920x1080"] {
            let submitted = try await ReelBinary.run(
                [
                    "submit", source, "--preset", preset, "--type", "hls", "--ladder", "320x180,160x90",
                    "--segment-duration", "1", "--max-attempts", "1", "-o",
                    spool.outputs.appendingPathComponent(preset).path, "--json",
                ], environment: spool.environment)
            ids.append(
                try #require(
                    (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"]
                        as? String, "\(submitted.stderr)"))
        }
        let worker = try ReelBinary.start(
            ["work", "--drain", "--jobs", "1", mode],
            environment: spool.environment.merging(["REEL_TEST_OUTPUT_FAULT": "rung-encoder"]) { $1 })
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        for id in ids {
            let status = try #require(spool.status(id))
            #expect(status.state == .failed && status.attempts == 1, "\(status.state) after \(status.attempts)")
            #expect(
                status.error?.message
                    == "rendition v1 (160x90): the encoder refused frame 30: a fault injected by a test",
                "\(status.error?.message ?? "")")
        }
        #expect(spool.outputFiles().isEmpty, "left at the output: \(spool.outputFiles())")
    }
}
