import Foundation
import TestSupport
import Testing

/// Cache jobs in a fleet: the library and the queue in one PostgreSQL database, the derivative store a
/// folder the workers share; two worker processes fill it from batches, each photo once.
@Suite("Cache jobs in a fleet", .tags(.process, .media, .postgres), .timeLimit(.minutes(10)))
struct FleetCacheJobTests {
    @Test func twoWorkersFillOneLibrarysCacheFromItsQueue() async throws {
        let fleet = try await FleetProcessTests.Fleet.make()
        let folder = Fixtures.scratchFolder("fleet-cache")
        let photos = folder.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
        for index in 0..<5 {
            try await Tools.ffmpeg([
                "-f", "lavfi", "-i", "testsrc2=s=1600x1200", "-vf", "hue=h=\(index * 40)", "-frames:v", "1",
                photos.appendingPathComponent("IMG_\(index).jpg").path,
            ])
        }
        let store = folder.appendingPathComponent("derivatives")
        let environment = fleet.environment.merging(["REEL_LIBRARY_CACHE": store.path]) { $1 }
        // The library is in the queue's database (no REEL_LIBRARY): every worker reads the same one.
        let scan = try await ReelBinary.run(["library", "scan", photos.path], environment: environment)
        try #require(scan.status == 0, "\(scan.stderr)")
        let submit = try await ReelBinary.run(
            ["library", "cache", "--submit", "--batch", "2", "--sizes", "thumbnail", "--json"],
            environment: environment)
        try #require(submit.status == 0, "\(submit.stderr)")
        let ids = try submit.stdout.split(separator: "\n").map { line in
            try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? String)
        }
        #expect(ids.count == 3)
        let workers = try (0..<2).map { _ in
            try fleet.worker(["--drain", "--jobs", "1"], environment: ["REEL_LIBRARY_CACHE": store.path])
        }
        for worker in workers {
            #expect(try await worker.exit(within: .seconds(300)).status == 0, "\(worker.output.suffix(2000))")
        }
        var made = 0
        for id in ids {
            let shown = try await ReelBinary.run(["status", id, "--json"], environment: environment)
            let status = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
            #expect(status["state"] as? String == "completed" && status["attempts"] as? Int == 1, "\(status)")
            let items = try #require(status["items"] as? [String: Int], "\(status)")
            #expect(items["done"] == items["total"], "\(items)")
            made += ((status["result"] as? [String: Any])?["cache"] as? [String: Any])?["made"] as? Int ?? 0
        }
        #expect(made == 5)
        let thumbnails =
            (FileManager.default.enumerator(atPath: store.appendingPathComponent("thumbnail").path)?
            .compactMap { $0 as? String } ?? []).filter { $0.hasSuffix(".webp") }
        #expect(thumbnails.count == 5, "\(thumbnails)")
        for file in thumbnails {
            let probed = try #require(
                try await ProbedFile.probe(store.appendingPathComponent("thumbnail/\(file)")).video)
            #expect(probed.width == 333 && probed.height == 250, "\(file)")
        }
    }
}
