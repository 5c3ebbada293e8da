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

struct LibraryChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Identifiers inserted, updated and deleted since a change token, and the token for now.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Option(
        name: .long,
        help: ArgumentHelp("A token from an earlier scan or 'changes' (none: the token for now).", valueName: "token"))
    var since: String?
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        guard let since else {
            let token = try await LibraryCLI.mapping { try await library.currentChangeToken() }
            CLI.printLine(json ? CLI.jsonLine(["token": token.description]) : token.description)
            return
        }
        guard let token = LibraryChangeToken(since) else {
            throw CLIFailure(message: "'\(since)' is not a change token (<library>:<number>)", exitStatus: .usage)
        }
        let changes = try await LibraryCLI.mapping { try await library.changes(since: token) }
        if json {
            struct Out: Encodable {
                var inserted: [String]
                var updated: [String]
                var deleted: [String]
                var token: String
            }
            CLI.printLine(
                CLI.jsonLine(
                    Out(
                        inserted: changes.insertedLocalIdentifiers, updated: changes.updatedLocalIdentifiers,
                        deleted: changes.deletedLocalIdentifiers, token: changes.token.description)))
        } else {
            for id in changes.insertedLocalIdentifiers { CLI.printLine("inserted \(id)") }
            for id in changes.updatedLocalIdentifiers { CLI.printLine("updated \(id)") }
            for id in changes.deletedLocalIdentifiers { CLI.printLine("deleted \(id)") }
            CLI.printLine("token: \(changes.token)")
        }
    }
}
