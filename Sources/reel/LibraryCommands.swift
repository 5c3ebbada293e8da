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

/// Which library: `--library`, else `$REEL_LIBRARY` (a database file, or a `postgres://` URL for the
/// library in a fleet's database); else the queue's PostgreSQL database when the queue is there
/// (`--store`/`$REEL_STORE`), so a fleet's workers and clients share one library; else
/// `library.sqlite` in Reel's state folder (`$XDG_STATE_HOME/reel`, else `~/.local/state/reel`, where
/// the spool lives by default).
struct LibraryOptions: ParsableArguments {
    @Option(
        name: .customLong("library"),
        help: ArgumentHelp(
            "The library: a database file, or postgres://… (env REEL_LIBRARY; default: the queue's database with --store/REEL_STORE, else library.sqlite in $XDG_STATE_HOME/reel, else ~/.local/state/reel).",
            valueName: "file|url"))
    var path: String?

    /// Where the library is.
    enum Location: Equatable {
        /// The embedded SQLite file.
        case file(String)
        /// The library's tables in a PostgreSQL database (a fleet's).
        case database(String)
    }

    /// Where the library is, given the queue's database URL when the queue is in PostgreSQL (for
    /// `reel library …`, which has no `--store`: `$REEL_STORE`).
    func location(queueDatabase: String? = StoreOptions.environmentDatabaseURL) -> Location {
        var environment = ProcessInfo.processInfo.environment
        if let named = path ?? environment["REEL_LIBRARY"].flatMap({ $0.isEmpty ? nil : $0 }) {
            return Self.isDatabaseURL(named) ? .database(named) : .file(named)
        }
        if let queueDatabase { return .database(queueDatabase) }
        environment["REEL_SPOOL"] = nil
        return .file(SpoolStore.defaultRoot(environment: environment).appendingPathComponent("library.sqlite").path)
    }

    static func isDatabaseURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    func open(limits: InputLimits = Asset.defaultLimits) throws -> PhotoLibrary {
        try Self.open(location(), limits: limits)
    }

    /// Opens the library at `location`; a database one on `sharing` (a worker's queue store on that
    /// database, whose pool it then uses), else on a pool of its own.
    static func open(_ location: Location, limits: InputLimits, sharing: PostgresStore? = nil) throws -> PhotoLibrary {
        switch location {
        case .file(let path):
            return try LibraryCLI.mappingNow { try PhotoLibrary(path: path, limits: limits) }
        case .database(let url):
            #if Fleet
                let database = try sharing ?? StoreOptions.openDatabase(url, statusFolder: nil)
                return PhotoLibrary(store: PostgresLibraryStore(database: database), limits: limits)
            #else
                _ = url
                throw LeftOut.fleet.failure
            #endif
        }
    }

    /// The library for `library:<id>` inputs and `--save-to-library`, opened on first use (so a
    /// command that names no library asset never creates the database or connects). `queueDatabase`
    /// is the queue's database URL when the queue is in PostgreSQL; `sharing`, a worker's store on it.
    func link(limits: InputLimits, queueDatabase: String? = nil, sharing: PostgresStore? = nil) -> LazyLibrary {
        let location = location(queueDatabase: queueDatabase)
        // The worker's own store only when the library is in the queue's database, not another named one.
        let shared: PostgresStore? = queueDatabase.map { location == .database($0) } == true ? sharing : nil
        return LazyLibrary(location: location, limits: limits, sharing: shared)
    }
}

/// A `PhotoLibrary` opened when an export first needs it: `export`, `submit` and `work` take
/// `--library` and reach the library only for `library:<id>` assets and saves.
final class LazyLibrary: AssetLibrary {
    private let location: LibraryOptions.Location
    private let limits: InputLimits
    private let sharing: PostgresStore?
    private let opened = Mutex<PhotoLibrary?>(nil)

    init(location: LibraryOptions.Location, limits: InputLimits, sharing: PostgresStore? = nil) {
        self.location = location
        self.limits = limits
        self.sharing = sharing
    }

    /// Opens the library now, for a command about to need it (a `library:` asset, `--save-to-library`):
    /// a failure keeps its exit status, so a build that leaves the library out, or a library that
    /// cannot be opened, ends the command with 69 before any work. `resolve` and `saveOutput` report
    /// the same failure as an export's `internal` one (exit 1), after whatever work came before.
    func openNow() throws(CLIFailure) {
        _ = try openedOrFailure().get()
    }

    func library() throws(ExportError) -> PhotoLibrary {
        do {
            return try openedOrFailure().get()
        } catch {
            throw ExportError(.internal, "cannot open the library: \(error.message)")
        }
    }

    private func openedOrFailure() -> Result<PhotoLibrary, CLIFailure> {
        opened.withLock { opened in
            if let opened { return .success(opened) }
            do {
                let library = try LibraryOptions.open(location, limits: limits, sharing: sharing)
                opened = library
                return .success(library)
            } catch let failure as CLIFailure {
                return .failure(failure)
            } catch {
                return .failure(CLIFailure(message: "\(error)"))
            }
        }
    }

    func resolve(_ identifier: String, resource: String?) async throws(ExportError) -> LibrarySource {
        try await library().resolve(identifier, resource: resource)
    }

    func saveOutput(at path: String, from source: LibrarySource?) async throws(ExportError) -> String {
        #if DEBUG
            // Tests: `$REEL_TEST_SAVE_FAULT` fails this process's first save as a crash would, before
            // the import (`before`) or after it (`after`), to show a retry neither loses nor duplicates.
            let fault = LazyLibrary.saveFault.withLock { fault -> String? in
                defer { fault = nil }
                return fault
            }
            if fault == "before" { throw ExportError(.saveFailed, "test fault: stopped before saving \(path)") }
            if fault == "after" {
                _ = try await library().saveOutput(at: path, from: source)
                throw ExportError(.saveFailed, "test fault: stopped after saving \(path)")
            }
        #endif
        return try await library().saveOutput(at: path, from: source)
    }

    #if DEBUG
        private static let saveFault = Mutex<String?>(ProcessInfo.processInfo.environment["REEL_TEST_SAVE_FAULT"])
    #endif
}

enum LibraryCLI {
    /// Runs `body`, turning a `LibraryError` into the CLI's one-line failure with its exit status.
    static func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LibraryError {
            throw failure(error)
        }
    }

    /// `mapping` for synchronous work (a distinct name: overloads on `async` alone are ambiguous with a
    /// trailing closure).
    static func mappingNow<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as LibraryError {
            throw failure(error)
        }
    }

    static func failure(_ error: LibraryError) -> CLIFailure {
        CLIFailure(
            message: error.message, exitStatus: ExitStatus(error.code), code: error.code.commandCode,
            retryable: error.code.retryable)
    }

    /// An asset as `--json` prints it: PhotoKit's field names and raw values, plus the names of the
    /// raw values for people.
    struct AssetJSON: Encodable {
        var asset: LibraryAsset
        var resources: [ResourceJSON]?
        /// What the scan noted about the asset's files (`show` only): a refused Motion Photo's reason.
        var notes: [String]?

        enum Keys: String, CodingKey {
            case localIdentifier, mediaType, mediaTypeName, mediaSubtypes, mediaSubtypeNames, pixelWidth, pixelHeight
            case duration, creationDate, creationTimeZoneOffset, modificationDate, location, isFavorite, isHidden
            case burstIdentifier, representsBurst, playbackStyle, playbackStyleName, sourceType, originalFilename
            case contentIdentifier, pairing, stillImageTime, contentHash, path, addedDate, hasAdjustments, resources
            case notes
        }

        struct Location: Encodable {
            var latitude: Double
            var longitude: Double
            var altitude: Double?
            var iso6709: String
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(asset.localIdentifier, forKey: .localIdentifier)
            try c.encode(asset.mediaType.rawValue, forKey: .mediaType)
            try c.encode(asset.mediaType.name, forKey: .mediaTypeName)
            try c.encode(asset.mediaSubtypes.rawValue, forKey: .mediaSubtypes)
            try c.encode(asset.mediaSubtypes.names, forKey: .mediaSubtypeNames)
            try c.encode(asset.pixelWidth, forKey: .pixelWidth)
            try c.encode(asset.pixelHeight, forKey: .pixelHeight)
            try c.encode(asset.duration, forKey: .duration)
            try c.encodeIfPresent(asset.creationDate, forKey: .creationDate)
            try c.encodeIfPresent(asset.creationTimeZoneOffset, forKey: .creationTimeZoneOffset)
            try c.encode(asset.modificationDate, forKey: .modificationDate)
            if let location = asset.location {
                try c.encode(
                    Location(
                        latitude: location.latitude, longitude: location.longitude, altitude: location.altitude,
                        iso6709: location.iso6709), forKey: .location)
            }
            try c.encode(asset.isFavorite, forKey: .isFavorite)
            try c.encode(asset.isHidden, forKey: .isHidden)
            try c.encode(asset.hasAdjustments, forKey: .hasAdjustments)
            try c.encodeIfPresent(asset.burstIdentifier, forKey: .burstIdentifier)
            try c.encode(asset.representsBurst, forKey: .representsBurst)
            try c.encode(asset.playbackStyle.rawValue, forKey: .playbackStyle)
            try c.encode(asset.playbackStyle.name, forKey: .playbackStyleName)
            try c.encode(asset.sourceType.rawValue, forKey: .sourceType)
            try c.encode(asset.originalFilename, forKey: .originalFilename)
            try c.encodeIfPresent(asset.contentIdentifier, forKey: .contentIdentifier)
            try c.encodeIfPresent(asset.pairing?.rawValue, forKey: .pairing)
            try c.encodeIfPresent(asset.stillImageTime, forKey: .stillImageTime)
            try c.encode(asset.contentHash, forKey: .contentHash)
            try c.encode(asset.path, forKey: .path)
            try c.encode(asset.addedDate, forKey: .addedDate)
            try c.encodeIfPresent(resources, forKey: .resources)
            try c.encodeIfPresent(notes, forKey: .notes)
        }
    }

    struct ResourceJSON: Encodable {
        var type: Int
        var typeName: String
        var assetLocalIdentifier: String
        var uniformTypeIdentifier: String
        var originalFilename: String
        var path: String
        var offset: Int64
        var bytes: Int64
        var contentHash: String?

        init(_ resource: AssetResource) {
            type = resource.type.rawValue
            typeName = resource.type.name
            assetLocalIdentifier = resource.assetLocalIdentifier
            uniformTypeIdentifier = resource.uniformTypeIdentifier
            originalFilename = resource.originalFilename
            path = resource.path
            offset = resource.offset
            bytes = resource.length
            contentHash = resource.contentHash
        }
    }

    static func describe(_ asset: LibraryAsset) -> String {
        var parts = [asset.localIdentifier, asset.mediaType.name]
        if !asset.mediaSubtypes.isEmpty { parts.append(asset.mediaSubtypes.description) }
        parts.append("\(asset.pixelWidth)x\(asset.pixelHeight)")
        if asset.mediaType == .video { parts.append(String(format: "%.2f s", asset.duration)) }
        if let pairing = asset.pairing { parts.append(pairing.rawValue) }
        if asset.hasAdjustments { parts.append("edited") }
        parts.append(asset.creationDate.map { ISO8601DateFormatter().string(from: $0) } ?? "-")
        parts.append(asset.path)
        return parts.joined(separator: "  ")
    }
}

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

struct LibraryListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List assets, as PHAsset.fetchAssets(with:) or fetchAssets(in:options:).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @OptionGroup var fetch: FetchArguments

    @Option(
        name: .long, help: ArgumentHelp("Only assets in this collection (see 'reel library albums').", valueName: "id"))
    var album: String?

    @Flag(name: .long, help: "One JSON object per asset per line.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let options = try fetch.options()
        let assets = try await LibraryCLI.mapping {
            if let album { return try await library.fetchAssets(inCollection: album, options: options) }
            return try await library.fetchAssets(options)
        }
        for asset in assets {
            CLI.printLine(json ? CLI.jsonLine(LibraryCLI.AssetJSON(asset: asset)) : LibraryCLI.describe(asset))
        }
    }
}

struct LibraryShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one asset with its resources.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        let (asset, resources, notes) = try await LibraryCLI.mapping {
            let asset = try await library.asset(identifier)
            return (asset, try await library.resources(for: asset), try await library.notes(for: asset))
        }
        let value = LibraryCLI.AssetJSON(
            asset: asset, resources: resources.map(LibraryCLI.ResourceJSON.init), notes: notes)
        if json {
            CLI.printLine(String(decoding: try JSONCoding.prettyEncoder.encode(value), as: UTF8.self))
            return
        }
        CLI.printLine(LibraryCLI.describe(asset))
        for resource in resources { CLI.printLine("  " + LibraryResourcesCommand.line(resource)) }
        for note in notes { CLI.printLine("  note: " + note) }
    }
}

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

struct LibrarySetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change an asset's library state: favorite, hidden.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Argument(help: "The asset's local identifier.") var identifier: String
    @Flag(inversion: .prefixedNo, help: "Mark as favorite (or not).") var favorite: Bool?
    @Flag(inversion: .prefixedNo, help: "Hide (or show).") var hidden: Bool?

    func run() async throws {
        global.bootstrapLogging()
        guard favorite != nil || hidden != nil else {
            throw CLIFailure(
                message: "say what to set: --favorite, --no-favorite, --hidden or --no-hidden", exitStatus: .usage)
        }
        let library = try library.open()
        try await LibraryCLI.mapping {
            if let favorite { try await library.setFavorite(identifier, favorite) }
            if let hidden { try await library.setHidden(identifier, hidden) }
        }
    }
}

struct LibraryAlbumsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "albums", abstract: "List collections: user albums, folders, smart albums and moments.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @Flag(name: .long, help: "One JSON object per collection per line.") var json = false

    func run() async throws {
        global.bootstrapLogging()
        let library = try library.open()
        for collection in try await LibraryCLI.mapping({ try await library.collections() }) {
            if json {
                CLI.printLine(CLI.jsonLine(collection))
            } else {
                let subtype = collection.assetCollectionSubtype.map { " \($0.name)" } ?? ""
                CLI.printLine(
                    [
                        collection.localIdentifier, collection.assetCollectionType.name + subtype,
                        "\(collection.estimatedAssetCount)", collection.localizedTitle,
                    ].joined(separator: "  ")
                )
            }
        }
    }
}

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
