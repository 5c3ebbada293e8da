import Foundation

/// What an edit's adjustment data says (`PHAdjustmentData`): the AAE property list Photos writes
/// beside an edited photo (`IMG_1234.AAE`).
public struct AdjustmentInfo: Sendable, Codable, Equatable {
    /// `adjustmentFormatIdentifier` (`com.apple.photo` for Photos' own edits).
    public var formatIdentifier: String
    /// `adjustmentFormatVersion`.
    public var formatVersion: String
    /// `adjustmentBaseVersion`, when present.
    public var baseVersion: Int?
    /// `adjustmentEditorBundleID`, when present.
    public var editorBundleID: String?
    /// `adjustmentTimestamp`, when present.
    public var timestamp: Date?
    /// Bytes of the decoded `adjustmentData`.
    public var dataLength: Int

    public init(
        formatIdentifier: String, formatVersion: String, baseVersion: Int? = nil, editorBundleID: String? = nil,
        timestamp: Date? = nil, dataLength: Int
    ) {
        self.formatIdentifier = formatIdentifier
        self.formatVersion = formatVersion
        self.baseVersion = baseVersion
        self.editorBundleID = editorBundleID
        self.timestamp = timestamp
        self.dataLength = dataLength
    }
}

/// Reads and writes AAE property lists with Foundation's `PropertyListSerialization`, within limits:
/// a file over `maxBytes` is not parsed, and a garbled one is a reason, never a failure of the scan.
public enum AAEParser {
    /// Largest AAE read (Photos' are about 1 KB; a hostile one is not parsed whole).
    public static let maxBytes = 1 << 20
    /// Largest `adjustmentData` accepted, decoded.
    public static let maxDataBytes = 512 * 1024
    /// The uniform type identifier of an AAE file.
    public static let uniformTypeIdentifier = "com.apple.photos.apple-adjustment-envelope"

    /// The adjustment data `bytes` describe, or why they cannot be read.
    public static func parse(_ bytes: [UInt8]) -> Result<AdjustmentInfo, AAEError> {
        guard bytes.count <= maxBytes else {
            return .failure(AAEError("\(bytes.count) bytes, over the limit of \(maxBytes)"))
        }
        // Photos writes XML property lists one dictionary deep. Foundation's parsers recurse, so a
        // hostile file nesting thousands of arrays is refused before it is parsed, and binary lists
        // (which nest by reference) are not read at all.
        guard isXML(bytes) else { return .failure(AAEError("not an XML property list")) }
        guard nestingDepth(bytes) <= maxDepth else {
            return .failure(AAEError("nested deeper than \(maxDepth) levels"))
        }
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)
        } catch {
            return .failure(AAEError("not a property list"))
        }
        guard let dictionary = plist as? [String: Any] else {
            return .failure(AAEError("not a dictionary"))
        }
        guard let identifier = dictionary["adjustmentFormatIdentifier"] as? String, !identifier.isEmpty,
            identifier.utf8.count <= 256
        else { return .failure(AAEError("no adjustmentFormatIdentifier")) }
        let version: String
        if let text = dictionary["adjustmentFormatVersion"] as? String, text.utf8.count <= 64 {
            version = text
        } else if let number = dictionary["adjustmentFormatVersion"] as? NSNumber {
            version = number.stringValue
        } else {
            return .failure(AAEError("no adjustmentFormatVersion"))
        }
        let data: Data
        if let raw = dictionary["adjustmentData"] as? Data {
            data = raw
        } else if let text = dictionary["adjustmentData"] as? String,
            let decoded = Data(base64Encoded: text, options: .ignoreUnknownCharacters)
        {
            data = decoded
        } else {
            return .failure(AAEError("no adjustmentData"))
        }
        guard data.count <= maxDataBytes else {
            return .failure(AAEError("adjustmentData of \(data.count) bytes, over the limit of \(maxDataBytes)"))
        }
        let base = (dictionary["adjustmentBaseVersion"] as? NSNumber)?.intValue
        let editor = (dictionary["adjustmentEditorBundleID"] as? String).flatMap { $0.utf8.count <= 256 ? $0 : nil }
        return .success(
            AdjustmentInfo(
                formatIdentifier: identifier, formatVersion: version, baseVersion: base, editorBundleID: editor,
                timestamp: dictionary["adjustmentTimestamp"] as? Date, dataLength: data.count))
    }

    /// Deepest nesting of arrays and dictionaries read (Photos' AAE files have one dictionary).
    static let maxDepth = 16

    /// Whether `bytes` start (after a byte-order mark and white space) with `<?xml` or `<plist`.
    static func isXML(_ bytes: [UInt8]) -> Bool {
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        while start < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) { start += 1 }
        let rest = bytes[start...]
        return rest.starts(with: Array("<?xml".utf8)) || rest.starts(with: Array("<plist".utf8))
    }

    /// The deepest nesting of `<array>` and `<dict>` elements in `bytes` (self-closing ones do not nest).
    static func nestingDepth(_ bytes: [UInt8]) -> Int {
        var depth = 0
        var deepest = 0
        var index = 0
        let open: [[UInt8]] = [Array("<array".utf8), Array("<dict".utf8)]
        let close: [[UInt8]] = [Array("</array".utf8), Array("</dict".utf8)]
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            let rest = bytes[index...]
            if close.contains(where: { rest.starts(with: $0) }) {
                depth -= 1
            } else if let tag = open.first(where: { rest.starts(with: $0) }) {
                let after = index + tag.count
                if after < bytes.count,
                    [UInt8(ascii: ">"), UInt8(ascii: "/"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[after])
                {
                    var end = after
                    while end < bytes.count, bytes[end] != UInt8(ascii: ">") { end += 1 }
                    if end >= bytes.count || bytes[end - 1] != UInt8(ascii: "/") {
                        depth += 1
                        deepest = max(deepest, depth)
                    }
                }
            }
            index += 1
        }
        return deepest
    }

    /// An AAE property list (XML) for `data` in `formatIdentifier`'s `formatVersion`, as Photos writes.
    public static func propertyList(
        formatIdentifier: String, formatVersion: String, data: Data, editorBundleID: String? = nil,
        timestamp: Date = Date()
    ) throws -> Data {
        var dictionary: [String: Any] = [
            "adjustmentFormatIdentifier": formatIdentifier, "adjustmentFormatVersion": formatVersion,
            "adjustmentBaseVersion": 0, "adjustmentData": data, "adjustmentTimestamp": timestamp,
            "adjustmentRenderTypes": 0,
        ]
        if let editorBundleID { dictionary["adjustmentEditorBundleID"] = editorBundleID }
        return try PropertyListSerialization.data(fromPropertyList: dictionary, format: .xml, options: 0)
    }
}

/// Why an AAE file could not be read.
public struct AAEError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
