import Foundation
import ReelBoxes

/// A HEIF file's item locations checked before libheif reads it: every extent of every item stored in
/// the file (`iloc` construction method 0) must lie inside the file. A truncated HEIC or one whose
/// `iloc` points elsewhere then fails here, in Reel's words, instead of reaching a decoder with missing
/// or empty data (libdav1d prints its own complaint on stderr when handed none). Read with ReelBoxes,
/// bounds-checked; a file without `meta` or `iloc` is left to libheif.
enum HEIFLayout {
    static func check(_ path: String) throws(PhotoError) {
        let name = (path as NSString).lastPathComponent
        do throws(BoxError) {
            let source = try FileSource(path: path)
            let reader = BoxReader(source)
            let (top, _) = reader.boxesLeniently(in: reader.fileRange)
            guard let meta = top.first(where: { $0.type == "meta" }),
                let iloc = try reader.child("iloc", of: meta)
            else { return }
            let fileSize = UInt64(source.count)
            for (id, location) in try reader.itemLocations(of: iloc).sorted(by: { $0.key < $1.key })
            where location.constructionMethod == 0 {
                for extent in location.extents {
                    // A length of 0 means "to the end of the file": the start must still be inside it.
                    let (start, startOverflow) = location.baseOffset.addingReportingOverflow(extent.offset)
                    let (end, endOverflow) = start.addingReportingOverflow(extent.length)
                    if startOverflow || endOverflow || start >= fileSize || end > fileSize {
                        throw BoxError(
                            .outOfBounds, at: iloc.offset,
                            "item \(id)'s data (\(extent.length) bytes at \(start)) lies outside the file of \(fileSize) bytes; truncated?"
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
