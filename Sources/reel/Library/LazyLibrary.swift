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
