internal import CFFmpeg

/// Takes an export's poster from its own decode: the first output frame at or after `seconds` into
/// the export, encoded as JPEG on the reader thread before the frame goes to the video encoder (so
/// it is the picture the video shows there, already scaled, tone-mapped and upright).
///
/// Only for 8-bit BT.709 output with square pixels (what `ImageEncoder` reads); an export of
/// anything else (10-bit HDR kept, copied streams) takes its poster from the source instead
/// (`ThumbnailReader`).
final class PosterGrab {
    let seconds: Double
    let quality: Int
    /// The JPEG, once taken.
    private(set) var bytes: [UInt8]?

    init(seconds: Double, quality: Int) {
        self.seconds = seconds
        self.quality = quality
    }

    /// Whether frames of `encoding` can be grabbed as they are.
    static func accepts(_ encoding: VideoEncoding) -> Bool {
        let square = encoding.pixelAspect.numerator == encoding.pixelAspect.denominator
        switch encoding.color {
        case .bt709, .toneMapped: return !encoding.tenBit && square
        case .keepSource: return false
        }
    }

    /// Offers the next output frame, presented at `time` seconds into the export: the first at or
    /// after `seconds` is taken (none when the export ends before it).
    func offer(_ frame: UnsafeMutablePointer<AVFrame>, at time: Double) throws(MediaError) {
        guard bytes == nil, time + 1e-6 >= seconds else { return }
        let encoder = try ImageEncoder(
            format: .jpeg, width: Int(frame.pointee.width), height: Int(frame.pointee.height), quality: quality)
        bytes = try encoder.encode(frame)
    }
}
