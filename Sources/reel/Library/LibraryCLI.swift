import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary
import ReelQueue
import Synchronization

#if Fleet
    import ReelFleet
    import ReelLibraryFleet
#endif

enum LibraryCLI {
    /// Runs `body`, turning a `LibraryError` into the CLI's one-line failure with its exit status.
    static func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LibraryError {
            throw failure(error)
        }
    }

    /// `mapping` for synchronous work (a distinct name: overloads on `async` alone are ambiguous with a
    /// trailing closure).
    static func mappingNow<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as LibraryError {
            throw failure(error)
        }
    }

    static func failure(_ error: LibraryError) -> CLIFailure {
        CLIFailure(
            message: error.message, exitStatus: ExitStatus(error.code), code: error.code.commandCode,
            retryable: error.code.retryable)
    }

    /// An asset as `--json` prints it: PhotoKit's field names and raw values, plus the names of the
    /// raw values for people.
    struct AssetJSON: Encodable {
        var asset: LibraryAsset
        var resources: [ResourceJSON]?
        /// What the scan noted about the asset's files (`show` only): a refused Motion Photo's reason.
        var notes: [String]?

        enum Keys: String, CodingKey {
            case localIdentifier, mediaType, mediaTypeName, mediaSubtypes, mediaSubtypeNames, pixelWidth, pixelHeight
            case duration, creationDate, creationTimeZoneOffset, modificationDate, location, isFavorite, isHidden
            case burstIdentifier, representsBurst, playbackStyle, playbackStyleName, sourceType, originalFilename
            case contentIdentifier, pairing, stillImageTime, contentHash, path, addedDate, hasAdjustments, resources
            case notes
        }

        struct Location: Encodable {
            var latitude: Double
            var longitude: Double
            var altitude: Double?
            var iso6709: String
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(asset.localIdentifier, forKey: .localIdentifier)
            try c.encode(asset.mediaType.rawValue, forKey: .mediaType)
            try c.encode(asset.mediaType.name, forKey: .mediaTypeName)
            try c.encode(asset.mediaSubtypes.rawValue, forKey: .mediaSubtypes)
            try c.encode(asset.mediaSubtypes.names, forKey: .mediaSubtypeNames)
            try c.encode(asset.pixelWidth, forKey: .pixelWidth)
            try c.encode(asset.pixelHeight, forKey: .pixelHeight)
            try c.encode(asset.duration, forKey: .duration)
            try c.encodeIfPresent(asset.creationDate, forKey: .creationDate)
            try c.encodeIfPresent(asset.creationTimeZoneOffset, forKey: .creationTimeZoneOffset)
            try c.encode(asset.modificationDate, forKey: .modificationDate)
            if let location = asset.location {
                try c.encode(
                    Location(
                        latitude: location.latitude, longitude: location.longitude, altitude: location.altitude,
                        iso6709: location.iso6709), forKey: .location)
            }
            try c.encode(asset.isFavorite, forKey: .isFavorite)
            try c.encode(asset.isHidden, forKey: .isHidden)
            try c.encode(asset.hasAdjustments, forKey: .hasAdjustments)
            try c.encodeIfPresent(asset.burstIdentifier, forKey: .burstIdentifier)
            try c.encode(asset.representsBurst, forKey: .representsBurst)
            try c.encode(asset.playbackStyle.rawValue, forKey: .playbackStyle)
            try c.encode(asset.playbackStyle.name, forKey: .playbackStyleName)
            try c.encode(asset.sourceType.rawValue, forKey: .sourceType)
            try c.encode(asset.originalFilename, forKey: .originalFilename)
            try c.encodeIfPresent(asset.contentIdentifier, forKey: .contentIdentifier)
            try c.encodeIfPresent(asset.pairing?.rawValue, forKey: .pairing)
            try c.encodeIfPresent(asset.stillImageTime, forKey: .stillImageTime)
            try c.encode(asset.contentHash, forKey: .contentHash)
            try c.encode(asset.path, forKey: .path)
            try c.encode(asset.addedDate, forKey: .addedDate)
            try c.encodeIfPresent(resources, forKey: .resources)
            try c.encodeIfPresent(notes, forKey: .notes)
        }
    }

    struct ResourceJSON: Encodable {
        var type: Int
        var typeName: String
        var assetLocalIdentifier: String
        var uniformTypeIdentifier: String
        var originalFilename: String
        var path: String
        var offset: Int64
        var bytes: Int64
        var contentHash: String?

        init(_ resource: AssetResource) {
            type = resource.type.rawValue
            typeName = resource.type.name
            assetLocalIdentifier = resource.assetLocalIdentifier
            uniformTypeIdentifier = resource.uniformTypeIdentifier
            originalFilename = resource.originalFilename
            path = resource.path
            offset = resource.offset
            bytes = resource.length
            contentHash = resource.contentHash
        }
    }

    static func describe(_ asset: LibraryAsset) -> String {
        var parts = [asset.localIdentifier, asset.mediaType.name]
        if !asset.mediaSubtypes.isEmpty { parts.append(asset.mediaSubtypes.description) }
        parts.append("\(asset.pixelWidth)x\(asset.pixelHeight)")
        if asset.mediaType == .video { parts.append(String(format: "%.2f s", asset.duration)) }
        if let pairing = asset.pairing { parts.append(pairing.rawValue) }
        if asset.hasAdjustments { parts.append("edited") }
        parts.append(asset.creationDate.map { ISO8601DateFormatter().string(from: $0) } ?? "-")
        parts.append(asset.path)
        return parts.joined(separator: "  ")
    }
}
