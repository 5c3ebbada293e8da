import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary

/// `reel library revert`: removes a photo's edit (`revertAssetContentToOriginal`).
struct LibraryRevertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert",
        abstract: "Revert a photo to its original (revertAssetContentToOriginal): its edit's files are removed.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Flag(name: .long, help: "Print the asset as JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let (asset, resources) = try await LibraryCLI.mapping {
            let asset = try await library.revertEdit(of: try await library.asset(identifier))
            return (asset, try await library.resources(for: asset))
        }
        LibraryEditCommand.print(asset, resources, json: json)
    }
}
