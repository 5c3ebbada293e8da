import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary

/// `reel library edit`: saves an edit as a PhotoKit app does (`PHContentEditingOutput`), in the layout
/// an iPhone export uses (`IMG_E1234.JPG` and `IMG_1234.AAE` beside `IMG_1234.HEIC`).
struct LibraryEditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract:
            "Save an edit of a photo (PHContentEditingOutput): the rendered photo and its adjustment data beside the original, which stays untouched."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Option(name: .long, help: ArgumentHelp("The rendered edit: a JPEG or HEIC photo.", valueName: "file"))
    var rendered: String
    @Option(
        name: .customLong("adjustment-data"),
        help: ArgumentHelp("The editor's adjustment data (PHAdjustmentData.data), at most 512 KiB.", valueName: "file"))
    var adjustmentData: String
    @Option(
        name: .customLong("format-identifier"),
        help: ArgumentHelp("The adjustment data's format identifier (com.example.crop).", valueName: "id"))
    var formatIdentifier: String
    @Option(
        name: .customLong("format-version"),
        help: ArgumentHelp("The adjustment data's format version (1.0).", valueName: "version"))
    var formatVersion: String
    @Flag(name: .long, help: "Print the asset as JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let data = try Self.readAdjustmentData(adjustmentData)
        let library = try library.open(limits: input.limits)
        let (asset, resources) = try await LibraryCLI.mapping {
            let asset = try await library.applyEdit(
                ContentEditingOutput(
                    adjustmentData: AdjustmentData(
                        formatIdentifier: formatIdentifier, formatVersion: formatVersion, data: data),
                    renderedContentURL: URL(fileURLWithPath: rendered)),
                to: try await library.asset(identifier))
            return (asset, try await library.resources(for: asset))
        }
        LibraryEditCommand.print(asset, resources, json: json)
    }

    /// The adjustment data file's bytes, refused over the limit before it is read.
    static func readAdjustmentData(_ path: String) throws -> Data {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
        guard let size else {
            throw CLIFailure(message: "cannot read the adjustment data \(path)", exitStatus: .usage)
        }
        guard size <= AAEParser.maxDataBytes else {
            throw CLIFailure(
                message: "the adjustment data \(path) has \(size) bytes, over the limit of \(AAEParser.maxDataBytes)",
                exitStatus: .usage)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(message: "cannot read the adjustment data \(path)", exitStatus: .usage)
        }
        return data
    }

    static func print(_ asset: LibraryAsset, _ resources: [AssetResource], json: Bool) {
        if json {
            CLI.printLine(
                CLI.jsonLine(LibraryCLI.AssetJSON(asset: asset, resources: resources.map(LibraryCLI.ResourceJSON.init)))
            )
            return
        }
        CLI.printLine(LibraryCLI.describe(asset))
        for resource in resources { CLI.printLine("  " + LibraryResourcesCommand.line(resource)) }
    }
}
