import Foundation
import ReelBoxes

/// A HEIF file's item locations checked before libheif reads it: every extent of every item stored in
/// the file (`iloc` construction method 0) must lie inside the file. A truncated HEIC or one whose
/// `iloc` points elsewhere then fails here, in Reel's words, instead of reaching a decoder with missing
/// or empty data (libdav1d prints its own complaint on stderr when handed none). Read with ReelBoxes,
/// bounds-checked; a file without `meta` or `iloc` is left to libheif.
enum HEIFLayout {
    static let maxItems = 10_000
    static let maxExtents = 1_000

    static func check(_ path: String) throws(PhotoError) {
        let name = (path as NSString).lastPathComponent
        do throws(BoxError) {
            let source = try FileSource(path: path)
            let reader = BoxReader(source)
            let (top, _) = reader.boxesLeniently(in: reader.fileRange)
            guard let meta = top.first(where: { $0.type == "meta" }),
                let iloc = try reader.child("iloc", of: meta)
            else { return }
            var cursor = try reader.cursor(of: iloc, limit: 4 << 20)
            let version = try cursor.u8()
            try cursor.skip(3)
            guard version <= 2 else { throw BoxError(.malformed, at: iloc.offset, "iloc version \(version)") }
            let sizes = try cursor.u16()
            let offsetSize = Int(sizes >> 12)
            let lengthSize = Int(sizes >> 8 & 0xf)
            let baseOffsetSize = Int(sizes >> 4 & 0xf)
            let indexSize = version >= 1 ? Int(sizes & 0xf) : 0
            let count = version < 2 ? Int(try cursor.u16()) : Int(try cursor.u32())
            guard count <= maxItems else {
                throw BoxError(.limitExceeded, at: iloc.offset, "iloc declares \(count) items")
            }
            let fileSize = UInt64(source.count)
            for _ in 0..<count {
                let id = version < 2 ? UInt32(try cursor.u16()) : try cursor.u32()
                var method = 0
                if version >= 1 { method = Int(try cursor.u16() & 0xf) }
                try cursor.skip(2)  // data reference index
                let base = try cursor.unsigned(size: baseOffsetSize)
                let extentCount = Int(try cursor.u16())
                guard extentCount <= maxExtents else {
                    throw BoxError(.limitExceeded, at: iloc.offset, "item \(id) declares \(extentCount) extents")
                }
                for _ in 0..<extentCount {
                    if indexSize > 0 { _ = try cursor.unsigned(size: indexSize) }
                    let offset = try cursor.unsigned(size: offsetSize)
                    let length = try cursor.unsigned(size: lengthSize)
                    guard method == 0 else { continue }
                    // A length of 0 means "to the end of the file": the start must still be inside it.
                    let (start, startOverflow) = base.addingReportingOverflow(offset)
                    let (end, endOverflow) = start.addingReportingOverflow(length)
                    if startOverflow || endOverflow || start >= fileSize || end > fileSize {
                        throw BoxError(
                            .outOfBounds, at: iloc.offset,
                            "item \(id)'s data (\(length) bytes at \(start)) lies outside the file of \(fileSize) bytes; truncated?"
                        )
                    }
                }
            }
        } catch {
            let code: PhotoError.Code = error.kind == .limitExceeded ? .limitExceeded : .unreadable
            let cause =
                error.message.hasPrefix("item ") ? error.message : "its item table (iloc) is damaged: \(error.message)"
            throw PhotoError(code, "\(name): \(cause)")
        }
    }
}
