import Foundation
import ReelSystem

/// An export's poster (`ExportSession.writesPoster`): where it goes, when in the video it is taken,
/// and its temporary file, published with the video by the same `OutputPublisher` steps.
package struct PosterOutput {
    let publisher: OutputPublisher

    /// Checks the poster's name as the video's is checked (`output-exists` unless `overwrite`).
    init(video: URL, asset: URL, tag: String, overwrite: Bool) throws(ExportError) {
        try PosterOutput.check(video: video, asset: asset, overwrite: overwrite)
        let url = PosterOutput.url(forVideo: video)
        TemporaryOutput.removeLeftovers(for: url)
        publisher = try OutputPublisher(destination: url, asset: asset, tag: tag, overwrite: overwrite)
    }

    /// The checks `OutputPublisher.check` makes for the video, made for its poster (at submit, and
    /// again when the export starts).
    package static func check(video: URL, asset: URL, overwrite: Bool) throws(ExportError) {
        let url = url(forVideo: video)
        if url.standardizedFileURL.path == video.standardizedFileURL.path {
            throw ExportError(
                .invalidArgument, "the poster would replace the video itself (\(video.lastPathComponent))")
        }
        try OutputPublisher.check(destination: url, asset: asset, overwrite: overwrite)
    }

    /// `clip.mp4` → `clip.jpg`, beside it.
    package static func url(forVideo video: URL) -> URL { video.deletingPathExtension().appendingPathExtension("jpg") }

    /// Seconds into the export the poster is taken at: `chosen` seconds into the asset (a Live or
    /// Motion Photo's still's moment) when the export includes it; else a tenth of the way in, past
    /// the fade from black many videos open with, and still near the start when the video is long.
    static func moment(of plan: ExportPlan, at chosen: Double? = nil) -> Double {
        let start = plan.timeRange?.start ?? 0
        if let chosen, chosen >= start, chosen - start < plan.durationSeconds { return chosen - start }
        return plan.durationSeconds / 10
    }

    /// A JPEG's size in pixels, from its first start-of-frame segment (SOF0…SOF15 but DHT, JPG and
    /// DAC); nil when the bytes are not a JPEG or have no frame header.
    static func jpegSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var at = 2
        while at + 9 < bytes.count {
            guard bytes[at] == 0xFF else { return nil }
            let marker = bytes[at + 1]
            if marker == 0xFF {
                at += 1
                continue
            }
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                let height = Int(bytes[at + 5]) << 8 | Int(bytes[at + 6])
                let width = Int(bytes[at + 7]) << 8 | Int(bytes[at + 8])
                return width > 0 && height > 0 ? (width, height) : nil
            }
            guard length >= 2, marker != 0xDA else { return nil }
            at += 2 + length
        }
        return nil
    }

    /// Writes the JPEG to the temporary name and syncs it (published later with the video).
    func write(_ bytes: [UInt8]) throws(ExportError) {
        do throws(ExportError) {
            try ExportError.writing { () throws(AtomicFile.Failure) in
                try AtomicFile.writeNew(bytes, at: publisher.temporary.path)
            }
        } catch {
            throw publisher.naming(error)
        }
    }
}
