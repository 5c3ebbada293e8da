import Foundation
import ReelExport
import ReelQueue
import TestSupport
import Testing

/// Real `reel` worker processes sharing one PostgreSQL queue: many jobs, a worker killed, the
/// database stopped, a worker paused past its lease, a worker whose wall clock is wrong.
@Suite(
    "A fleet of worker processes on PostgreSQL", .tags(.process, .media, .postgres), .serialized,
    .timeLimit(.minutes(10)))
struct FleetProcessTests {
    /// One queue (a database) with its status folder and output folder.
    struct Fleet {
        let server: PostgresServer
        let url: String
        let statusFolder: URL
        let outputs: URL
        var database: String { URL(string: url)!.lastPathComponent }
        var environment: [String: String] { ["REEL_STORE": url, "REEL_STATUS_DIR": statusFolder.path] }

        static func make(on server: PostgresServer? = nil) async throws -> Fleet {
            let server = try await Self.server(server)
            let fleet = Fleet(
                server: server, url: try await server.makeDatabase(), statusFolder: Fixtures.scratchFolder("status"),
                outputs: Fixtures.scratchFolder("outputs"))
            let migrated = try await ReelBinary.run(["db", "migrate"], environment: fleet.environment)
            #expect(migrated.status == 0, "\(migrated.stderr)")
            return fleet
        }

        static func server(_ given: PostgresServer?) async throws -> PostgresServer {
            if let given { return given }
            return try await PostgresServer.shared()
        }

        /// Submits jobs through `reel submit --manifest -`; returns their ids.
        func submit(_ recipe: Fixtures.Recipe, preset: String, count: Int = 1, extra: [String: String] = [:])
            async throws -> [String]
        {
            let asset = try await Fixtures.url(recipe).path
            var line: [String: Any] = ["asset": asset, "preset": preset, "outputDir": outputs.path]
            for (key, value) in extra { line[key] = value == "true" ? true : value }
            let text = try String(
                decoding: JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]), as: UTF8.self)
            let manifest = Array(repeating: text, count: count).joined(separator: "\n") + "\n"
            let result = try await ReelBinary.run(
                ["submit", "--manifest", "-", "--json"], environment: environment, input: Data(manifest.utf8))
            guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
            return try result.stdout.split(separator: "\n").map { line in
                let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                guard let id = json?["id"] as? String else { throw ToolFailure(message: "no id in \(line)") }
                return id
            }
        }

        func worker(_ arguments: [String], environment extra: [String: String] = [:]) throws -> BackgroundProcess {
            try ReelBinary.start(["work"] + arguments, environment: environment.merging(extra) { $1 })
        }

        func sql(_ query: String) async throws -> String { try await server.psql(database, query) }

        /// The job's status as `reel status --json` reads it from the database.
        func status(_ id: String) async throws -> JobStatus? {
            let result = try await ReelBinary.run(["status", id, "--json"], environment: environment)
            guard result.status == 0 else { return nil }
            return try JSONCoding.decoder.decode(JobStatus.self, from: Data(result.stdout.utf8))
        }

        /// The job's status file, as a poller on another machine reads it.
        func statusFile(_ id: String) -> JobStatus? {
            FileManager.default.contents(atPath: statusFolder.appendingPathComponent("\(id).json").path).flatMap {
                try? JSONCoding.decoder.decode(JobStatus.self, from: $0)
            }
        }

        func waitFor(_ id: String, seconds: Double = 120, _ predicate: @escaping (JobStatus) -> Bool) async
            -> JobStatus?
        {
            await eventually(within: .seconds(seconds), every: .milliseconds(100)) {
                statusFile(id).flatMap { predicate($0) ? $0 : nil }
            }
        }

        func outputFiles() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: outputs.path)) ?? []).sorted()
        }
    }

    /// The ids of the jobs a worker's log says it completed (one line per completed export).
    static func completed(in log: String) -> [String] {
        log.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("job completed"),
                let range = line.range(of: #"job=j[0-9a-f]+"#, options: .regularExpression)
            else { return nil }
            return String(line[range].dropFirst(4))
        }
    }

    @Test func threeWorkersRunThreeHundredJobsEachExactlyOnce() async throws {
        let fleet = try await Fleet.make()
        let ids = try await fleet.submit(Fixtures.landscape, preset: "Passthrough", count: 300)
        #expect(Set(ids).count == 300)
        let workers = try ["--no-isolate", "--no-isolate", "--isolate"].map { mode in
            try fleet.worker(["--drain", "--jobs", "2", mode])
        }
        for worker in workers { #expect(try await worker.exit(within: .seconds(400)).status == 0, "\(worker.output)") }
        let counts = try await fleet.sql(
            "SELECT count(*) FILTER (WHERE state = 'completed' AND attempts = 1), count(*) FROM reel_jobs")
        #expect(counts == "300|300")
        let runs = workers.flatMap { Self.completed(in: $0.output) }
        #expect(runs.count == 300, "exports run: \(runs.count)")
        #expect(Set(runs) == Set(ids))
        #expect(workers.allSatisfy { !Self.completed(in: $0.output).isEmpty }, "a worker did nothing")
        #expect(fleet.outputFiles().count == 300)
        #expect(fleet.outputFiles().allSatisfy { !$0.hasPrefix(".") })
        for id in ids.prefix(20) { #expect(fleet.statusFile(id)?.state == .completed) }
    }

    @Test func aKilledWorkersJobCompletesOnAnotherAfterItsLeaseWithNoPartialOutput() async throws {
        let fleet = try await Fleet.make()
        let id = try #require(
            try await fleet.submit(
                Fixtures.long, preset: "MediumQuality", extra: ["timeRange": "0-10", "forceTranscode": "true"]
            ).first)
        let doomed = try fleet.worker(["--jobs", "1", "--lease", "3"])
        let running = await fleet.waitFor(id) { $0.state == .exporting && $0.progress > 0.05 }
        #expect(running != nil, "\(doomed.output)")
        let survivor = try fleet.worker(["--jobs", "1", "--lease", "3", "--drain"])
        let killed = Date()
        doomed.signal(SIGKILL)
        try await doomed.exit()
        let output = try #require(running?.output)
        #expect(try await survivor.exit(within: .seconds(300)).status == 0, "\(survivor.output)")
        let status = try #require(try await fleet.status(id))
        #expect(status.state == .completed && status.attempts == 2, "\(status.state) after \(status.attempts)")
        // Rescued within the bound: lease (3 s) + the rescue pass (2 s) + the claim, with slack for a busy machine.
        let restarted = try #require(status.startedAt)
        #expect(
            restarted.timeIntervalSince(killed) < 15,
            "restarted \(restarted.timeIntervalSince(killed)) s after the kill")
        #expect(Self.completed(in: survivor.output) == [id])
        #expect(fleet.outputFiles() == [URL(fileURLWithPath: output).lastPathComponent], "\(fleet.outputFiles())")
        #expect((try await ProbedFile.probe(URL(fileURLWithPath: output))).video?.codec_name == "h264")
    }

    /// With a 15 s lease the running jobs outlive the outage and go on; with a 4 s lease their workers
    /// stop them by their own clocks during it, and they are rescued once the database is back.
    @Test(arguments: [15, 4])
    func stoppingTheDatabaseForTenSecondsLosesAndRepeatsNothing(lease: Int) async throws {
        let server = try await PostgresServer.start(label: "outage")
        defer { server.destroy() }
        let fleet = try await Fleet.make(on: server)
        let ids = try await fleet.submit(
            Fixtures.long, preset: "LowQuality", count: 10, extra: ["timeRange": "0-4", "forceTranscode": "true"])
        let workers = try (0..<2).map { _ in
            try fleet.worker(["--jobs", "1", "--lease", "\(lease)", "--drain", "--no-isolate"])
        }
        // Stop it while jobs run, with some done and some still waiting.
        let midway = await eventually(within: .seconds(180), every: .milliseconds(100)) { () -> Bool? in
            let done = ids.filter { fleet.statusFile($0)?.state == .completed }.count
            let running = ids.filter { fleet.statusFile($0)?.state == .exporting }.count
            return done >= 2 && running >= 1 ? true : nil
        }
        #expect(midway == true)
        try await server.stopServer()
        try await Task.sleep(for: .seconds(10))
        try await server.startServer()
        for worker in workers { #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output)") }
        let states = try await fleet.sql("SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FROM reel_jobs")
        #expect(states == "10|10")
        let runs = workers.flatMap { Self.completed(in: $0.output) }
        #expect(runs.sorted() == ids.sorted(), "each job's export must complete exactly once: \(runs)")
        #expect(fleet.outputFiles().count == 10 && fleet.outputFiles().allSatisfy { !$0.hasPrefix(".") })
        #expect(workers.contains { $0.output.contains("cannot") }, "the outage went unnoticed")
        if lease < 10 {
            // A job caught exporting is stopped by its worker's clock, or, if it finished meanwhile,
            // waits at the publish gate until its lease has expired and is handed back unpublished;
            // either way it runs again after the outage.
            #expect(
                workers.contains {
                    $0.output.contains("stopping a job whose lease has expired")
                        || $0.output.contains("did not confirm a finished job's lease before it expired")
                },
                "no running job was stopped or held back during the outage")
            // Rescued (the attempt counted as a crash), or handed back by its own worker once the
            // database answered (not counted), whichever came first.
            let rerun = try await fleet.sql("SELECT count(*) FROM reel_jobs WHERE attempts > 1")
            let handedBack = workers.contains { $0.output.contains("job handed back") }
            #expect(Int(rerun) ?? 0 >= 1 || handedBack, "no job ran again after the outage")
        } else {
            // An outage shorter than the lease costs nothing: every job completed on its first attempt.
            let rerun = try await fleet.sql("SELECT count(*) FROM reel_jobs WHERE attempts > 1")
            #expect(rerun == "0", "an outage shorter than the lease cost \(rerun) job(s) an attempt")
        }
    }

    /// Isolated, the paused worker's export process runs on and finishes; its output waits at the
    /// publish gate (a fenced renewal) until the worker wakes, finds the lease gone and discards it.
    @Test(arguments: ["--isolate", "--no-isolate"])
    func aWorkerPausedPastItsLeaseDoesNotOverwriteTheRescuersResult(_ mode: String) async throws {
        let fleet = try await Fleet.make()
        let id = try #require(
            try await fleet.submit(
                Fixtures.long, preset: "MediumQuality", extra: ["timeRange": "0-10", "forceTranscode": "true"]
            ).first)
        let paused = try fleet.worker(["--jobs", "1", "--lease", "3", mode])
        let running = await fleet.waitFor(id) { $0.state == .exporting && $0.progress > 0.05 }
        #expect(running != nil, "\(paused.output)")
        paused.signal(SIGSTOP)
        let rescuer = try fleet.worker(["--jobs", "1", "--lease", "3", "--drain", mode])
        #expect(try await rescuer.exit(within: .seconds(300)).status == 0, "\(rescuer.output)")
        let done = try #require(try await fleet.status(id))
        #expect(done.state == .completed && done.attempts == 2)
        let output = done.output
        let published = try Data(contentsOf: URL(fileURLWithPath: output))
        // The paused worker wakes up: its next renewal finds the lease gone, and it stops.
        paused.signal(SIGCONT)
        let noticed = await eventually(within: .seconds(60)) {
            paused.output.contains("lost the job's lease") ? true : nil
        }
        #expect(noticed == true, "\(paused.output)")
        await paused.stop()
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == published, "the stale worker replaced the output")
        let after = try #require(try await fleet.status(id))
        #expect(after.state == .completed && after.attempts == 2 && after.result == done.result)
        #expect(Self.completed(in: paused.output).isEmpty)
        #expect(fleet.outputFiles() == [URL(fileURLWithPath: output).lastPathComponent], "\(fleet.outputFiles())")
    }

    /// One worker's wall clock ten minutes ahead: leases and rescues use the database's clock only, so
    /// neither worker takes the other's job early or keeps one late. (Not behind: under libfaketime
    /// with a negative offset even a plain `Task.sleep` never returns, in any program.)
    @Test func aWorkerWhoseClockIsTenMinutesAheadChangesNothing() async throws {
        let fleet = try await Fleet.make()
        let faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
        try #require(FileManager.default.fileExists(atPath: faketime), "libfaketime is missing (Scripts/setup)")
        let skew = ["LD_PRELOAD": faketime, "FAKETIME": "+10m", "FAKETIME_DONT_FAKE_MONOTONIC": "1"]
        // The skew is real: `date` under the same settings is ten minutes ahead.
        let date = try await Tools.run("/bin/date", ["+%s"], environment: skew)
        let ahead =
            (Double(date.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - Date().timeIntervalSince1970
        #expect(ahead > 590 && ahead < 610, "faketime did not move the clock: \(ahead) s")
        let ids = try await fleet.submit(
            Fixtures.long, preset: "LowQuality", count: 6, extra: ["timeRange": "0-6", "forceTranscode": "true"])
        // The skewed worker starts first and holds a job when the honest one (which rescues every 2 s)
        // joins: a lease computed on the skewed clock would look expired to it, or the other way round.
        let skewed = try fleet.worker(["--jobs", "1", "--lease", "3", "--drain", "--no-isolate"], environment: skew)
        let first = await eventually(within: .seconds(120)) { () -> Bool? in
            ids.contains { fleet.statusFile($0)?.state == .exporting } ? true : nil
        }
        #expect(first == true, "\(skewed.output)")
        let honest = try fleet.worker(["--jobs", "1", "--lease", "3", "--drain", "--no-isolate"])
        for worker in [skewed, honest] {
            #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output)")
        }
        let counts = try await fleet.sql(
            "SELECT count(*) FILTER (WHERE state = 'completed' AND attempts = 1), count(*) FROM reel_jobs")
        #expect(counts == "6|6", "a lease was taken early")
        #expect(!Self.completed(in: skewed.output).isEmpty, "the skewed worker ran nothing")
        #expect(!skewed.output.contains("rescued") && !honest.output.contains("rescued"))
        // Every time a status file shows comes from the database's clock, not the skewed worker's...
        for id in ids {
            let status = try #require(fleet.statusFile(id))
            #expect(abs(status.updatedAt.timeIntervalSinceNow) < 120, "\(id) updated at \(status.updatedAt)")
        }
        // ...while the skewed worker itself lived ten minutes ahead: its log's timestamps say so.
        let stamp = try #require(skewed.output.split(separator: " ").first.map(String.init))
        let logged = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(stamp)
        #expect(abs(logged.timeIntervalSinceNow - 600) < 300, "the worker logged \(stamp)")
    }

    @Test func aCancelReachesARunningJobOnAnotherMachine() async throws {
        let fleet = try await Fleet.make()
        let id = try #require(
            try await fleet.submit(Fixtures.long, preset: "MediumQuality", extra: ["forceTranscode": "true"]).first)
        let worker = try fleet.worker(["--jobs", "1"])
        #expect(await fleet.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil, "\(worker.output)")
        let asked = Date()
        let cancel = try await ReelBinary.run(["cancel", id], environment: fleet.environment)
        #expect(cancel.status == 0 && cancel.stdout.contains("cancelling"), "\(cancel.stdout)\(cancel.stderr)")
        // Reached through the running worker (NOTIFY, or its next renewal a second later), well before
        // the 30 s lease could expire and long before the export could end; the latency itself is a
        // figure of Scripts/bench-fleet, not a wall-clock assertion here.
        let cancelled = await fleet.waitFor(id, seconds: 15) { $0.state == .cancelled }
        #expect(cancelled != nil, "not cancelled \(Date().timeIntervalSince(asked)) s after the request")
        #expect(fleet.outputFiles().isEmpty, "left: \(fleet.outputFiles())")
        let wait = try await ReelBinary.run(["wait", id], environment: fleet.environment)
        #expect(wait.status != 0)
        await worker.stop()
    }
}
