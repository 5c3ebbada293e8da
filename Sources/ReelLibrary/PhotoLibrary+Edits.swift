import Foundation
import ReelExport
import ReelSystem

/// What an edit records about itself (`PHAdjustmentData`): who made it, in which format, and the
/// editor's own bytes, written to the AAE property list beside the original.
public struct AdjustmentData: Sendable, Equatable {
    public var formatIdentifier: String
    public var formatVersion: String
    public var data: Data

    public init(formatIdentifier: String, formatVersion: String, data: Data) {
        self.formatIdentifier = formatIdentifier
        self.formatVersion = formatVersion
        self.data = data
    }
}

/// An edit to save (`PHContentEditingOutput`): the rendered photo (`renderedContentURL`, a JPEG or
/// HEIC) and its adjustment data.
public struct ContentEditingOutput: Sendable, Equatable {
    public var adjustmentData: AdjustmentData
    public var renderedContentURL: URL

    public init(adjustmentData: AdjustmentData, renderedContentURL: URL) {
        self.adjustmentData = adjustmentData
        self.renderedContentURL = renderedContentURL
    }
}

/// Edits as Photos keeps them (`EditLayout`): the rendered edit and an AAE beside the original, which
/// is never touched; the folder is then scanned, so the asset, its resources and the change history
/// are what a rescan of the same files gives.
extension PhotoLibrary {
    /// Saves `output` as the asset's edit (`PHAssetChangeRequest.contentEditingOutput`): the rendered
    /// photo copied byte for byte to `IMG_E1234.JPG` (or `.HEIC`) and the adjustment data to
    /// `IMG_1234.AAE` beside `IMG_1234.HEIC`, each atomically and never over a file that is not this
    /// asset's edit; a previous edit's files are replaced (or removed, an edited movie among them).
    /// Returns the asset as it is now (`hasAdjustments` true). Throws `LibraryError`:
    /// `.invalidArgument` (not a photo asset, a rendered file that is not a JPEG or HEIC, adjustment
    /// data without an identifier, version or over 512 KiB, an original whose name has no edit name),
    /// `.stale`, `.writeFailed` (a name taken by another file), `.busy`.
    @discardableResult
    public func applyEdit(_ output: ContentEditingOutput, to asset: LibraryAsset) async throws -> LibraryAsset {
        let stored = try await storedPhoto(asset.localIdentifier)
        _ = try await resolve(asset.localIdentifier, resource: .photo)
        let adjustment = output.adjustmentData
        guard !adjustment.formatIdentifier.isEmpty, adjustment.formatIdentifier.utf8.count <= 256,
            !adjustment.formatVersion.isEmpty, adjustment.formatVersion.utf8.count <= 64
        else {
            throw LibraryError(.invalidArgument, "an edit needs a format identifier and a format version")
        }
        guard adjustment.data.count <= AAEParser.maxDataBytes else {
            throw LibraryError(
                .invalidArgument,
                "adjustment data of \(adjustment.data.count) bytes is over the limit of \(AAEParser.maxDataBytes)")
        }
        let rendered = output.renderedContentURL.path
        do {
            try ReelExport.Asset.checkAccess(output.renderedContentURL, limits: limits)
        } catch {
            throw LibraryError(.invalidArgument, error.message)
        }
        let facts: FileFacts
        do {
            facts = try FileInspector.inspect(path: rendered, limits: limits)
        } catch {
            throw LibraryError(.invalidArgument, "\(rendered) is not a rendered photo: \(error.reason)")
        }
        guard facts.mediaType == .image, facts.format == "jpeg" || facts.format == "heic" else {
            throw LibraryError(
                .invalidArgument,
                "\(rendered) is not a JPEG or HEIC photo (\(facts.format)): an edit is rendered as one")
        }
        let names = try editNames(of: stored.asset, renderedExtension: facts.format == "jpeg" ? "JPG" : "HEIC")
        for (target, current) in [(names.rendered, stored.fullSizePhotoPath), (names.data, stored.adjustmentDataPath)]
        where target != current && FileManager.default.fileExists(atPath: target) {
            throw LibraryError(.writeFailed, "\(target) already exists and is not this asset's edit")
        }
        let plist: Data
        do {
            plist = try AAEParser.propertyList(
                formatIdentifier: adjustment.formatIdentifier, formatVersion: adjustment.formatVersion,
                data: adjustment.data)
        } catch {
            throw LibraryError(.invalidArgument, "the adjustment data cannot be written as a property list: \(error)")
        }
        let source = AssetResource(
            type: .fullSizePhoto, assetLocalIdentifier: stored.asset.localIdentifier,
            uniformTypeIdentifier: facts.uniformTypeIdentifier, originalFilename: names.rendered, path: rendered,
            offset: 0, length: Int64(try fileSize(rendered)), contentHash: nil)
        let previous = stored.editPaths.filter { $0 != names.rendered && $0 != names.data }
        let replaceRendered = names.rendered == stored.fullSizePhotoPath
        let replaceData = names.data == stored.adjustmentDataPath
        let failure: LibraryError? = await onOwnThread(named: "reel-library") {
            do throws(LibraryError) {
                try ResourceWriter.write(source, to: names.rendered, overwrite: replaceRendered)
                do throws(AtomicFile.Failure) {
                    try AtomicFile.write(plist, to: names.data, replacing: replaceData)
                } catch {
                    throw LibraryError(.writeFailed, error.message)
                }
                for path in previous where unlink(path) != 0 && errno != ENOENT {
                    throw LibraryError(.writeFailed, "cannot remove \(path): \(String(cString: strerror(errno)))")
                }
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
        _ = try await scan([PathParts.folder(of: stored.asset.path)])
        return try await self.asset(stored.asset.localIdentifier)
    }

    /// Removes the asset's edit (`PHAssetChangeRequest.revertAssetContentToOriginal()`): its rendered
    /// photo, AAE and edited movie are deleted, the original stays as it is, and the asset has no
    /// adjustments. An asset without an edit is returned unchanged. Throws `LibraryError`.
    @discardableResult
    public func revertEdit(of asset: LibraryAsset) async throws -> LibraryAsset {
        let stored = try await storedPhoto(asset.localIdentifier)
        guard !stored.editPaths.isEmpty else { return stored.asset }
        let paths = stored.editPaths
        let failure: LibraryError? = await onOwnThread(named: "reel-library") {
            for path in paths where unlink(path) != 0 && errno != ENOENT {
                return LibraryError(.writeFailed, "cannot remove \(path): \(String(cString: strerror(errno)))")
            }
            return nil
        }
        if let failure { throw failure }
        _ = try await scan([PathParts.folder(of: stored.asset.path)])
        return try await self.asset(stored.asset.localIdentifier)
    }

    /// The stored photo asset `identifier` names.
    private func storedPhoto(_ identifier: String) async throws -> StoredAsset {
        guard let stored = try await store.assets(localIdentifiers: [identifier]).first else {
            throw LibraryError(.notFound, "no asset \(identifier) in the library")
        }
        guard stored.asset.mediaType == .image else {
            throw LibraryError(.invalidArgument, "asset \(identifier) is not a photo: only photos are edited")
        }
        return stored
    }

    /// Where an edit of `asset` goes: `IMG_E1234.<ext>` and `IMG_1234.AAE` beside `IMG_1234.HEIC`, in
    /// the case of the original's extension.
    private func editNames(of asset: LibraryAsset, renderedExtension: String) throws(LibraryError) -> (
        rendered: String, data: String
    ) {
        let folder = PathParts.folder(of: asset.path)
        let name = PathParts.name(of: asset.path)
        let stem = PathParts.stem(ofName: name)
        guard let edited = EditLayout.editedStem(ofOriginal: stem) else {
            throw LibraryError(
                .invalidArgument,
                "\(name) has no edit name: the layout Photos uses needs a name ending in _ and digits (IMG_1234)")
        }
        let ext = PathParts.pathExtension(ofName: name)
        let lower = !ext.isEmpty && ext == ext.lowercased()
        return (
            folder + "/" + edited + "." + (lower ? renderedExtension.lowercased() : renderedExtension),
            folder + "/" + stem + (lower ? ".aae" : ".AAE")
        )
    }

    private func fileSize(_ path: String) throws(LibraryError) -> Int {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw LibraryError(.invalidArgument, "\(path) is not a readable file")
        }
        return Int(status.st_size)
    }
}
