import ArgumentParser
import Foundation
import ReelExport
import ReelFleet
import ReelQueue

/// `reel db …`: the fleet's database.
struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "Set up the fleet's PostgreSQL database.",
        subcommands: [MigrateCommand.self, VersionCommand.self, BenchClaimsCommand.self])

    /// Opens the database `--store` (or `REEL_STORE`) names.
    static func open(_ options: DatabaseOptions) throws -> PostgresStore {
        guard let url = options.databaseURL else {
            throw CLIFailure(message: "name the database with --store postgres://… (or REEL_STORE)", exitStatus: .usage)
        }
        return try StoreOptions.openDatabase(url, statusFolder: nil)
    }

    struct MigrateCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract:
                "Create or update Reel's tables (idempotent; safe while workers run: one migrator at a time).")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            global.bootstrapLogging()
            let store = try DatabaseCommand.open(database)
            let applied = try await store.migrate()
            let (current, _) = try await store.schemaVersion()
            await store.close()
            if applied.isEmpty {
                CLI.printLine("schema is current (version \(current))")
            } else {
                CLI.printLine(
                    "applied \(applied.map { "version \($0)" }.joined(separator: ", ")); schema is at version \(current)"
                )
            }
        }
    }

    struct VersionCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "version", abstract: "Show the database's schema version (exit 1 when it needs migrating).")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            global.bootstrapLogging()
            let store = try DatabaseCommand.open(database)
            let (current, latest) = try await store.schemaVersion()
            await store.close()
            CLI.printLine("schema version \(current) (this reel knows \(latest))")
            if current < latest { throw CLIFailure(message: "run `reel db migrate`", exitStatus: .failure) }
        }
    }

    /// Measures what each job costs the database: `--workers` stores, each claiming and completing
    /// jobs as fast as it can (the store's own claim and finish), for `--seconds`. For Scripts/bench-fleet.
    struct BenchClaimsCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "_bench-claims", abstract: "Claim and complete jobs as fast as possible (benchmark).",
            shouldDisplay: false)

        @OptionGroup var global: GlobalOptions
        @OptionGroup var storeOptions: StoreOptions

        @Option var workers = 4
        @Option var seconds = 10.0

        func run() async throws {
            global.bootstrapLogging()
            guard let url = storeOptions.databaseURL else { throw CLIFailure(message: "--store is required") }
            let stores = try (0..<workers).map { _ in try storeOptions.openDatabase(url, connections: 2) }
            let result = JobResult(
                bytes: 0, durationSeconds: 0, width: nil, height: nil, videoCodec: nil, audioCodec: nil,
                networkOptimized: true, elapsedSeconds: 0)
            let deadline = ContinuousClock.now + .seconds(seconds)
            let began = ContinuousClock.now
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, store) in stores.enumerated() {
                    group.addTask {
                        var claimed = 0
                        while ContinuousClock.now < deadline,
                            let lease = try await store.claim(worker: "bench:\(index)")
                        {
                            try await store.finish(lease, .completed(result))
                            claimed += 1
                        }
                        return claimed
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let elapsed = ContinuousClock.now - began
            let secondsTaken = elapsed / .seconds(1)
            for store in stores { await store.close() }
            let total = counts.reduce(0, +)
            CLI.printLine(
                "{\"workers\": \(workers), \"jobs\": \(total), \"seconds\": \(secondsTaken), \"perSecond\": \(Double(total) / secondsTaken)}"
            )
        }
    }
}
