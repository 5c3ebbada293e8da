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

struct LibraryShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one asset with its resources.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let (asset, resources, notes) = try await LibraryCLI.mapping {
            let asset = try await library.asset(identifier)
            return (asset, try await library.resources(for: asset), try await library.notes(for: asset))
        }
        let value = LibraryCLI.AssetJSON(
            asset: asset, resources: resources.map(LibraryCLI.ResourceJSON.init), notes: notes)
        if json {
            CLI.printLine(String(decoding: try JSONCoding.prettyEncoder.encode(value), as: UTF8.self))
            return
        }
        CLI.printLine(LibraryCLI.describe(asset))
        for resource in resources { CLI.printLine("  " + LibraryResourcesCommand.line(resource)) }
        for note in notes { CLI.printLine("  note: " + note) }
    }
}
