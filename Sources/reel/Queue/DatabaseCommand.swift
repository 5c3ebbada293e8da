import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary
import ReelQueue

#if Fleet
    import ReelFleet
    import ReelLibraryFleet
#endif

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
}
