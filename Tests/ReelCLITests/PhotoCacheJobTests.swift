import Foundation
import TestSupport
import Testing

/// Caching as queue jobs (`reel library cache --submit`, a manifest's `cache` object): batches run by
/// two workers at once into one derivative store, photos done of the total in each status file, a
/// damaged photo reported with its reason without stopping the rest, nothing made twice, the tiers'
/// sizes by ffprobe; `--stop` cancels what is queued; a bad `cache` line is refused in one line.
@Suite("Cache jobs", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PhotoCacheJobTests {
    /// A status file, as a poller reads it.
    static func status(_ spool: URL, _ id: String) throws -> [String: Any] {
        let data = try Data(contentsOf: spool.appendingPathComponent("status/\(id).json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func submitted(_ result: ToolResult) throws -> [String] {
        try PhotoCacheTests.jsonLines(result.stdout).map { try #require($0["id"] as? String, "\($0)") }
    }

    @Test func batchesRunByTwoWorkersFillOneStoreWithEveryPhotoOnce() async throws {
        let (folder, library) = try await PhotoCacheTests.library("cache-jobs", count: 3, damaged: true, heic: true)
        let spool = folder.appendingPathComponent("spool")
        let environment = library.merging(["REEL_SPOOL": spool.path]) { $1 }
        let submit = try await ReelBinary.run(
            ["library", "cache", "--submit", "--batch", "2", "--json"], environment: environment)
        #expect(submit.status == 0, "\(submit.stderr)")
        let ids = try Self.submitted(submit)
        // Three JPEGs (one damaged), the HEIC and the clip: five assets in batches of two.
        #expect(ids.count == 3)
        #expect(
            try PhotoCacheTests.jsonLines(submit.stdout).allSatisfy {
                ($0["output"] as? String)?.contains("library.derivatives/jobs/j") == true
            })

        // Two workers at once, one running jobs in its own process and one isolating exports.
        let workers = try ["--no-isolate", "--isolate"].map {
            try ReelBinary.start(["work", "--drain", "--jobs", "1", $0], environment: environment)
        }
        for worker in workers {
            #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        }
        var totals = (total: 0, made: 0, cached: 0, failed: 0)
        var problems: [String] = []
        for id in ids {
            let status = try Self.status(spool, id)
            #expect(status["state"] as? String == "completed" && status["attempts"] as? Int == 1, "\(status)")
            #expect(status["outputType"] as? String == "cache" && status["preset"] as? String == "cache")
            let items = try #require(status["items"] as? [String: Int], "\(status)")
            let result = try #require(status["result"] as? [String: Any])
            let cache = try #require(result["cache"] as? [String: Any])
            #expect(items["done"] == items["total"] && items["total"] == cache["total"] as? Int, "\(status)")
            totals.total += cache["total"] as? Int ?? 0
            totals.made += cache["made"] as? Int ?? 0
            totals.cached += cache["cached"] as? Int ?? 0
            totals.failed += cache["failed"] as? Int ?? 0
            problems += (cache["problems"] as? [[String: String]] ?? []).compactMap { $0["reason"] }
            // The job's report is its output, written whole.
            let report = try Data(contentsOf: URL(fileURLWithPath: try #require(status["output"] as? String)))
            let written = try #require(try JSONSerialization.jsonObject(with: report) as? [String: Any])
            #expect(
                written["made"] as? Int == cache["made"] as? Int && written["total"] as? Int == cache["total"] as? Int)
        }
        #expect(totals.total == 5 && totals.made == 4 && totals.failed == 1 && totals.cached == 0, "\(totals)")
        #expect(problems.count == 1 && problems[0].contains("IMG_0002.jpg"), "\(problems)")

        // One thumbnail and one preview per decodable photo or video, at the tiers' sizes (ffprobe).
        let files = PhotoCacheTests.storeFiles(folder)
        let thumbnails = files.filter { $0.hasPrefix("thumbnail/") && $0.hasSuffix(".webp") }
        #expect(thumbnails.count == 4 && files.filter { $0.hasPrefix("preview/") }.count == 4, "\(files)")
        #expect(!files.contains { $0.hasSuffix(".partial") })
        let store = folder.appendingPathComponent("library.derivatives")
        for file in thumbnails {
            let probed = try #require(try await ProbedFile.probe(store.appendingPathComponent(file)).video)
            #expect(min(probed.width ?? 0, probed.height ?? 0) == 250, "\(file)")
        }

        // Queued again: every picture is already cached (the damaged one from its record).
        let again = try Self.submitted(
            try await ReelBinary.run(["library", "cache", "--submit", "--json"], environment: environment))
        #expect(again.count == 1)
        let worker = try ReelBinary.start(["work", "--drain"], environment: environment)
        #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        let cache = try #require(
            (try Self.status(spool, again[0])["result"] as? [String: Any])?["cache"] as? [String: Any])
        #expect(cache["made"] as? Int == 0 && cache["cached"] as? Int == 4 && cache["failed"] as? Int == 1, "\(cache)")
        #expect(PhotoCacheTests.storeFiles(folder) == files)
    }

    /// `reel library cache --stop` (stopCachingImages) cancels the store's queued cache jobs, and
    /// only those.
    @Test func stopCancelsTheQueuedCacheJobsOfItsStore() async throws {
        let (folder, library) = try await PhotoCacheTests.library("cache-jobs-stop", count: 2, clip: false)
        let spool = folder.appendingPathComponent("spool")
        let environment = library.merging(["REEL_SPOOL": spool.path]) { $1 }
        let ids = try Self.submitted(
            try await ReelBinary.run(
                ["library", "cache", "--submit", "--batch", "1", "--json"], environment: environment))
        #expect(ids.count == 2)
        let other = try Self.submitted(
            try await ReelBinary.run(
                [
                    "library", "cache", "--submit", "--json", "--cache-folder",
                    folder.appendingPathComponent("other").path,
                ],
                environment: environment))
        let stop = try await ReelBinary.run(["library", "cache", "--stop"], environment: environment)
        #expect(
            stop.status == 0 && stop.stdout.contains("cancelled 2 queued cache jobs"), "\(stop.stdout)\(stop.stderr)")
        for id in ids { #expect(try Self.status(spool, id)["state"] as? String == "cancelled") }
        #expect(try Self.status(spool, other[0])["state"] as? String == "waiting")
        #expect(PhotoCacheTests.storeFiles(folder).isEmpty)
    }

    /// A manifest's `cache` line queues a job (its store folder made standard); what
    /// a worker could not run is refused in one line, and nothing is queued.
    @Test(arguments: [
        (#"{"cache": {"assets": ["A/L0/001"]}}"#, "a cache job needs cache.cacheFolder"),
        (#"{"cache": {"assets": ["A/L0/001"], "cacheFolder": "c", "sizes": ["huge"]}}"#, "unknown tier 'huge'"),
        (#"{"cache": {"assets": [], "cacheFolder": "c"}}"#, "a cache job names no assets"),
        (
            #"{"cache": {"assets": ["A/L0/001"], "cacheFolder": "c"}, "preset": "1280x720"}"#,
            "takes none of the export's options"
        ),
        (#"{"cache": {"assets": ["A/L0/001"], "cacheFolder": "c", "size": "250"}}"#, "unknown key 'cache.size'"),
    ])
    func aManifestCacheLine(_ line: String, _ refusal: String) async throws {
        let folder = Fixtures.scratchFolder("cache-manifest")
        let environment = ["REEL_SPOOL": folder.appendingPathComponent("spool").path]
        let line = line.replacingOccurrences(of: #""c""#, with: #""\#(folder.path)/c""#)
        let refused = try await ReelBinary.run(
            ["submit", "--manifest", "-"], environment: environment, input: Data(line.utf8))
        #expect(refused.status == 64, "\(refused.stderr)")
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(refusal), "\(refused.stderr)")
        let good =
            #"{"cache": {"assets": ["A/L0/001", "B/L0/001"], "cacheFolder": "\#(folder.path)/c/", "sizes": ["Thumbnail"]}, "priority": 4}"#
        let queued = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: environment, input: Data(good.utf8))
        #expect(queued.status == 0, "\(queued.stderr)")
        let id = try #require(try Self.submitted(queued).first)
        let status = try Self.status(folder.appendingPathComponent("spool"), id)
        let spec = try #require(status["spec"] as? [String: Any])
        let cache = try #require(spec["cache"] as? [String: Any])
        let store = folder.appendingPathComponent("c").standardizedFileURL.path
        #expect(cache["cacheFolder"] as? String == store && cache["sizes"] as? [String] == ["thumbnail"])
        #expect(status["output"] as? String == "\(store)/jobs/\(id).json" && status["priority"] as? Int == 4)
    }

    /// A cache job whose decoding stops (its threads held still, as a hung decoder holds them) fails
    /// as `stalled` after the worker's stall timeout, in one line, in the worker's process and in an
    /// isolated one; the threads are held well past the timeout (8 s against 2 s).
    @Test(arguments: ["--no-isolate", "--isolate"])
    func aCacheJobWhoseDecodingStopsFailsAsStalled(_ mode: String) async throws {
        let (folder, library) = try await PhotoCacheTests.library("cache-jobs-stall", count: 6, clip: false)
        let spool = folder.appendingPathComponent("spool")
        let environment = library.merging(["REEL_SPOOL": spool.path]) { $1 }
        let ids = try Self.submitted(
            try await ReelBinary.run(
                ["library", "cache", "--submit", "--max-attempts", "1", "--json"], environment: environment))
        let worker = try ReelBinary.start(
            ["work", "--drain", "--jobs", "1", "--stall-timeout", "2", mode], environment: environment)
        let froze = try await ThreadFreezer.freeze(
            threadsNamed: "reel-cache", in: worker.pid, for: 8, waiting: 120, timeLimit: .seconds(180))
        try #require(froze.status == 0 && froze.stdout.contains("froze"), "\(froze.stdout)\(froze.stderr)")
        #expect(try await worker.exit(within: .seconds(120)).status == 0, "\(worker.output.suffix(2000))")
        let status = try Self.status(spool, try #require(ids.first))
        let error = try #require(status["error"] as? [String: Any], "\(status)")
        #expect(status["state"] as? String == "failed" && error["code"] as? String == "stalled", "\(status)")
        let message = error["message"] as? String ?? ""
        #expect(message.contains("no progress for 2 s") && !message.contains("\n"), "\(message)")
    }

    /// The worker's input limits apply to a cache job's files, whatever the library's were at its scan,
    /// in the worker's process and in an isolated one: a file outside its allowed roots is skipped with
    /// the reason, a photo over its pixel limit fails without being decoded.
    @Test(arguments: ["--no-isolate", "--isolate"])
    func theWorkersInputLimitsApply(_ mode: String) async throws {
        // Two 2000x1500 JPEGs (3 MP) and a 1200x1600 HEIC (1.9 MP).
        let (folder, library) = try await PhotoCacheTests.library(
            "cache-jobs-limits", count: 2, heic: true, clip: false)
        let spool = folder.appendingPathComponent("spool")
        let environment = library.merging(["REEL_SPOOL": spool.path]) { $1 }
        func round(_ limits: [String]) async throws -> [String: Any] {
            let ids = try Self.submitted(
                try await ReelBinary.run(["library", "cache", "--submit", "--json"], environment: environment))
            let worker = try ReelBinary.start(["work", "--drain", mode] + limits, environment: environment)
            #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
            let status = try Self.status(spool, try #require(ids.first))
            #expect(status["state"] as? String == "completed", "\(status)")
            return try #require((status["result"] as? [String: Any])?["cache"] as? [String: Any], "\(status)")
        }
        let elsewhere = folder.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let outside = try await round(["--allow-root", elsewhere.path])
        let reasons = (outside["problems"] as? [[String: String]] ?? []).compactMap { $0["reason"] }
        #expect(outside["skipped"] as? Int == 3 && outside["made"] as? Int == 0, "\(outside)")
        #expect(reasons.count == 3 && reasons.allSatisfy { $0.contains("allowed") }, "\(reasons)")
        let large = try await round(["--max-megapixels", "2"])
        #expect(large["made"] as? Int == 1 && large["failed"] as? Int == 2, "\(large)")
        let failures = (large["problems"] as? [[String: String]] ?? []).compactMap { $0["reason"] }
        #expect(failures.count == 2 && failures.allSatisfy { $0.contains("IMG_000") }, "\(failures)")
        #expect(PhotoCacheTests.storeFiles(folder).filter { $0.hasPrefix("thumbnail/") }.count == 1)
    }

}
