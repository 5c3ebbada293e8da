import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary
import ReelQueue

#if Fleet
    import ReelFleet
    import ReelLibraryFleet
#endif

extension DatabaseCommand {
    struct MigrateCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract:
                "Create or update Reel's tables (idempotent; safe while workers run: one migrator at a time).")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            global.bootstrapLogging()
            #if Fleet
                let store = try DatabaseCommand.open(database)
                let applied = try await store.migrate()
                let (current, _) = try await store.schemaVersion()
                // The photo library's tables, beside the queue's (their own versions; see LibraryMigrations).
                let library = PostgresLibraryStore(database: store)
                let libraryApplied: [Int]
                let libraryCurrent: Int
                do {
                    libraryApplied = try await library.migrate()
                    libraryCurrent = try await library.schemaVersion().current
                } catch let error as LibraryError {
                    await store.close()
                    throw CLIFailure(message: error.message, exitStatus: .unavailable)
                }
                await store.close()
                if applied.isEmpty {
                    CLI.printLine("schema is current (version \(current))")
                } else {
                    CLI.printLine(
                        "applied \(applied.map { "version \($0)" }.joined(separator: ", ")); schema is at version \(current)"
                    )
                }
                if libraryApplied.isEmpty {
                    CLI.printLine("library schema is current (version \(libraryCurrent))")
                } else {
                    CLI.printLine(
                        "applied library \(libraryApplied.map { "version \($0)" }.joined(separator: ", ")); library schema is at version \(libraryCurrent)"
                    )
                }
            #else
                throw LeftOut.fleet.failure
            #endif
        }
    }
}
