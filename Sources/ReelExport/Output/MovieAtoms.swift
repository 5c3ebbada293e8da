import Foundation
import ReelBoxes

/// Reads the top-level box layout of an ISO/QuickTime file, with ReelBoxes' reader.
public enum MovieAtoms {
    /// The top-level box types in file order (`ftyp`, `moov`, `mdat`, …): at most 1,000, up to the
    /// first box that does not fit in the file (a file cut short ends its list there).
    public static func topLevelBoxes(_ url: URL) throws -> [String] {
        let reader = BoxReader(try FileSource(path: url.path), maxBoxes: 1000)
        return reader.boxesLeniently(in: reader.fileRange).boxes.map(\.type.description)
    }

    /// Whether `moov` comes before `mdat` (the file plays while it downloads).
    public static func moovPrecedesMdat(_ url: URL) throws -> Bool {
        let boxes = try topLevelBoxes(url)
        guard let moov = boxes.firstIndex(of: "moov") else { return false }
        guard let mdat = boxes.firstIndex(of: "mdat") else { return true }
        return moov < mdat
    }
}
