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

struct LibraryAlbumCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "album", abstract: "Create, rename, delete and fill user albums.",
        discussion: """
            reel library album create <title>
            reel library album rename <album> <title>
            reel library album delete <album>
            reel library album add <album> <asset>...
            reel library album remove <album> <asset>...
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "create, rename, delete, add or remove.") var action: String
    @Argument(help: "The title, or the album and then titles or assets.") var arguments: [String] = []

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        func need(_ count: Int, _ usage: String) throws {
            guard arguments.count >= count else {
                throw CLIFailure(message: "usage: reel library album \(usage)", exitStatus: .usage)
            }
        }
        try await LibraryCLI.mapping {
            switch action {
            case "create":
                try need(1, "create <title>")
                let album = try await library.createAlbum(title: arguments.joined(separator: " "))
                CLI.printLine(album.localIdentifier)
            case "rename":
                try need(2, "rename <album> <title>")
                try await library.renameAlbum(arguments[0], title: arguments.dropFirst().joined(separator: " "))
            case "delete":
                try need(1, "delete <album>")
                try await library.deleteAlbum(arguments[0])
            case "add":
                try need(2, "add <album> <asset>...")
                try await library.addAssets(Array(arguments.dropFirst()), toAlbum: arguments[0])
            case "remove":
                try need(2, "remove <album> <asset>...")
                try await library.removeAssets(Array(arguments.dropFirst()), fromAlbum: arguments[0])
            default:
                throw CLIFailure(
                    message: "'\(action)' is not create, rename, delete, add or remove", exitStatus: .usage)
            }
        }
    }
}
