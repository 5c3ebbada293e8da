import ArgumentParser
import Foundation
import ReelFleet
import ReelQueue

/// Measures what each job costs the fleet's database: `--workers` stores, each claiming and completing
/// jobs as fast as it can (the store's own claim and finish), for `--seconds`, then one JSON line
/// (`workers`, `jobs`, `seconds`, `perSecond`). Scripts/bench-fleet runs it; it is not part of the
/// `reel` command, and the package never installs it.
@main
struct BenchClaims: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reel-bench-claims", abstract: "Claim and complete a fleet's jobs as fast as possible.")

    @Option(help: ArgumentHelp("The fleet's database (env REEL_STORE).", valueName: "url"))
    var store: String?
    @Option var workers = 4
    @Option var seconds = 10.0

    struct Report: Encodable {
        var workers: Int
        var jobs: Int
        var seconds: Double
        var perSecond: Double
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let text = store ?? environment["REEL_STORE"] else { throw ValidationError("--store is required") }
        let url = try DatabaseURL(text, environment: environment)
        // Status files as `reel` writes them: into REEL_STATUS_DIR when it names a folder.
        let folder = environment["REEL_STATUS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        let stores = try (0..<workers).map { _ in
            try PostgresStore(url: url, options: PostgresStore.Options(statusFolder: folder, connections: 2))
        }
        let result = JobResult(
            bytes: 0, durationSeconds: 0, width: nil, height: nil, videoCodec: nil, audioCodec: nil,
            networkOptimized: true, elapsedSeconds: 0)
        let deadline = ContinuousClock.now + .seconds(seconds)
        let began = ContinuousClock.now
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    var claimed = 0
                    while ContinuousClock.now < deadline, let lease = try await store.claim(worker: "bench:\(index)") {
                        try await store.finish(lease, .completed(result))
                        claimed += 1
                    }
                    return claimed
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        let taken = (ContinuousClock.now - began) / .seconds(1)
        for store in stores { await store.close() }
        let total = counts.reduce(0, +)
        let report = Report(workers: workers, jobs: total, seconds: taken, perSecond: Double(total) / taken)
        print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
    }
}
