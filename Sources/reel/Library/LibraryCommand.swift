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

/// `reel library …`: PhotoKit's model over folders of phone media (ReelLibrary).
struct LibraryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "library",
        abstract: "Index folders of photos and videos as a PhotoKit-shaped library: assets, Live Photos, resources.",
        subcommands: [
            LibraryScanCommand.self, LibraryListCommand.self, LibraryShowCommand.self, LibraryResourcesCommand.self,
            LibraryWriteResourceCommand.self, LibrarySetCommand.self, LibraryAlbumsCommand.self,
            LibraryAlbumCommand.self, LibraryChangesCommand.self, LibraryImportCommand.self, LibraryEditCommand.self,
            LibraryRevertCommand.self, LibraryCacheCommand.self,
        ])
}
