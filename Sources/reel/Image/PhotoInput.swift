import Foundation
import ReelExport
import ReelMedia
import ReelSystem

#if Photos
    import ReelImage
#endif

/// Photos on the command line: a file is a photo by its first bytes (ReelMedia's `PhotoSignature`),
/// whatever its name, and is then described and rendered by ReelImage (the Photos trait) instead of
/// FFmpeg. A build without the trait refuses in one line naming the flag.
enum PhotoInput {
    /// The photo format `path` starts with, nil for anything else (a video, a missing file).
    static func signature(_ path: String) -> PhotoSignature? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        // A GIF's frames are counted in its first megabyte, as the export's diagnosis counts them.
        guard let head = try? handle.read(upToCount: 1 << 20) else { return nil }
        return PhotoSignature.detect([UInt8](head))
    }

    #if Photos
        /// A photo's error as the export's, so the exit statuses and codes are the ones documented.
        static func exportError(_ error: PhotoError) -> ExportError {
            switch error.code {
            case .unreadable: ExportError(.unreadableInput, error.message)
            case .limitExceeded: ExportError(.limitExceeded, error.message)
            case .encodeFailed: ExportError(.unsupportedCodec, error.message)
            case .invalidArgument: ExportError(.invalidArgument, error.message)
            case .writeFailed: ExportError(.outputFailed, error.message)
            default: ExportError(.internal, error.message)
            }
        }

        /// Facts the header gives, after the limits' checks on the path (allowed roots, regular file, file
        /// size) and, from the header, before any pixel is decoded, the photo's pixel limit.
        static func info(_ path: String, limits: InputLimits) async throws -> PhotoInfo {
            try Asset.checkAccess(URL(fileURLWithPath: path), limits: limits)
            do {
                return try await PhotoRenderer.loadInfo(path, maxPixels: limits.maxPhotoPixels)
            } catch {
                throw exportError(error)
            }
        }

        /// The photo rendered, after the same checks.
        static func render(_ path: String, _ options: PhotoRenderOptions, limits: InputLimits) async throws
            -> RenderedPhoto
        {
            try Asset.checkAccess(URL(fileURLWithPath: path), limits: limits)
            do {
                return try await PhotoRenderer.rendering(path, options, maxPixels: limits.maxPhotoPixels)
            } catch {
                throw exportError(error)
            }
        }

        /// A quick, degraded picture (a HEIF's embedded thumbnail, a JPEG at 1/8 scale), after the same
        /// checks; nil when the photo has none.
        static func renderDegraded(_ path: String, _ options: PhotoRenderOptions, limits: InputLimits) async throws
            -> RenderedPhoto?
        {
            try Asset.checkAccess(URL(fileURLWithPath: path), limits: limits)
            do {
                return try await PhotoRenderer.renderingDegraded(path, options, maxPixels: limits.maxPhotoPixels)
            } catch {
                throw exportError(error)
            }
        }
    #endif
}
