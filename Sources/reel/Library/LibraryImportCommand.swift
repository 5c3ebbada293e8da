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

struct LibraryImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Copy (or move) files into a library folder and index them.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "Files to import.") var files: [String]
    @Option(name: .long, help: ArgumentHelp("The library folder they go to.", valueName: "dir")) var into: String
    @Flag(name: .long, help: "Move the files instead of copying them (PhotoKit's shouldMoveFile).") var move = false
    @Flag(
        name: .long,
        help:
            "One still (HEIC or JPEG) and one movie (MOV or MP4, at most 5 s) become one Live Photo (photo + pairedVideo), whatever their content identifiers, names or times say."
    )
    var live = false
    @Flag(name: .long, help: "Print the scan report as JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open(limits: input.limits)
        let report = try await LibraryCLI.mapping {
            live
                ? try await library.importLivePhoto(files, into: into, move: move)
                : try await library.importFiles(files, into: into, move: move)
        }
        if json {
            CLI.printLine(CLI.jsonLine(report))
        } else {
            for id in report.insertedLocalIdentifiers { CLI.printLine("imported \(id)\(live ? " (Live Photo)" : "")") }
            for skip in report.skipped { CLI.printLine("skipped \(skip.path): \(skip.reason)") }
        }
    }
}
