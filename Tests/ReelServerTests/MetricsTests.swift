import Foundation
import TestSupport
import Testing

/// `reel work --metrics-port`: the Prometheus text scraped over real HTTP and parsed; health and
/// readiness as the store comes and goes and the worker drains.
@Suite("Worker HTTP side", .tags(.media), .serialized, .timeLimit(.minutes(5)))
struct MetricsTests {
    @Test func metricsCountTheJobsRun() async throws {
        // Everything is queued before the worker starts.
        let queue = Queue()
        let landscape = try await Fixtures.url(Fixtures.landscape).path
        let transcoded = [
            try await queue.submit(landscape, preset: "AVAssetExportPresetLowQuality", extra: ["--force-transcode"]),
            try await queue.submit(landscape, preset: "low", extra: ["--force-transcode", "--metadata", "strip"]),
        ]
        let copied = try await queue.submit(landscape, preset: "Passthrough")
        let failed = try await queue.submitVanishing(preset: "960x540")
        let worker = try await ServedWorker.start(queue: queue, ["--jobs", "1"])
        defer { Task { await worker.stop() } }
        let all = transcoded + [copied, failed]
        let ended = await eventually(within: .seconds(120)) {
            all.allSatisfy { ["completed", "failed"].contains(worker.state($0)) } ? true : nil
        }
        #expect(ended == true, "worker log:\n\(worker.process.output)")
        #expect(transcoded.allSatisfy { worker.state($0) == "completed" } && worker.state(copied) == "completed")
        #expect(worker.state(failed) == "failed")

        // The queue gauges follow within the stats interval.
        var samples: [Sample] = []
        _ = await eventually(within: .seconds(10)) { () -> Bool? in
            guard let scrape = try? await worker.get("/metrics"), scrape.status == 200,
                let parsed = try? PrometheusText.parse(scrape.body)
            else { return nil }
            samples = parsed
            let settled =
                parsed.value("reel_jobs", ["state": "completed"]) == 3
                && parsed.value("reel_jobs", ["state": "failed"]) == 1
            return settled ? true : nil
        }
        #expect(samples.value("reel_jobs", ["state": "completed"]) == 3)
        #expect(samples.value("reel_jobs", ["state": "failed"]) == 1)
        #expect(samples.value("reel_jobs", ["state": "waiting"]) == 0)
        #expect(samples.value("reel_jobs", ["state": "exporting"]) == 0)
        #expect(samples.value("reel_store_up") == 1)

        // Attempts by preset (aliases resolved to the canonical name) and outcome.
        #expect(samples.value("reel_jobs_started_total", ["preset": "LowQuality"]) == 2)
        #expect(samples.value("reel_jobs_started_total", ["preset": "Passthrough"]) == 1)
        #expect(samples.value("reel_jobs_started_total", ["preset": "960x540"]) == 1)
        #expect(samples.value("reel_jobs_completed_total", ["preset": "LowQuality", "method": "transcode"]) == 2)
        #expect(samples.value("reel_jobs_completed_total", ["preset": "Passthrough", "method": "passthrough"]) == 1)
        #expect(samples.value("reel_jobs_failed_total", ["preset": "960x540", "code": "unreadable-input"]) == 1)
        #expect(samples.family("reel_jobs_failed_total").count == 1)

        // Histograms: counts match the jobs, buckets never decrease, +Inf holds them all.
        for (name, preset, count) in [
            ("reel_export_duration_seconds", "LowQuality", 2.0), ("reel_export_realtime_factor", "LowQuality", 2),
            ("reel_export_duration_seconds", "Passthrough", 1), ("reel_queue_wait_seconds", "LowQuality", 2),
            ("reel_queue_wait_seconds", "960x540", 1),
        ] {
            #expect(samples.value("\(name)_count", ["preset": preset]) == count, "\(name) \(preset)")
            let buckets = samples.family("\(name)_bucket", matching: ["preset": preset])
                .map { (bound: Double($0.labels["le"] ?? "") ?? .infinity, count: $0.value) }
                .sorted { $0.bound < $1.bound }
            #expect(buckets.count > 3 && buckets.last?.bound == .infinity && buckets.last?.count == count)
            #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.count <= $1.count }, "\(name): \(buckets)")
            #expect((samples.value("\(name)_sum", ["preset": preset]) ?? 0) > 0)
        }
        #expect(samples.family("reel_job_attempts_count").map(\.value).reduce(0, +) == 4)
        #expect(samples.value("reel_job_attempts_count", ["outcome": "failed"]) == 1)

        // Bytes and media seconds match what the status files report.
        let results = transcoded.compactMap { worker.status($0)?["result"] as? [String: Any] }
        let bytes = results.compactMap { ($0["bytes"] as? NSNumber)?.doubleValue }.reduce(0, +)
        let media = results.compactMap { $0["durationSeconds"] as? Double }.reduce(0, +)
        let onDisk = try transcoded.map { id -> Double in
            let output = try #require(worker.status(id)?["output"] as? String)
            return Double(try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int ?? -1)
        }.reduce(0, +)
        #expect(results.count == 2 && bytes == onDisk)
        #expect(samples.value("reel_output_bytes_total", ["preset": "LowQuality"]) == bytes)
        #expect(abs((samples.value("reel_export_media_seconds_total", ["preset": "LowQuality"]) ?? 0) - media) < 1e-6)

        #expect(samples.value("reel_worker_slots") == 1)
        #expect(samples.value("reel_worker_slots_busy") == 0)
        let build = samples.family("reel_build_info")
        let version = try Changelog.version()
        #expect(build.count == 1 && build.first?.labels["version"] == version && build.first?.value == 1)
        let commit = build.first?.labels["commit"] ?? ""
        #expect(commit.count >= 7, "commit label: \(commit)")

        // The JSON the status page reads agrees.
        let report = try await worker.get("/status.json")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [String: Any])
        let presets = try #require(json["presets"] as? [[String: Any]])
        let low = try #require(presets.first { $0["preset"] as? String == "LowQuality" })
        #expect(low["completed"] as? Int == 2 && (low["bytes"] as? NSNumber)?.doubleValue == bytes)
        let failures = try #require(json["recentFailures"] as? [[String: Any]])
        #expect(failures.count == 1 && failures.first?["id"] as? String == failed)
        #expect(failures.first?["code"] as? String == "unreadable-input")
    }

    @Test func readinessFollowsTheStoreAndTheDrainWhileLivenessStays() async throws {
        let systemd = try NotifySocket()
        let worker = try await ServedWorker.start(["--jobs", "1"], environment: ["NOTIFY_SOCKET": systemd.path])
        defer { Task { await worker.stop() } }
        // Readiness goes to systemd too (Type=notify).
        let ready = await systemd.next(within: .seconds(30))
        #expect(ready?.contains("READY=1") == true, "\(ready ?? "nothing")")
        #expect(try await worker.get("/healthz").status == 200)
        #expect(
            await eventually(within: .seconds(10)) {
                (try? await worker.get("/readyz"))?.status == 200 ? true : nil
            }
                == true)

        // The store goes away: not ready, saying why, but alive (liveness is about the process: a
        // restart would not bring the store back); it comes back: ready again.
        let away = worker.spool.deletingLastPathComponent().appendingPathComponent("away-\(UUID().uuidString)")
        try FileManager.default.moveItem(at: worker.spool, to: away)
        let healthAway = try await worker.get("/healthz")
        let readyAway = try await worker.get("/readyz")
        try FileManager.default.moveItem(at: away, to: worker.spool)
        #expect(healthAway.status == 200, "\(healthAway)")
        #expect(readyAway.status == 503 && readyAway.body.contains("store unavailable"), "\(readyAway)")
        #expect(try await worker.get("/healthz").status == 200)
        #expect(try await worker.get("/readyz").status == 200)

        // SIGTERM with a job running: not ready (draining) but healthy until the job is done, then exit 0.
        let long = try await Fixtures.url(Fixtures.long).path
        let id = try await worker.submit(
            long, preset: "MediumQuality", extra: ["--time-range", "0-8", "--force-transcode"])
        #expect(await eventually { worker.state(id) == "exporting" && worker.progress(id) > 0.02 ? true : nil } == true)
        worker.process.signal(SIGTERM)
        let stopping = await systemd.next(within: .seconds(30))
        #expect(stopping?.contains("STOPPING=1") == true, "\(stopping ?? "nothing")")
        let draining = await eventually(within: .seconds(10)) { () -> String? in
            guard let ready = try? await worker.get("/readyz"), ready.status == 503 else { return nil }
            return ready.body
        }
        #expect(draining?.contains("draining") == true, "\(draining ?? "still ready")")
        if worker.state(id) == "exporting" { #expect(try await worker.get("/healthz").status == 200) }
        let exit = try await worker.process.exit(within: .seconds(120))
        #expect(exit.reason == .exit && exit.status == 0)
        #expect(worker.state(id) == "completed")
    }
}
