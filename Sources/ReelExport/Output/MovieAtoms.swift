import Foundation

/// Reads the top-level box layout of an ISO/QuickTime file.
public enum MovieAtoms {
    /// The top-level box types in file order (`ftyp`, `moov`, `mdat`, …).
    public static func topLevelBoxes(_ url: URL) throws -> [String] {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        var offset: UInt64 = 0
        var boxes: [String] = []
        while offset + 8 <= size, boxes.count < 1000 {
            try handle.seek(toOffset: offset)
            guard let header = try handle.read(upToCount: 16), header.count >= 8 else { break }
            let bytes = [UInt8](header)
            var length = UInt64(bytes[0]) << 24 | UInt64(bytes[1]) << 16 | UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            let type = String(decoding: bytes[4..<8], as: UTF8.self)
            if length == 1, bytes.count >= 16 {
                length = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
            } else if length == 0 {
                length = size - offset
            }
            boxes.append(type)
            guard length >= 8 else { break }
            offset += length
        }
        return boxes
    }

    /// Whether `moov` comes before `mdat` (the file plays while it downloads).
    public static func moovPrecedesMdat(_ url: URL) throws -> Bool {
        let boxes = try topLevelBoxes(url)
        guard let moov = boxes.firstIndex(of: "moov") else { return false }
        guard let mdat = boxes.firstIndex(of: "mdat") else { return true }
        return moov < mdat
    }
}
