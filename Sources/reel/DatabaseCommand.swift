import ArgumentParser
import Foundation
import ReelExport
import ReelFleet
import ReelQueue

/// `reel db …`: the fleet's database.
struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "Set up the fleet's PostgreSQL database.",
        subcommands: [MigrateCommand.self, VersionCommand.self])

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
}
