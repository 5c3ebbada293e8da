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

struct LibraryWriteResourceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write-resource",
        abstract:
            "Write a resource's bytes to a file, unchanged (PHAssetResourceManager.writeData): atomic, hash-checked.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Resource type: pairedVideo, photo, video, fullSizePhoto, adjustmentData, fullSizePairedVideo, or its raw value.",
            valueName: "type"))
    var type: String?
    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("The file to write.", valueName: "file"))
    var output: String
    @Flag(name: .long, help: "Replace the output file if it exists.") var overwrite = false
    @Flag(name: .long, help: "Print the result as JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let wanted: AssetResourceType?
        if let type {
            guard let parsed = AssetResourceType(name: type) else {
                throw CLIFailure(
                    message:
                        "'\(type)' is not a resource type (\(AssetResourceType.allCases.map(\.name).joined(separator: ", ")))",
                    exitStatus: .usage)
            }
            wanted = parsed
        } else {
            wanted = nil
        }
        let showProgress = !json && CLI.stderrIsTerminal
        let (resource, hash) = try await LibraryCLI.mapping {
            let asset = try await library.asset(identifier)
            let resources = try await library.resources(for: asset)
            let chosen =
                wanted ?? (resources.contains { $0.type == .pairedVideo } ? .pairedVideo : resources.first?.type)
            guard let resource = resources.first(where: { $0.type == chosen }) else {
                throw LibraryError(.notFound, "asset \(identifier) has no \(chosen?.name ?? "") resource")
            }
            let hash = try await library.writeData(for: resource, toFile: output, overwrite: overwrite) {
                written, total in
                guard showProgress else { return }
                let text = "\rwriting: \(written * 100 / max(1, total))% of \(CLI.formatBytes(total))\u{1B}[K"
                try? FileHandle.standardError.write(contentsOf: Data(text.utf8))
            }
            return (resource, hash)
        }
        if showProgress { try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8)) }
        struct Written: Encodable {
            var output: String
            var type: String
            var bytes: Int64
            var blake2b256: String
        }
        let result = Written(output: output, type: resource.type.name, bytes: resource.length, blake2b256: hash)
        if json {
            CLI.printLine(CLI.jsonLine(result))
        } else {
            CLI.printLine(
                "wrote \(output): \(resource.type.name), \(resource.length) bytes, BLAKE2b-256 \(hash) (matches the source)"
            )
        }
    }
}
