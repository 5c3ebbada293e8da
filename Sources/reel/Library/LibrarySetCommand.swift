import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary
import ReelQueue
import Synchronization

#if Fleet
    import ReelFleet
    import ReelLibraryFleet
#endif

struct LibrarySetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change an asset's library state: favorite, hidden.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Flag(inversion: .prefixedNo, help: "Mark as favorite (or not).") var favorite: Bool?
    @Flag(inversion: .prefixedNo, help: "Hide (or show).") var hidden: Bool?

    func run() async throws {
        global.bootstrapLogging()
        guard favorite != nil || hidden != nil else {
            throw CLIFailure(
                message: "say what to set: --favorite, --no-favorite, --hidden or --no-hidden", exitStatus: .usage)
        }
        let library = try library.open()
        try await LibraryCLI.mapping {
            if let favorite { try await library.setFavorite(identifier, favorite) }
            if let hidden { try await library.setHidden(identifier, hidden) }
        }
    }
}
