import Foundation
import ReelExport
import ReelMedia
import ReelSystem

/// PhotoKit's names over the library's calls, so code written against PhotoKit reads the same:
/// `PHAsset` is `PhotoLibrary.Asset`, `PHImageManager.requestExportSession(forVideo:options:exportPreset:)`
/// is `requestExportSession(forVideo:options:exportPreset:)`, `PHAssetCreationRequest` is
/// `AssetCreationRequest` with `performChanges(_:)`. Nothing here has behaviour of its own: each call is
/// one of the library's (`fetchAssets`, `resources(for:)`, `writeData`, `resolve`, `addFile`).
extension PhotoLibrary {
    /// An asset of the library (`PHAsset`): PhotoKit's fields with PhotoKit's names and raw values.
    public typealias Asset = LibraryAsset

    /// What `requestExportSession(forVideo:options:exportPreset:)` exports (`PHVideoRequestOptions`).
    public struct VideoRequestOptions: Sendable, Equatable {
        /// The resource to export; nil (the default) takes a Live or Motion Photo's motion (its
        /// `pairedVideo`), else the asset's own video.
        public var resource: AssetResourceType?

        public init(resource: AssetResourceType? = nil) {
            self.resource = resource
        }
    }

    /// An export session for a video asset, or a Live or Motion Photo's motion
    /// (`PHImageManager.requestExportSession(forVideo:options:exportPreset:)`): the session's asset is
    /// the resource's bytes read in place (a Motion Photo's embedded MP4 as a byte range of its photo,
    /// never copied out), and its metadata carries the asset's capture date and place. Set the
    /// session's `outputURL` and call `export()` as with any `ExportSession`.
    ///
    /// Throws `ExportError`: `unknown-asset` (no such asset or resource), `asset-changed` (its file
    /// changed or vanished since it was indexed), `unknown-preset`, or what probing the bytes throws.
    public func requestExportSession(
        forVideo asset: Asset, options: VideoRequestOptions = VideoRequestOptions(), exportPreset: String,
        presets: PresetLibrary = .shipped
    ) async throws(ExportError) -> ExportSession {
        let source = try await resolve(asset.localIdentifier, resource: options.resource?.name)
        try source.checkUnchanged()
        let probed = try await ReelExport.Asset.load(
            URL(fileURLWithPath: source.path), byteRange: source.byteRange?.range, limits: limits)
        let session = try ExportSession(asset: probed, presetName: exportPreset, presets: presets, limits: limits)
        session.metadataOverrides = source.metadata(saving: false, keepContentIdentifier: false)
        return session
    }

    /// Adds the assets a creation request describes (`PHPhotoLibrary.performChanges` with a
    /// `PHAssetCreationRequest`) and returns the local identifier of the asset created
    /// (`placeholderForCreatedAsset.localIdentifier`). Each resource's file is copied (or, with
    /// `shouldMoveFile`, moved) into the request's folder under its `originalFilename`, atomically
    /// and never over another file, then indexed; without a folder it is indexed where it is. A photo
    /// and a pairedVideo with one content identifier become one Live Photo. Saving the same file
    /// again names the asset it already is. Throws `LibraryError`.
    public func performChanges(_ request: AssetCreationRequest) async throws -> String {
        guard let primary = request.resources.first(where: { $0.type != .pairedVideo }) ?? request.resources.first
        else {
            throw LibraryError(.invalidArgument, "a creation request needs a resource")
        }
        var created: LibraryAsset?
        for resource in [primary] + request.resources.filter({ $0 != primary }) {
            var path = resource.fileURL.path
            if let folder = request.folder {
                path = try await place(resource, into: folder)
            }
            let asset = try await addFile(at: path)
            if resource == primary { created = asset }
        }
        guard let created else { throw LibraryError(.storeFailed, "the request created no asset") }
        // A pairedVideo added after its photo joins the photo's asset: name the asset as it is now.
        return try await store.asset(containingPath: created.path)?.asset.localIdentifier ?? created.localIdentifier
    }

    /// Copies or moves a creation request's file into `folder`, named as asked; returns where it went.
    private func place(_ resource: AssetCreationRequest.Resource, into folder: String) async throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let source = resource.fileURL.path
        do {
            try ReelExport.Asset.checkAccess(resource.fileURL, limits: limits)
        } catch {
            throw LibraryError(.invalidArgument, error.message)
        }
        let name = resource.options.originalFilename ?? resource.fileURL.lastPathComponent
        let move = resource.options.shouldMoveFile
        let limits = limits
        let placed: Result<String, LibraryError> = await onOwnThread(named: "reel-library") {
            do {
                return .success(try Importer.place(source, into: folder, named: name, move: move, limits: limits))
            } catch let error as LibraryError {
                return .failure(error)
            } catch {
                return .failure(LibraryError(.writeFailed, "\(error)"))
            }
        }
        return try placed.get()
    }
}

/// A request to add an asset (`PHAssetCreationRequest`): `forAsset()`, then `addResource(with:fileURL:
/// options:)` for its photo or video (and a Live Photo's pairedVideo), handed to
/// `PhotoLibrary.performChanges(_:)`.
public struct AssetCreationRequest: Sendable, Equatable {
    /// How a resource's file is added (`PHAssetResourceCreationOptions`).
    public struct ResourceOptions: Sendable, Equatable {
        /// Move the file into the library's folder instead of copying it.
        public var shouldMoveFile: Bool
        /// The name it gets there (default: its own).
        public var originalFilename: String?

        public init(shouldMoveFile: Bool = false, originalFilename: String? = nil) {
            self.shouldMoveFile = shouldMoveFile
            self.originalFilename = originalFilename
        }
    }

    /// One file of the asset.
    public struct Resource: Sendable, Equatable {
        public var type: AssetResourceType
        public var fileURL: URL
        public var options: ResourceOptions
    }

    /// The library folder files are copied or moved into; nil adds them where they are.
    public var folder: String?
    public private(set) var resources: [Resource] = []

    public init(folder: String? = nil) {
        self.folder = folder
    }

    /// A request for a new asset (`PHAssetCreationRequest.forAsset()`), its files going to `folder`.
    public static func forAsset(in folder: String? = nil) -> AssetCreationRequest {
        AssetCreationRequest(folder: folder)
    }

    /// Adds a file to the asset: `.photo` or `.video`, and `.pairedVideo` for a Live Photo's movie.
    public mutating func addResource(
        with type: AssetResourceType, fileURL: URL, options: ResourceOptions = ResourceOptions()
    ) {
        resources.append(Resource(type: type, fileURL: fileURL, options: options))
    }
}
