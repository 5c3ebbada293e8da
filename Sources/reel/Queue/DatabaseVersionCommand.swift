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
    struct VersionCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "version", abstract: "Show the database's schema version (exit 1 when it needs migrating).")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            global.bootstrapLogging()
            #if Fleet
                let store = try DatabaseCommand.open(database)
                let (current, latest) = try await store.schemaVersion()
                let library = try? await PostgresLibraryStore(database: store).schemaVersion()
                await store.close()
                CLI.printLine("schema version \(current) (this reel knows \(latest))")
                if let library {
                    CLI.printLine("library schema version \(library.current) (this reel knows \(library.latest))")
                }
                if current < latest || (library.map { $0.current < $0.latest } ?? true) {
                    throw CLIFailure(message: "run `reel db migrate`", exitStatus: .failure)
                }
            #else
                throw LeftOut.fleet.failure
            #endif
        }
    }
}
