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

struct LibraryResourcesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resources", abstract: "List an asset's resources (PHAssetResource): type, UTI, file name, bytes.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Flag(name: .long, help: "One JSON object per resource per line.") var json = false

    static func line(_ resource: AssetResource) -> String {
        let range =
            resource.isByteRange
            ? " (bytes \(resource.offset)..<\(resource.offset + resource.length) of \(resource.path))"
            : " (\(resource.path))"
        return
            [
                "\(resource.type.name) (\(resource.type.rawValue))", resource.uniformTypeIdentifier,
                resource.originalFilename,
                "\(resource.length) bytes\(range)",
            ].joined(separator: "  ")
    }

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let resources = try await LibraryCLI.mapping {
            try await library.resources(for: try await library.asset(identifier))
        }
        for resource in resources {
            CLI.printLine(json ? CLI.jsonLine(LibraryCLI.ResourceJSON(resource)) : Self.line(resource))
        }
    }
}
