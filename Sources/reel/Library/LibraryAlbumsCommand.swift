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

struct LibraryAlbumsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "albums", abstract: "List collections: user albums, folders, smart albums and moments.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Flag(name: .long, help: "One JSON object per collection per line.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        for collection in try await LibraryCLI.mapping({ try await library.collections() }) {
            if json {
                CLI.printLine(CLI.jsonLine(collection))
            } else {
                let subtype = collection.assetCollectionSubtype.map { " \($0.name)" } ?? ""
                CLI.printLine(
                    [
                        collection.localIdentifier, collection.assetCollectionType.name + subtype,
                        "\(collection.estimatedAssetCount)", collection.localizedTitle,
                    ].joined(separator: "  ")
                )
            }
        }
    }
}
