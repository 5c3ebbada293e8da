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

struct LibraryScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Index folders: new and changed files are read (headers and a content hash), the rest skipped.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions

    @Argument(help: "Folders to scan.")
    var folders: [String]

    @Flag(
        name: .long, help: "Print the report as JSON (inserted, changed and removed identifiers, skipped files, token)."
    )
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open(limits: input.limits)
        let showProgress = !json && CLI.stderrIsTerminal
        let lastDraw = Mutex(Date.distantPast)
        let report = try await LibraryCLI.mapping {
            try await library.scan(folders) { progress in
                guard showProgress else { return }
                let now = Date()
                let due = lastDraw.withLock { last -> Bool in
                    guard now.timeIntervalSince(last) > 0.1 || progress.phase == .finishing else { return false }
                    last = now
                    return true
                }
                guard due else { return }
                let text =
                    progress.phase == .walking
                    ? "\rscanning: \(progress.filesSeen) files seen, \(progress.filesToRead) to read"
                    : "\rreading: \(progress.filesRead)/\(progress.filesToRead) of \(progress.filesSeen) files"
                try? FileHandle.standardError.write(contentsOf: Data((text + "\u{1B}[K").utf8))
            }
        }
        if showProgress { try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8)) }
        if json {
            CLI.printLine(CLI.jsonLine(report))
            return
        }
        let seconds = String(format: "%.2f", report.seconds)
        let files = "\(report.filesRead) read, \(report.filesUnchanged) unchanged"
        let assets = [
            "\(report.insertedLocalIdentifiers.count) inserted", "\(report.changedLocalIdentifiers.count) changed",
            "\(report.removedLocalIdentifiers.count) removed", "\(report.skipped.count) skipped",
        ]
        CLI.printLine("scanned \(report.filesSeen) files in \(seconds) s: \(files); \(assets.joined(separator: ", "))")
        for skip in report.skipped { CLI.printLine("skipped \(skip.path): \(skip.reason)") }
        for note in report.notes { CLI.printLine("note \(note.path): \(note.reason)") }
        CLI.printLine("change token: \(report.token)")
    }
}
