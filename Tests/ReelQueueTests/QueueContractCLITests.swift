import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// The queue's contract as a client meets it through the command line.
@Suite("Queue contract through the CLI", .tags(.process, .media), .serialized, .timeLimit(.minutes(5)))
struct QueueContractCLITests {
    typealias Spool = WorkerProcessTests.Spool

    @Test(arguments: ["status", "list", "wait", "cancel", "retry", "prune"])
    func readingCommandsRefuseAMissingSpool(_ command: String) async throws {
        let missing = Fixtures.scratchFolder("no-spool").appendingPathComponent("spool")
        var arguments = [command]
        if ["status", "wait", "cancel", "retry"].contains(command) { arguments.append("j0000000000000abcd") }
        if command == "prune" { arguments += ["--older-than", "1d"] }
        let result = try await ReelBinary.run(arguments, environment: ["REEL_SPOOL": missing.path])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("reel: error: there is no spool at \(missing.path)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test func keysAndOutputsCannotLie() async throws {
        let spool = Spool()
        let asset = try await Fixtures.url(Fixtures.landscape).path
        let target = spool.outputs.appendingPathComponent("one.mp4").path
        func submit(_ extra: [String]) async throws -> ToolResult {
            try await ReelBinary.run(["submit", asset, "--json"] + extra, environment: spool.environment)
        }
        let first = try await submit(["--preset", "LowQuality", "-o", target, "--key", "k1"])
        #expect(first.status == 0, "\(first.stderr)")
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])?["id"] as? String)
        // The same request under the same key: the same job.
        let same = try await submit(["--preset", "LowQuality", "-o", target, "--key", "k1"])
        #expect(same.status == 0 && same.stdout.contains(id))
        // Another preset under the same key: refused, naming the job and the field.
        let conflict = try await submit(["--preset", "640x480", "-o", target, "--key", "k1"])
        #expect(conflict.status != 0)
        #expect(conflict.stderr.hasPrefix("reel: error: ") && conflict.stderr.contains(id))
        #expect(conflict.stderr.contains("preset"), "\(conflict.stderr)")
        // Another job into the same file while the first waits: refused, naming the first.
        let duplicate = try await submit(["--preset", "640x480", "-o", target])
        #expect(duplicate.status != 0 && duplicate.stderr.contains(id), "\(duplicate.stderr)")
        #expect(spool.store.all().count == 1)
    }

    @Test func pruneDeletesFinishedJobsByAgeAndState() async throws {
        let spool = Spool()
        let kept = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        let gone = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        #expect(try await ReelBinary.run(["cancel", gone], environment: spool.environment).status == 0)
        let young = try await ReelBinary.run(["prune", "--older-than", "1h"], environment: spool.environment)
        #expect(young.status == 0 && young.stdout.contains("pruned 0 jobs"), "\(young.stdout)")
        // Cancelled a moment ago: older than 0 s, and only cancelled jobs go.
        let pruned = try await ReelBinary.run(
            ["prune", "--older-than", "0s", "--state", "cancelled"], environment: spool.environment)
        #expect(pruned.status == 0 && pruned.stdout.contains("pruned 1 job"), "\(pruned.stdout)")
        #expect(spool.status(gone) == nil && spool.status(kept)?.state == .waiting)
        let status = try await ReelBinary.run(["status", gone], environment: spool.environment)
        #expect(status.status != 0 && status.stderr.contains("no job \(gone)"))
    }

    /// `reel work --keep-finished <age>` prunes by itself: a job that ended before the age goes, a recent
    /// one stays (the old one is dated back, not waited for); an age it cannot read is a usage error.
    @Test func workKeepFinishedPrunesOldFinishedJobs() async throws {
        let spool = Spool()
        let old = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        let recent = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        let cancelled = try await ReelBinary.run(["cancel", old, recent], environment: spool.environment)
        #expect(cancelled.status == 0, "\(cancelled.stderr)")
        var aged = try #require(spool.status(old))
        aged.finishedAt = Date(timeIntervalSinceNow: -2 * 86400)
        aged.updatedAt = aged.finishedAt!
        try spool.store.writeStatus(aged)
        let bad = try await ReelBinary.run(
            ["work", "--drain", "--keep-finished", "2x"], environment: spool.environment)
        #expect(bad.status == 64 && bad.stderr.contains("cannot read the age '2x'"), "\(bad.stderr)")
        #expect(spool.status(old) != nil)
        // A draining worker prunes once at start, finds nothing to run and exits.
        let worker = try await ReelBinary.run(
            ["work", "--drain", "--no-isolate", "--keep-finished", "1d"], environment: spool.environment)
        #expect(worker.status == 0, "\(worker.stderr)")
        #expect(spool.status(old) == nil && spool.status(recent)?.state == .cancelled)
    }

    @Test func aKilledWorkersJobShowsOrphanedThenARunningWorkerFinishesIt() async throws {
        let spool = Spool()
        let id = try await spool.submit(
            Fixtures.long, preset: "HighestQuality", extra: ["--time-range", "0-6", "--force-transcode"])
        let doomed = try ReelBinary.start(["work", "--jobs", "1"], environment: spool.environment)
        #expect(await spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        // A second worker already runs; it looks for dead workers' jobs every 10 s.
        let survivor = try ReelBinary.start(
            ["work", "--jobs", "1", "--rescue-interval", "10"], environment: spool.environment)
        _ = await eventually { survivor.output.contains("worker pool started") ? true : nil }
        doomed.signal(SIGKILL)
        try await doomed.exit()
        let shown = try await ReelBinary.run(["status", id, "--json"], environment: spool.environment)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        #expect(json["state"] as? String == "exporting" && json["orphaned"] as? Bool == true, "\(shown.stdout)")
        let table = try await ReelBinary.run(["list"], environment: spool.environment)
        #expect(table.stdout.contains("orphaned"), "\(table.stdout)")
        // Within the survivor's rescue interval the job runs again, without any restart.
        let done = await spool.waitFor(id, seconds: 90) { $0.state == .completed }
        #expect(done?.attempts == 2, "\(survivor.output)")
        #expect(spool.outputFiles().count == 1)
        await survivor.stop()
    }

    @Test func logLinesAreJSONWithTheDocumentedFields() async throws {
        let spool = Spool()
        let good = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        // An asset that disappears after it was queued fails on the worker.
        let doomed = Fixtures.scratchFolder("doomed").appendingPathComponent("gone.mp4")
        try FileManager.default.copyItem(at: try await Fixtures.url(Fixtures.landscape), to: doomed)
        let submitted = try await ReelBinary.run(
            ["submit", doomed.path, "--preset", "LowQuality", "--output-dir", spool.outputs.path, "--json"],
            environment: spool.environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        try FileManager.default.removeItem(at: doomed)
        let worker = try await ReelBinary.run(
            ["work", "--drain", "--jobs", "1", "--log-format", "json"], environment: spool.environment)
        #expect(worker.status == 0)
        let lines = worker.stderr.split(separator: "\n").map(String.init)
        #expect(!lines.isEmpty)
        var events: [[String: Any]] = []
        for line in lines {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            let timestamp = try #require(object["timestamp"] as? String)
            #expect(timestamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(timestamp)")
            #expect(object["level"] is String && object["label"] is String && object["message"] is String)
            events.append(object)
        }
        let failed = try #require(events.first { $0["message"] as? String == "job failed" }, "\(worker.stderr)")
        #expect(failed["level"] as? String == "error")
        let failure = try #require(failed["metadata"] as? [String: Any])
        #expect(failure["code"] as? String == "unreadable-input" && failure["asset"] as? String == doomed.path)
        #expect(failure["message"] is String && failure["output"] is String)
        // Numbers and booleans are JSON's own: `"attempt":1`, not `"1"`.
        #expect(
            failure["elapsed"] is Double && failure["attempt"] as? Int == 1 && failure["retryable"] as? Bool == false)
        let completed = try #require(events.first { $0["message"] as? String == "job completed" })
        let result = try #require(completed["metadata"] as? [String: Any])
        #expect(result["job"] as? String == good && result["method"] as? String == "transcode")
        #expect(result["bytes"] is Int && result["speed"] is Double && result["attempt"] as? Int == 1)
    }

    @Test func aMissingOutputFolderFailsOnceAndIsNotRetried() async throws {
        let spool = Spool()
        let folder = Fixtures.scratchFolder("vanishing")
        let submitted = try await ReelBinary.run(
            [
                "submit", try await Fixtures.url(Fixtures.landscape).path, "--preset", "LowQuality", "--output-dir",
                folder.path, "--json",
            ], environment: spool.environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"] as? String)
        try FileManager.default.removeItem(at: folder)
        let worker = try await ReelBinary.run(["work", "--drain", "--jobs", "1"], environment: spool.environment)
        #expect(worker.status == 0)
        let status = try #require(spool.status(id))
        #expect(status.state == .failed && status.attempts == 1, "\(status.state) after \(status.attempts)")
        #expect(status.error?.code == .outputFailed && status.error?.retryable == false)
    }

    @Test func overwriteReplacesAnExistingOutput() async throws {
        let spool = Spool()
        let target = spool.outputs.appendingPathComponent("taken.mp4")
        try Data("an older file".utf8).write(to: target)
        let asset = try await Fixtures.url(Fixtures.landscape).path
        let refused = try await ReelBinary.run(
            ["submit", asset, "--preset", "LowQuality", "-o", target.path], environment: spool.environment)
        let kept = try await ReelBinary.run(
            ["submit", asset, "--preset", "LowQuality", "-o", target.path, "--overwrite", "--json"],
            environment: spool.environment)
        // Sure to fail without --overwrite: refused at submit (exit 74, nothing queued); with it, queued.
        #expect(refused.status == 74 && refused.stderr.contains("--overwrite"), "\(refused.stderr)")
        #expect(kept.status == 0, "\(kept.stderr)")
        let worker = try await ReelBinary.run(["work", "--drain", "--jobs", "1"], environment: spool.environment)
        #expect(worker.status == 0)
        let probed = try await ProbedFile.probe(target)
        #expect(probed.video?.codec_name == "h264")
        let overwriting = try await spool.store.list(state: nil).filter { $0.spec?.overwrite == true }
        #expect(overwriting.count == 1 && overwriting.first?.state == .completed, "\(overwriting)")
    }
}
