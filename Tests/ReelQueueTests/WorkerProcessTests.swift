import Foundation
import ReelExport
import Synchronization
import TestSupport
import Testing

@testable import ReelQueue

/// Real `reel` processes against one spool: submitters, workers, kills and pollers.
@Suite("Workers in processes", .tags(.process, .media), .serialized, .timeLimit(.minutes(10)))
struct WorkerProcessTests {
    struct Spool {
        let root: URL
        let outputs: URL
        var environment: [String: String] { ["REEL_SPOOL": root.path] }
        var store: SpoolStore { try! SpoolStore(root: root) }

        init() {
            root = Fixtures.scratchFolder("spool")
            outputs = Fixtures.scratchFolder("outputs")
        }

        func submit(_ recipe: Fixtures.Recipe, preset: String, extra: [String] = []) async throws -> String {
            let result = try await ReelBinary.run(
                [
                    "submit", try await Fixtures.url(recipe).path, "--preset", preset, "--output-dir", outputs.path,
                    "--json",
                ]
                    + extra,
                environment: environment)
            guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            guard let id = json?["id"] as? String else { throw ToolFailure(message: "no id in \(result.stdout)") }
            return id
        }

        /// The job's status file, read as a poller reads it.
        func status(_ id: String) -> JobStatus? { try? store.status(id: id) }

        /// Waits until `predicate` holds for the job's status (polling its status file).
        func waitFor(_ id: String, seconds: Double = 60, _ predicate: (JobStatus) -> Bool) async -> JobStatus? {
            await eventually(within: .seconds(seconds)) { status(id).flatMap { predicate($0) ? $0 : nil } }
        }

        func outputFiles() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: outputs.path)) ?? []).sorted()
        }
    }

    @Test func severalSubmittersAndWorkersRunEveryJobExactlyOnce() async throws {
        let spool = Spool()
        let submitted = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var ids: [String] = []
                    for _ in 0..<3 { ids.append(try await spool.submit(Fixtures.landscape, preset: "LowQuality")) }
                    return ids
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(submitted.count == 12)
        // One in-process worker among isolated ones: both kinds share a spool safely.
        let workers = try ["--isolate", "--no-isolate", "--isolate"].map { mode in
            try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: spool.environment)
        }
        for worker in workers { #expect(try await worker.exit().status == 0, "\(worker.output)") }
        for id in submitted {
            let status = try #require(spool.status(id))
            #expect(
                status.state == .completed && status.attempts == 1, "\(id): \(status.state) after \(status.attempts)")
        }
        #expect(spool.outputFiles().count == 12)
        #expect(spool.outputFiles().allSatisfy { !$0.hasPrefix(".") })
    }

    /// A backlog runs one single-threaded job per core; a job alone gets every core. Checked in the
    /// x264 settings each output carries (mediainfo).
    @Test(arguments: ["--isolate", "--no-isolate"])
    func codecThreadsFollowTheQueue(_ mode: String) async throws {
        let backlog = Spool()
        var ids: [String] = []
        for _ in 0..<3 {
            ids.append(try await backlog.submit(Fixtures.landscape, preset: "LowQuality", extra: ["--force-transcode"]))
        }
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: backlog.environment)
        #expect(try await worker.exit().status == 0, "\(worker.output)")
        // The first two were claimed with a third still waiting.
        for id in ids.prefix(2) {
            let status = try #require(backlog.status(id))
            #expect(status.state == .completed)
            let output = URL(fileURLWithPath: status.output)
            #expect(try await MediaInfoTool.x264Threads(output) == 1, "\(id)")
        }
        guard ProcessInfo.processInfo.activeProcessorCount > 1 else { return }
        let alone = Spool()
        let id = try await alone.submit(Fixtures.landscape, preset: "LowQuality", extra: ["--force-transcode"])
        let single = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: alone.environment)
        try await single.exit()
        let status = try #require(alone.status(id))
        #expect(status.state == .completed)
        let output = URL(fileURLWithPath: status.output)
        #expect(try await MediaInfoTool.x264Threads(output).map { $0 > 1 } == true)
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func aKilledWorkersJobCompletesOnRestartWithNoPartialOutput(_ mode: String) async throws {
        let spool = Spool()
        let id = try await spool.submit(
            Fixtures.long, preset: "HighestQuality", extra: ["--time-range", "0-10", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        let running = await spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.05 }
        #expect(running != nil)
        worker.signal(SIGKILL)
        try await worker.exit()
        let output = try #require(spool.status(id)).output
        #expect(!FileManager.default.fileExists(atPath: output), "output appeared although the worker died")
        let restarted = try ReelBinary.start(["work", "--drain", mode], environment: spool.environment)
        try await restarted.exit()
        let status = try #require(spool.status(id))
        #expect(status.state == .completed)
        #expect(status.attempts == 2)
        #expect(
            spool.outputFiles() == [URL(fileURLWithPath: output).lastPathComponent], "leftovers: \(spool.outputFiles())"
        )
        #expect((try await ProbedFile.probe(URL(fileURLWithPath: output))).video?.codec_name == "h264")
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func cancelStopsARunningJobWithinASecondAndLeavesNothing(_ mode: String) async throws {
        let spool = Spool()
        let id = try await spool.submit(Fixtures.long, preset: "HighestQuality", extra: ["--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)

        #expect(await spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        let asked = Date()
        let result = try await ReelBinary.run(["cancel", id], environment: spool.environment)
        #expect(result.status == 0)
        // The running worker stops it long before the export could end (no wall-clock service level
        // here: on a busy machine anything is slow; bench-queue measures the latency).
        let cancelled = await spool.waitFor(id, seconds: 30) { $0.state == .cancelled }
        #expect(
            cancelled != nil,
            "still \(spool.status(id)?.state.rawValue ?? "?") \(Date().timeIntervalSince(asked)) s after the cancel")
        #expect(spool.outputFiles().isEmpty, "left: \(spool.outputFiles())")
        let wait = try await ReelBinary.run(["wait", id], environment: spool.environment)
        #expect(wait.status != 0)
        await worker.stop()
    }

    @Test func aPollerNeverSeesATornStatusFile() async throws {
        let spool = Spool()
        var ids: [String] = []
        for _ in 0..<3 { ids.append(try await spool.submit(Fixtures.landscape, preset: "960x540")) }
        let stop = Mutex(false)
        let reads = Mutex((good: 0, torn: 0))
        let files = ids.map { spool.store.statusFile($0) }
        let poller = Task.detached {
            while !stop.withLock({ $0 }) {
                for file in files {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    let ok = (try? JSONCoding.decoder.decode(JobStatus.self, from: data)) != nil
                    reads.withLock { ok ? ($0.good += 1) : ($0.torn += 1) }
                }
                await Task.yield()
            }
        }
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2"], environment: spool.environment)
        #expect(try await worker.exit().status == 0, "\(worker.output)")
        stop.withLock { $0 = true }
        await poller.value
        let counted = reads.withLock { $0 }
        #expect(counted.torn == 0)
        #expect(counted.good > 100)
        #expect(ids.allSatisfy { spool.status($0)?.state == .completed })
    }

    @Test func restartRepairsASpoolWithJobsInEveryState() async throws {
        let spool = Spool()
        let store = spool.store
        func spec(_ name: String) async throws -> JobSpec {
            JobSpec(
                asset: try await Fixtures.url(Fixtures.landscape).path, preset: "LowQuality", outputType: .mp4,
                output: spool.outputs.appendingPathComponent("\(name).mp4").path)
        }
        let empty = JobResult(
            bytes: 0, durationSeconds: 0, width: nil, height: nil, videoCodec: nil, audioCodec: nil,
            networkOptimized: true, elapsedSeconds: 0)
        let completed = try await store.submit(try await spec("completed")).status.id
        try await store.finish(try #require(try await store.claim(worker: "old")), .completed(empty))
        let failed = try await store.submit(try await spec("failed")).status.id
        try await store.finish(
            try #require(try await store.claim(worker: "old")),
            .failed(JobError(code: .init(.unreadableInput), message: "bad", retryable: false)))
        let cancelled = try await store.submit(try await spec("cancelled")).status.id
        _ = try await store.cancel(cancelled)
        let orphan = try await store.submit(try await spec("orphan")).status.id
        let dead = try #require(try await store.claim(worker: "crashed"))
        // An interrupted export's temporary file, as a killed worker leaves it.
        try Data("partial".utf8).write(to: spool.outputs.appendingPathComponent(".orphan.mp4.reel-1234abcd.partial"))
        store.releaseLock(of: dead)
        let delayed = try await store.submit(try await spec("delayed")).status.id
        let retrying = try #require(try await store.claim(worker: "old"))
        #expect(retrying.id == delayed)
        try await store.finish(retrying, .failed(JobError(code: .init(.noSpace), message: "full", retryable: true)))
        let waiting = try await store.submit(try await spec("waiting")).status.id
        #expect(spool.status(delayed)?.state == .waiting)

        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2"], environment: spool.environment)
        #expect(try await worker.exit().status == 0, "\(worker.output)")
        #expect(spool.status(completed)?.state == .completed)
        #expect(spool.status(failed)?.state == .failed)
        #expect(spool.status(cancelled)?.state == .cancelled)
        let recovered = try #require(spool.status(orphan))
        #expect(recovered.state == .completed && recovered.attempts == 2)
        #expect(spool.status(waiting)?.state == .completed)
        #expect(spool.status(delayed)?.state == .completed)
        #expect(spool.status(delayed)?.attempts == 2)
        #expect(spool.outputFiles() == ["delayed.mp4", "orphan.mp4", "waiting.mp4"])
    }

    @Test func aNonRetryableFailureFailsOnceWithACode() async throws {
        let spool = Spool()
        // A good clip at submit (which checks it), garbage by the time a worker runs it.
        let broken = Fixtures.scratchFolder("broken").appendingPathComponent("broken.mp4")
        try FileManager.default.copyItem(at: try await Fixtures.url(Fixtures.landscape), to: broken)
        let result = try await ReelBinary.run(
            ["submit", broken.path, "--preset", "720p", "--output-dir", spool.outputs.path, "--json"],
            environment: spool.environment)
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])?["id"] as? String)
        try Data("not a video".utf8).write(to: broken)
        let worker = try ReelBinary.start(["work", "--drain"], environment: spool.environment)
        try await worker.exit()
        let status = try #require(spool.status(id))
        #expect(status.state == .failed && status.attempts == 1)
        #expect(status.error?.code == JobError.Code(.unreadableInput) && status.error?.retryable == false)
        #expect(spool.outputFiles().isEmpty)
    }

    @Test func manifestWithABadLineQueuesNothing() async throws {
        let spool = Spool()
        let source = try await Fixtures.url(Fixtures.landscape).path
        let manifest = spool.outputs.appendingPathComponent("jobs.jsonl")
        try """
        {"asset": "\(source)", "preset": "LowQuality"}
        {"asset": "\(source)", "preset": "NoSuchPreset"}

        {"asset": "/nonexistent.mp4", "preset": "LowQuality"}
        {"asset": "\(source)", "preset": "LowQuality", "priority": "high"}
        """.write(to: manifest, atomically: true, encoding: .utf8)
        let rejected = try await ReelBinary.run(
            ["submit", "--manifest", manifest.path], environment: spool.environment)
        #expect(rejected.status != 0)
        #expect(
            rejected.stderr.hasPrefix("reel: error: ") && rejected.stderr.contains("line 2")
                && rejected.stderr.contains("line 4")
                && rejected.stderr.contains("line 5") && !rejected.stderr.contains("line 1:"))
        #expect(spool.store.all().isEmpty)
        let good =
            "{\"asset\": \"\(source)\", \"preset\": \"LowQuality\", \"priority\": 3}\n{\"asset\": \"\(source)\", \"preset\": \"medium\", \"key\": \"k1\"}\n"
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--output-dir", spool.outputs.path, "--json"], environment: spool.environment,
            input: Data(good.utf8))
        let lines = piped.stdout.split(separator: "\n")
        #expect(piped.status == 0 && lines.count == 2)
        #expect(lines.allSatisfy { $0.contains("\"statusFile\"") })
        #expect(spool.store.all().count == 2)
    }
}

/// SIGTERM/SIGINT/SIGHUP: the first stops claiming and lets the running job finish; a second hands it back.
@Suite("Worker shutdown", .tags(.process, .media), .serialized, .timeLimit(.minutes(5)))
struct WorkerShutdownTests {
    /// SIGHUP (the worker's terminal or SSH session closed) is SIGTERM: the same drain, the same log line.
    @Test(arguments: ["--isolate", "--no-isolate"], [SIGTERM, SIGHUP])
    func oneSignalFinishesTheRunningJobAndClaimsNoMore(_ mode: String, _ signal: Int32) async throws {
        let spool = WorkerProcessTests.Spool()
        let first = try await spool.submit(
            Fixtures.long, preset: "MediumQuality",
            extra: ["--time-range", "0-8", "--force-transcode", "--priority", "1"])
        let second = try await spool.submit(
            Fixtures.long, preset: "MediumQuality", extra: ["--time-range", "0-8", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        #expect(await spool.waitFor(first) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        worker.signal(signal)
        let ended = try await worker.exit()
        #expect(ended.reason == .exit && ended.status == 0, "\(worker.output)")
        #expect(worker.output.contains("stopping: finishing running jobs"), "\(worker.output)")
        #expect(spool.status(first)?.state == .completed && spool.status(first)?.attempts == 1)
        #expect(spool.status(second)?.state == .waiting && spool.status(second)?.attempts == 0)
    }

    /// The worker's terminal really closed (its pseudo-terminal hung up): the same drain as SIGTERM,
    /// although nothing more can be written to that terminal.
    @Test func aClosedTerminalFinishesTheRunningJobAndClaimsNoMore() async throws {
        let spool = WorkerProcessTests.Spool()
        let first = try await spool.submit(
            Fixtures.long, preset: "MediumQuality",
            extra: ["--time-range", "0-8", "--force-transcode", "--priority", "1"])
        let second = try await spool.submit(
            Fixtures.long, preset: "MediumQuality", extra: ["--time-range", "0-8", "--force-transcode"])
        let terminal = try Terminal(ReelBinary.path, ["work", "--jobs", "1"], environment: spool.environment)
        #expect(await spool.waitFor(first) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        try terminal.hangUp()
        let ended = try await terminal.ended()
        #expect(ended == "exited 0", "\(ended); the terminal showed: \(terminal.screen.suffix(600))")
        #expect(spool.status(first)?.state == .completed && spool.status(first)?.attempts == 1)
        #expect(spool.status(second)?.state == .waiting && spool.status(second)?.attempts == 0)
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func aSecondSignalHandsTheRunningJobBack(_ mode: String) async throws {
        let spool = WorkerProcessTests.Spool()
        let id = try await spool.submit(Fixtures.long, preset: "HighestQuality", extra: ["--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        #expect(await spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        worker.signal(SIGTERM)
        // The second signal must arrive after the first was handled (not coalesced with it).
        #expect(await eventually { worker.output.contains("stopping") ? true : nil } != nil)
        worker.signal(SIGINT)
        let ended = try await worker.exit()
        #expect(ended.reason == .exit && ended.status == 0)
        let status = try #require(spool.status(id))
        #expect(status.state == .waiting && status.attempts == 0, "\(status.state) after \(status.attempts)")
        #expect(spool.outputFiles().isEmpty, "left: \(spool.outputFiles())")
    }
}
