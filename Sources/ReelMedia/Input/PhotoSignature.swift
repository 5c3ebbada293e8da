/// Still photos recognised by their first bytes, never by their names: what decides that a file is a
/// photo (rendered by the Photos trait's ReelImage) rather than a video (FFmpeg's), and what the
/// export's refusal of a photo names.
public enum PhotoSignature: String, Sendable, CaseIterable {
    /// HEIF with HEVC pictures (`ftyp` brand heic, heix, heim, heis) or a plain HEIF (mif1, mif2).
    case heif
    /// AV1 pictures in HEIF (`ftyp` brand avif).
    case avif
    /// JPEG (SOI marker followed by another marker).
    case jpeg
    /// PNG (its eight-byte signature).
    case png
    /// WebP (`RIFF` … `WEBP`).
    case webp
    /// A GIF with exactly one picture (an animated GIF is not a photo).
    case gif

    /// The name people use for the format.
    public var name: String {
        switch self {
        case .heif: "HEIC"
        case .avif: "AVIF"
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .webp: "WebP"
        case .gif: "GIF"
        }
    }

    /// `ftyp` major brands of still images (image sequences such as msf1/avis are not photos).
    static let heifBrands: Set<String> = ["heic", "heix", "heim", "heis", "mif1", "mif2"]

    /// The photo format `head` (a file's first bytes; the first 64 KB suffice for every case but a
    /// GIF's frame count) starts with, or nil when it is not a still photo.
    public static func detect(_ head: [UInt8]) -> PhotoSignature? {
        if head.count >= 4, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            return .webp
        }
        if head.count >= 12, Array(head[4..<8]) == Array("ftyp".utf8) {
            let major = String(decoding: head[8..<12], as: UTF8.self)
            if major == "avif" { return .avif }
            if heifBrands.contains(major) { return .heif }
            return nil
        }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) {
            return gifFrames(head) == 1 ? .gif : nil
        }
        return nil
    }

    /// How many pictures the GIF in `bytes` has (counting up to 2), or nil when its blocks run past
    /// the bytes given or make no sense.
    static func gifFrames(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 13 else { return nil }
        var position = 13
        if bytes[10] & 0x80 != 0 { position += 3 << (Int(bytes[10] & 0x07) + 1) }
        /// Skips data sub-blocks (a length byte, then that many bytes, until a zero length).
        func skipSubBlocks() -> Bool {
            while position < bytes.count {
                let length = Int(bytes[position])
                position += 1
                if length == 0 { return true }
                position += length
            }
            return false
        }
        var frames = 0
        while position < bytes.count {
            switch bytes[position] {
            case 0x21:  // extension: label, then sub-blocks
                position += 2
                guard skipSubBlocks() else { return frames > 0 ? frames : nil }
            case 0x2C:  // image descriptor, optional local colour table, LZW code size, sub-blocks
                guard position + 10 <= bytes.count else { return nil }
                let packed = bytes[position + 9]
                position += 10
                if packed & 0x80 != 0 { position += 3 << (Int(packed & 0x07) + 1) }
                position += 1
                // A picture that runs past the bytes given is one more (whether others follow is unknown).
                guard skipSubBlocks() else { return frames + 1 }
                frames += 1
                if frames > 1 { return frames }
            case 0x3B:
                return frames
            default:
                return frames > 0 ? frames : nil
            }
        }
        return frames > 0 ? frames : nil
    }
}
