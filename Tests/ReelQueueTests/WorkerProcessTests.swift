import Foundation
import ReelExport
import Synchronization
import TestSupport
import Testing

@testable import ReelQueue

/// Real `reel` processes against one spool: submitters, workers, kills and pollers.
@Suite("Workers in processes", .serialized)
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

        func submit(_ recipe: Fixtures.Recipe, preset: String, extra: [String] = []) throws -> String {
            let result = try ReelBinary.run(
                ["submit", try Fixtures.url(recipe).path, "--preset", preset, "--output-dir", outputs.path, "--json"]
                    + extra,
                environment: environment)
            guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            guard let id = json?["id"] as? String else { throw ToolFailure(message: "no id in \(result.stdout)") }
            return id
        }

        func status(_ id: String) -> JobStatus? { try? store.status(id) }

        /// Waits until `predicate` holds for the job's status (polling its status file).
        func waitFor(_ id: String, seconds: Double = 60, _ predicate: (JobStatus) -> Bool) -> JobStatus? {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let status = status(id), predicate(status) { return status }
                usleep(50_000)
            }
            return nil
        }

        func outputFiles() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: outputs.path)) ?? []).sorted()
        }
    }

    @Test func severalSubmittersAndWorkersRunEveryJobExactlyOnce() throws {
        let spool = Spool()
        let ids = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread {
                for _ in 0..<3 {
                    if let id = try? spool.submit(Fixtures.landscape, preset: "LowQuality") {
                        ids.withLock { $0.append(id) }
                    }
                }
                group.leave()
            }.start()
        }
        group.wait()
        let submitted = ids.withLock { $0 }
        #expect(submitted.count == 12)
        // One in-process worker among isolated ones: both kinds share a spool safely.
        let workers = try ["--isolate", "--no-isolate", "--isolate"].map { mode in
            try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: spool.environment)
        }
        for worker in workers { worker.waitUntilExit() }
        for worker in workers { #expect(worker.terminationStatus == 0) }
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
    func codecThreadsFollowTheQueue(_ mode: String) throws {
        let backlog = Spool()
        let ids = try (0..<3).map { _ in
            try backlog.submit(Fixtures.landscape, preset: "LowQuality", extra: ["--force-transcode"])
        }
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: backlog.environment)
        worker.waitUntilExit()
        #expect(worker.terminationStatus == 0)
        // The first two were claimed with a third still waiting.
        for id in ids.prefix(2) {
            let status = try #require(backlog.status(id))
            #expect(status.state == .completed)
            let output = URL(fileURLWithPath: status.output)
            #expect(try MediaInfoTool.x264Threads(output) == 1, "\(id)")
        }
        guard ProcessInfo.processInfo.activeProcessorCount > 1 else { return }
        let alone = Spool()
        let id = try alone.submit(Fixtures.landscape, preset: "LowQuality", extra: ["--force-transcode"])
        let single = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: alone.environment)
        single.waitUntilExit()
        let status = try #require(alone.status(id))
        #expect(status.state == .completed)
        let output = URL(fileURLWithPath: status.output)
        #expect(try MediaInfoTool.x264Threads(output).map { $0 > 1 } == true)
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func aKilledWorkersJobCompletesOnRestartWithNoPartialOutput(_ mode: String) throws {
        let spool = Spool()
        let id = try spool.submit(
            Fixtures.long, preset: "HighestQuality", extra: ["--time-range", "0-10", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        let running = spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.05 }
        #expect(running != nil)
        kill(worker.processIdentifier, SIGKILL)
        worker.waitUntilExit()
        let output = try #require(spool.status(id)).output
        #expect(!FileManager.default.fileExists(atPath: output), "output appeared although the worker died")
        let restarted = try ReelBinary.start(["work", "--drain", mode], environment: spool.environment)
        restarted.waitUntilExit()
        let status = try #require(spool.status(id))
        #expect(status.state == .completed)
        #expect(status.attempts == 2)
        #expect(
            spool.outputFiles() == [URL(fileURLWithPath: output).lastPathComponent], "leftovers: \(spool.outputFiles())"
        )
        #expect((try ProbedFile.probe(URL(fileURLWithPath: output))).video?.codec_name == "h264")
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func cancelStopsARunningJobWithinASecondAndLeavesNothing(_ mode: String) throws {
        let spool = Spool()
        let id = try spool.submit(Fixtures.long, preset: "HighestQuality", extra: ["--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        defer {
            worker.terminate()
            worker.waitUntilExit()
        }
        #expect(spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        let asked = Date()
        let result = try ReelBinary.run(["cancel", id], environment: spool.environment)
        #expect(result.status == 0)
        let cancelled = spool.waitFor(id, seconds: 5) { $0.state == .cancelled }
        #expect(cancelled != nil)
        #expect(Date().timeIntervalSince(asked) < 1.5)
        #expect(spool.outputFiles().isEmpty, "left: \(spool.outputFiles())")
        let wait = try ReelBinary.run(["wait", id], environment: spool.environment)
        #expect(wait.status != 0)
    }

    @Test func aPollerNeverSeesATornStatusFile() throws {
        let spool = Spool()
        let ids = try (0..<3).map { _ in try spool.submit(Fixtures.landscape, preset: "960x540") }
        let stop = Mutex(false)
        let reads = Mutex((good: 0, torn: 0))
        let poller = Thread {
            while !stop.withLock({ $0 }) {
                for id in ids {
                    guard let data = FileManager.default.contents(atPath: spool.store.statusFile(id)) else { continue }
                    let ok = (try? SpoolStore.decoder.decode(JobStatus.self, from: data)) != nil
                    reads.withLock { ok ? ($0.good += 1) : ($0.torn += 1) }
                }
            }
        }
        poller.start()
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2"], environment: spool.environment)
        worker.waitUntilExit()
        stop.withLock { $0 = true }
        let counted = reads.withLock { $0 }
        #expect(counted.torn == 0)
        #expect(counted.good > 100)
        #expect(ids.allSatisfy { spool.status($0)?.state == .completed })
    }

    @Test func restartRepairsASpoolWithJobsInEveryState() throws {
        let spool = Spool()
        let store = spool.store
        func spec(_ name: String) throws -> JobSpec {
            JobSpec(
                asset: try Fixtures.url(Fixtures.landscape).path, preset: "LowQuality", outputType: .mp4,
                output: spool.outputs.appendingPathComponent("\(name).mp4").path)
        }
        let completed = try store.submit(try spec("completed")).status.id
        try store.finish(try #require(try store.claim(worker: "old")), .completed(JobResult.empty))
        let failed = try store.submit(try spec("failed")).status.id
        try store.finish(
            try #require(try store.claim(worker: "old")),
            .failed(JobError(code: "unreadable-input", message: "bad", retryable: false)))
        let cancelled = try store.submit(try spec("cancelled")).status.id
        _ = try store.cancel(cancelled)
        let orphan = try store.submit(try spec("orphan")).status.id
        let dead = try #require(try store.claim(worker: "crashed"))
        // An interrupted export's temporary file, as a killed worker leaves it.
        try Data("partial".utf8).write(to: spool.outputs.appendingPathComponent(".orphan.mp4.reel-1234abcd.partial"))
        dead.lock.release()
        let delayed = try store.submit(try spec("delayed")).status.id
        let retrying = try #require(try store.claim(worker: "old"))
        #expect(retrying.id == delayed)
        try store.finish(retrying, .failed(JobError(code: "no-space", message: "full", retryable: true)))
        let waiting = try store.submit(try spec("waiting")).status.id
        #expect(try store.status(delayed)?.state == .waiting)

        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2"], environment: spool.environment)
        worker.waitUntilExit()
        #expect(worker.terminationStatus == 0)
        #expect(try store.status(completed)?.state == .completed)
        #expect(try store.status(failed)?.state == .failed)
        #expect(try store.status(cancelled)?.state == .cancelled)
        let recovered = try #require(try store.status(orphan))
        #expect(recovered.state == .completed && recovered.attempts == 2)
        #expect(try store.status(waiting)?.state == .completed)
        #expect(try store.status(delayed)?.state == .completed)
        #expect(try store.status(delayed)?.attempts == 2)
        #expect(spool.outputFiles() == ["delayed.mp4", "orphan.mp4", "waiting.mp4"])
    }

    @Test func aNonRetryableFailureFailsOnceWithACode() throws {
        let spool = Spool()
        let broken = Fixtures.scratchFolder("broken").appendingPathComponent("broken.mp4")
        try Data("not a video".utf8).write(to: broken)
        let result = try ReelBinary.run(
            ["submit", broken.path, "--preset", "720p", "--output-dir", spool.outputs.path, "--json"],
            environment: spool.environment)
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])?["id"] as? String)
        let worker = try ReelBinary.start(["work", "--drain"], environment: spool.environment)
        worker.waitUntilExit()
        let status = try #require(spool.status(id))
        #expect(status.state == .failed && status.attempts == 1)
        #expect(status.error?.code == "unreadable-input" && status.error?.retryable == false)
        #expect(spool.outputFiles().isEmpty)
    }

    @Test func manifestWithABadLineQueuesNothing() throws {
        let spool = Spool()
        let source = try Fixtures.url(Fixtures.landscape).path
        let manifest = spool.outputs.appendingPathComponent("jobs.jsonl")
        try """
        {"asset": "\(source)", "preset": "LowQuality"}
        {"asset": "\(source)", "preset": "NoSuchPreset"}

        {"asset": "/nonexistent.mp4", "preset": "LowQuality"}
        {"asset": "\(source)", "preset": "LowQuality", "priority": "high"}
        """.write(to: manifest, atomically: true, encoding: .utf8)
        let rejected = try ReelBinary.run(["submit", "--manifest", manifest.path], environment: spool.environment)
        #expect(rejected.status != 0)
        #expect(
            rejected.stderr.hasPrefix("reel: error: ") && rejected.stderr.contains("line 2")
                && rejected.stderr.contains("line 4")
                && rejected.stderr.contains("line 5") && !rejected.stderr.contains("line 1:"))
        #expect(spool.store.all().isEmpty)
        let good =
            "{\"asset\": \"\(source)\", \"preset\": \"LowQuality\", \"priority\": 3}\n{\"asset\": \"\(source)\", \"preset\": \"medium\", \"key\": \"k1\"}\n"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ReelBinary.path)
        process.arguments = ["submit", "--manifest", "-", "--output-dir", spool.outputs.path, "--json"]
        process.environment = ProcessInfo.processInfo.environment.merging(spool.environment) { $1 }
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(good.utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(
            separator: "\n")
        #expect(process.terminationStatus == 0 && lines.count == 2)
        #expect(lines.allSatisfy { $0.contains("\"statusFile\"") })
        #expect(spool.store.all().count == 2)
    }
}

/// SIGTERM/SIGINT: the first stops claiming and lets the running job finish; a second hands it back.
@Suite("Worker shutdown", .serialized)
struct WorkerShutdownTests {
    @Test(arguments: ["--isolate", "--no-isolate"])
    func oneSignalFinishesTheRunningJobAndClaimsNoMore(_ mode: String) throws {
        let spool = WorkerProcessTests.Spool()
        let first = try spool.submit(
            Fixtures.long, preset: "MediumQuality",
            extra: ["--time-range", "0-8", "--force-transcode", "--priority", "1"])
        let second = try spool.submit(
            Fixtures.long, preset: "MediumQuality", extra: ["--time-range", "0-8", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        #expect(spool.waitFor(first) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        kill(worker.processIdentifier, SIGTERM)
        worker.waitUntilExit()
        #expect(worker.terminationReason == .exit && worker.terminationStatus == 0)
        #expect(spool.status(first)?.state == .completed)
        #expect(spool.status(second)?.state == .waiting && spool.status(second)?.attempts == 0)
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func aSecondSignalHandsTheRunningJobBack(_ mode: String) throws {
        let spool = WorkerProcessTests.Spool()
        let id = try spool.submit(Fixtures.long, preset: "HighestQuality", extra: ["--force-transcode"])
        let worker = try ReelBinary.start(["work", "--jobs", "1", mode], environment: spool.environment)
        #expect(spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        kill(worker.processIdentifier, SIGTERM)
        usleep(300_000)
        kill(worker.processIdentifier, SIGINT)
        worker.waitUntilExit()
        #expect(worker.terminationReason == .exit && worker.terminationStatus == 0)
        let status = try #require(spool.status(id))
        #expect(status.state == .waiting && status.attempts == 0, "\(status.state) after \(status.attempts)")
        #expect(spool.outputFiles().isEmpty, "left: \(spool.outputFiles())")
    }
}
