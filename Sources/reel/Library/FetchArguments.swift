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

/// PhotoKit's fetch options on the command line.
struct FetchArguments: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "An NSPredicate over PhotoKit's asset keys, e.g. 'mediaType == 2 AND duration < 10' or '(mediaSubtypes & 8) != 0'.",
            valueName: "predicate"))
    var predicate: String?

    @Option(name: .long, help: ArgumentHelp("Sort key, then ,asc or ,desc (repeatable).", valueName: "key[,desc]"))
    var sort: [String] = []

    @Option(name: .long, help: ArgumentHelp("At most this many assets (0: all).", valueName: "n"))
    var limit = 0

    @Flag(name: .long, help: "Include hidden assets (PhotoKit's includeHiddenAssets).")
    var includeHidden = false

    @Flag(name: .long, help: "Every asset of a burst, not one representative (includeAllBurstAssets).")
    var includeAllBurstAssets = false

    func options() throws -> FetchOptions {
        try LibraryCLI.mappingNow {
            FetchOptions(
                predicate: try predicate.map(PredicateParser.parse), sortDescriptors: try sort.map(FetchSort.parse),
                fetchLimit: max(0, limit), includeHiddenAssets: includeHidden,
                includeAllBurstAssets: includeAllBurstAssets)
        }
    }
}
