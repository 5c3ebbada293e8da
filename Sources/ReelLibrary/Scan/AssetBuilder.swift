import Foundation

/// Builds an asset's PhotoKit fields from its files' facts: the primary file's, and the paired
/// movie's for a Live Photo.
enum AssetBuilder {
    /// The asset a file makes on its own (a photo, a video, or a Motion Photo).
    static func asset(from file: FileRecord, addedDate: Date) -> LibraryAsset {
        let facts = file.facts
        var subtypes: MediaSubtypes = []
        var style: PlaybackStyle
        switch facts.mediaType {
        case .video:
            style = .video
            if let rate = facts.frameRate, rate >= 100 { subtypes.insert(.videoHighFrameRate) }
        default:
            style = facts.isAnimated ? .imageAnimated : .image
            if facts.isHDR { subtypes.insert(.photoHDR) }
        }
        var pairing: PairingKind?
        var still: Double?
        if let motion = facts.motionPhoto {
            subtypes.insert(.photoLive)
            style = .livePhoto
            pairing = .motionPhoto
            still = motion.presentationTimestampMicroseconds.map { Double($0) / 1_000_000 }
        }
        var location: LibraryLocation?
        if let latitude = facts.latitude, let longitude = facts.longitude {
            location = LibraryLocation(latitude: latitude, longitude: longitude, altitude: facts.altitude)
        }
        return LibraryAsset(
            localIdentifier: "", mediaType: facts.mediaType, mediaSubtypes: subtypes, pixelWidth: facts.pixelWidth ?? 0,
            pixelHeight: facts.pixelHeight ?? 0, duration: facts.mediaType == .video ? facts.duration ?? 0 : 0,
            creationDate: facts.creationDate, creationTimeZoneOffset: facts.creationTimeZoneOffset,
            modificationDate: Date(timeIntervalSince1970: Double(file.stamp.modifiedNanoseconds) / 1e9),
            location: location, burstIdentifier: facts.burstIdentifier, playbackStyle: style,
            originalFilename: file.name, contentIdentifier: facts.contentIdentifier, pairing: pairing,
            stillImageTime: still, contentHash: file.contentHash, path: file.path, addedDate: addedDate)
    }

    /// The photo's asset with `video` as its paired movie.
    static func paired(_ photo: LibraryAsset, video: FileRecord, kind: PairingKind) -> LibraryAsset {
        var asset = photo
        asset.mediaSubtypes.insert(.photoLive)
        asset.playbackStyle = .livePhoto
        asset.pairing = kind
        asset.stillImageTime = video.facts.stillImageTime
        return asset
    }

    /// The photo's asset without its movie.
    static func unpaired(_ photo: LibraryAsset) -> LibraryAsset {
        var asset = photo
        asset.mediaSubtypes.remove(.photoLive)
        asset.playbackStyle = .image
        asset.pairing = nil
        asset.stillImageTime = nil
        return asset
    }
}
