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

struct LibraryListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List assets, as PHAsset.fetchAssets(with:) or fetchAssets(in:options:).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @OptionGroup var fetch: FetchArguments

    @Option(
        name: .long, help: ArgumentHelp("Only assets in this collection (see 'reel library albums').", valueName: "id"))
    var album: String?

    @Flag(name: .long, help: "One JSON object per asset per line.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let options = try fetch.options()
        let assets = try await LibraryCLI.mapping {
            if let album { return try await library.fetchAssets(inCollection: album, options: options) }
            return try await library.fetchAssets(options)
        }
        for asset in assets {
            CLI.printLine(json ? CLI.jsonLine(LibraryCLI.AssetJSON(asset: asset)) : LibraryCLI.describe(asset))
        }
    }
}
