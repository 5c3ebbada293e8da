import Foundation

/// How identifiers are made: an asset's from its content hash, so the same bytes get the same
/// identifier in any library and after any rescan.
public enum LibraryIdentity {
    /// `UUID/L0/NNN`: the first 128 bits of the content hash as an uppercase UUID, then the copy
    /// number (1 for the first live asset with these bytes, 2 for an identical copy, …), as PhotoKit
    /// spells local identifiers.
    public static func localIdentifier(contentHash: String, copy: Int) -> String {
        let hex = Array(contentHash.uppercased().utf8.prefix(32))
        let padded = hex + [UInt8](repeating: UInt8(ascii: "0"), count: max(0, 32 - hex.count))
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(decoding: padded[$0], as: UTF8.self) }
        return groups.joined(separator: "-") + "/L0/" + String(format: "%03d", copy)
    }

    static func randomUUID() -> String { UUID().uuidString }
}
