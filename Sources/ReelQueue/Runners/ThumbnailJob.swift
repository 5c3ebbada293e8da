import Foundation
import ReelExport

extension ThumbnailSetExport: JobHandle {
    func stop() { cancel() }
}

extension JobSpec {
    /// The thumbnail set this spec asks for (`thumbnails`), set up to publish at `output` under the
    /// attempt's `tag`, `gate` deciding before it is renamed into place: the same `ThumbnailSetExport`
    /// in a worker's process and in an isolated export process. Probes the asset first (off the
    /// caller's thread).
    func thumbnailSet(
        limits: InputLimits, tag: String, gate: @escaping @Sendable () throws(ExportError) -> Void
    ) async throws(ExportError) -> ThumbnailSetExport {
        guard let thumbnails else { throw ExportError(.internal, "the job asks for no thumbnails") }
        let asset = try await loadAsset(limits: limits)
        let set = ThumbnailSetExport(asset: asset, request: thumbnails, destination: URL(fileURLWithPath: output))
        set.overwritesExistingFolder = overwrite
        set.temporaryTag = tag
        set.publishGate = gate
        // A library asset: its still's moment, and files named after the resource (`IMG_0001-001.jpg`).
        set.stillImageTime = library?.stillImageTime
        // A remote asset: named after its URL's file (`clip-001.jpg`), not the download's.
        set.fileStem =
            library?.outputStem
            ?? remote.map { URL(fileURLWithPath: $0.fileName).deletingPathExtension().lastPathComponent }
        return set
    }
}

extension ThumbnailSetExport.Result {
    /// The set as an export's result (`JobResult.export`, the `completed` event's `result`): the
    /// files' total bytes, the pictures' size (the first's), method `transcode`, and a decision
    /// saying what was made.
    var summary: ExportSession.Result {
        let sheets = files.filter { $0 != track }.count
        return ExportSession.Result(
            bytes: bytes, durationSeconds: 0, width: images.first?.width, height: images.first?.height, videoCodec: nil,
            audioCodec: nil, networkOptimized: false, elapsedSeconds: 0, method: .transcode,
            decision: track == nil
                ? "\(images.count) thumbnails"
                : "\(images.count) thumbnails on \(sheets) sprite sheets with a WebVTT track")
    }
}
