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
