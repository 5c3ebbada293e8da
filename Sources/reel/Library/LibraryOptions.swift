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
