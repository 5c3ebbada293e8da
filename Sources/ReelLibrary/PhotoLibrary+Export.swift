import Foundation
import ReelExport
import ReelMedia
import ReelSystem

/// The library as exports see it (`AssetLibrary`): `library:<id>` inputs resolved to the file, or
/// the byte range, holding the resource, and finished outputs saved back as new assets.
extension PhotoLibrary: AssetLibrary {
    /// `AssetLibrary.resolve`: the resource as `resolve(_:resource:)` finds it, with the file's
    /// stamp and the asset's capture date, place and content identifier. `LibraryError`s become
    /// `ExportError`s: `.notFound` is `unknown-asset`, `.stale` `asset-changed`, the rest `internal`.
    public func resolve(_ identifier: String, resource: String?) async throws(ExportError) -> LibrarySource {
        let reference = LibraryReference.scheme + identifier
        var type: AssetResourceType?
        if let resource {
            guard let named = AssetResourceType(name: resource) else {
                throw ExportError(
                    .invalidArgument,
                    "unknown resource type '\(resource)'; use a PhotoKit name such as pairedVideo, video or photo")
            }
            type = named
        }
        do {
            let found = try await self.resolve(identifier, resource: type)
            let asset = try await asset(identifier)
            guard let file = try await store.files(atPaths: [found.path]).first else {
                throw LibraryError(.stale, "\(found.path) is no longer in the library")
            }
            let whole = found.offset == 0 && found.length == file.stamp.size
            return LibrarySource(
                identifier: identifier, resource: found.type.name, path: found.path,
                byteRange: whole ? nil : ByteRange(offset: found.offset, length: found.length),
                fileBytes: file.stamp.size, modifiedNanoseconds: file.stamp.modifiedNanoseconds,
                contentHash: file.contentHash,
                creationDate: asset.creationDate.map {
                    PhotoLibrary.quickTimeDate($0, offset: asset.creationTimeZoneOffset)
                }, location: asset.location?.iso6709, contentIdentifier: asset.contentIdentifier,
                originalFilename: found.originalFilename,
                stillImageTime: found.type == .pairedVideo ? asset.stillImageTime : nil)
        } catch let error as LibraryError {
            switch error.code {
            case .notFound: throw ExportError(.unknownAsset, "\(reference): \(error.message)", retryable: false)
            case .stale:
                throw ExportError(
                    .assetChanged, "\(reference): \(error.message); rescan the library and submit again",
                    retryable: false)
            case .invalidArgument: throw ExportError(.invalidArgument, "\(reference): \(error.message)")
            default: throw ExportError(.internal, "\(reference): the library failed: \(error.message)")
            }
        } catch {
            throw ExportError(.internal, "\(reference): the library failed: \(error)")
        }
    }

    /// `AssetLibrary.saveOutput`: `addFile(at:)`, its errors as `ExportError`s (`save-failed`,
    /// retryable, unless the file is not one the library indexes: `unreadable-input`).
    public func saveOutput(at path: String, from source: LibrarySource?) async throws(ExportError) -> String {
        do {
            return try await addFile(at: path).localIdentifier
        } catch let error as LibraryError {
            if error.code == .invalidArgument {
                throw ExportError(.unreadableInput, "cannot save \(path) to the library: \(error.message)")
            }
            throw ExportError(.saveFailed, "cannot save \(path) to the library: \(error.message)")
        } catch {
            throw ExportError(.saveFailed, "cannot save \(path) to the library: \(error)")
        }
    }

    /// Adds the file at `path` to the library where it is, as an asset of its own
    /// (`PHAssetCreationRequest` with a file the library keeps in place): read, hashed and parsed as
    /// a scan would, and paired by the same rules. Idempotent: a file already recorded at `path` with
    /// the same size and modification time is not read again, and its asset is returned, so saving
    /// after a crash neither loses nor duplicates. Waits up to `lockWait` for a running scan.
    /// Throws `LibraryError` (`.invalidArgument` when the file cannot be indexed, `.busy`, store
    /// failures).
    public func addFile(at path: String, lockWait: Duration = .seconds(30)) async throws -> LibraryAsset {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        let stamp = try Self.walked(absolute, named: path).stamp
        do {
            try ReelExport.Asset.checkAccess(URL(fileURLWithPath: absolute), limits: limits)
        } catch {
            throw LibraryError(.invalidArgument, error.message)
        }
        guard databasePath != nil else {
            // A store without a file: its own lock, shared with every machine saving to it.
            return try await store.exclusively(waitingUpTo: lockWait) {
                try await self.addFileHoldingLock(absolute, stamp: stamp, named: path)
            }
        }
        let lock = try await ScanLock.waiting(databasePath: databasePath, for: lockWait)
        defer { lock.release() }
        return try await addFileHoldingLock(absolute, stamp: stamp, named: path)
    }

    private func addFileHoldingLock(_ absolute: String, stamp: FileStamp, named path: String) async throws
        -> LibraryAsset
    {
        let known = try await store.files(atPaths: [absolute]).first
        if let known, known.stamp == stamp, let stored = try await store.asset(containingPath: absolute) {
            return stored.asset
        }
        let walked = WalkedFile(path: absolute, name: (absolute as NSString).lastPathComponent, stamp: stamp)
        var record = try await read(walked, named: path)
        if ContentKey.isSampled(size: record.stamp.size) {
            // A sampled key another file holds is kept only for the same bytes, as a scan does.
            try await KeyConfirmation(store: store).confirm(&record, removed: [], changed: [])
        }
        let state = ScanState(store: store, addedDate: Date())
        if known != nil {
            try await state.resolve(new: [], changed: [record], moved: [])
        } else {
            try await state.resolve(new: [record], changed: [], moved: [])
        }
        guard let stored = try await store.asset(containingPath: absolute) else {
            throw LibraryError(.storeFailed, "\(path) was indexed but no asset holds it")
        }
        return stored.asset
    }

    /// `2024-05-01T12:00:00+0200`: what QuickTime's `com.apple.quicktime.creationdate` holds, in the
    /// camera's offset when it recorded one (UTC otherwise).
    static func quickTimeDate(_ date: Date, offset: Int?) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        formatter.timeZone = TimeZone(secondsFromGMT: offset ?? 0) ?? TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}

extension ScanLock {
    /// The scan lock, trying again every 0.2 s for up to `limit` while another scan holds it.
    static func waiting(databasePath: String?, for limit: Duration) async throws -> ScanLock {
        let deadline = ContinuousClock.now + limit
        while true {
            let attempt = Result { () throws(LibraryError) in try ScanLock(databasePath: databasePath) }
            switch attempt {
            case .success(let lock): return lock
            case .failure(let error):
                if error.code != .busy || ContinuousClock.now >= deadline { throw error }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
