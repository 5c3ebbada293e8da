import Foundation

extension PhotoLibrary {
    /// Smart albums Reel computes, each from a real marker (`PHAssetCollectionSubtype` names).
    static let smartAlbums: [(AssetCollectionSubtype, String)] = [
        (.smartAlbumUserLibrary, "Recents"), (.smartAlbumVideos, "Videos"), (.smartAlbumLivePhotos, "Live Photos"),
        (.smartAlbumSlomoVideos, "Slo-mo"), (.smartAlbumFavorites, "Favorites"), (.smartAlbumAllHidden, "Hidden"),
        (.smartAlbumRecentlyAdded, "Recently Added"), (.smartAlbumBursts, "Bursts"), (.smartAlbumAnimated, "Animated"),
    ]

    /// How long an asset counts as recently added: PhotoKit's Recently Added shows 30 days.
    static let recentlyAdded: TimeInterval = 30 * 86_400

    /// Every collection: user albums, one album per scanned folder, smart albums, moments.
    public func collections() async throws -> [AssetCollection] {
        var result: [AssetCollection] = []
        for album in try await store.albums() {
            result.append(
                AssetCollection(
                    localIdentifier: album.identifier, localizedTitle: album.title, assetCollectionType: .album,
                    assetCollectionSubtype: .albumRegular, estimatedAssetCount: album.assetCount))
        }
        for folder in try await store.assetFolders() {
            result.append(
                AssetCollection(
                    localIdentifier: "folder:" + folder.folder,
                    localizedTitle: (folder.folder as NSString).lastPathComponent,
                    assetCollectionType: .album, assetCollectionSubtype: .albumSyncedAlbum,
                    estimatedAssetCount: folder.count))
        }
        for (subtype, title) in PhotoLibrary.smartAlbums {
            let count = try await store.countAssets(try smartQuery(subtype, FetchOptions()))
            result.append(
                AssetCollection(
                    localIdentifier: "smart:" + subtype.name, localizedTitle: title, assetCollectionType: .smartAlbum,
                    assetCollectionSubtype: subtype, estimatedAssetCount: count))
        }
        result += try await moments().map(\.collection)
        return result
    }

    /// Assets in a collection (`fetchAssets(in:options:)`), by the collection's identifier.
    /// Throws `.notFound` for an identifier no collection has.
    public func fetchAssets(inCollection identifier: String, options: FetchOptions = FetchOptions()) async throws
        -> [LibraryAsset]
    {
        if identifier.hasPrefix("album:") {
            _ = try await store.albumMembers(identifier)
            return try await store.fetchAssets(options.query(.userAlbum(identifier))).map(\.asset)
        }
        if identifier.hasPrefix("folder:") {
            return try await store.fetchAssets(options.query(.folder(String(identifier.dropFirst(7))))).map(\.asset)
        }
        if identifier.hasPrefix("smart:"),
            let subtype = AssetCollectionSubtype.allCases.first(where: { "smart:" + $0.name == identifier }),
            PhotoLibrary.smartAlbums.contains(where: { $0.0 == subtype })
        {
            return try await store.fetchAssets(try smartQuery(subtype, options)).map(\.asset)
        }
        if identifier.hasPrefix("moment:"),
            let moment = try await moments().first(where: { $0.collection.localIdentifier == identifier })
        {
            return try await store.fetchAssets(options.query(.identifiers(moment.members))).map(\.asset)
        }
        throw LibraryError(.notFound, "no collection \(identifier) in the library")
    }

    func smartQuery(_ subtype: AssetCollectionSubtype, _ options: FetchOptions) throws -> AssetQuery {
        var query = options.query(.library)
        func and(_ condition: AssetPredicate) {
            query.predicate = query.predicate.map { .and([$0, condition]) } ?? condition
        }
        switch subtype {
        case .smartAlbumVideos: and(.compare(.key(.mediaType), .equal, .integer(Int64(MediaType.video.rawValue))))
        case .smartAlbumLivePhotos:
            and(.compare(.bitAnd(.mediaSubtypes, UInt64(MediaSubtypes.photoLive.rawValue)), .notEqual, .integer(0)))
        case .smartAlbumSlomoVideos:
            and(
                .compare(
                    .bitAnd(.mediaSubtypes, UInt64(MediaSubtypes.videoHighFrameRate.rawValue)), .notEqual, .integer(0)))
        case .smartAlbumFavorites: and(.compare(.key(.isFavorite), .equal, .bool(true)))
        case .smartAlbumAllHidden:
            query.includeHiddenAssets = true
            and(.compare(.key(.isHidden), .equal, .bool(true)))
        case .smartAlbumRecentlyAdded: query.addedSince = Date().addingTimeInterval(-PhotoLibrary.recentlyAdded)
        case .smartAlbumBursts: and(.compare(.key(.burstIdentifier), .notEqual, .null))
        case .smartAlbumAnimated: query.playbackStyle = .imageAnimated
        case .smartAlbumUserLibrary: break
        default: throw LibraryError(.notFound, "no smart album \(subtype.name)")
        }
        return query
    }

    /// Moments: assets grouped by the day they were captured (in the zone the camera recorded, else
    /// UTC) and by place (latitude and longitude to 0.1°, about 11 km; "no place" without GPS).
    func moments() async throws -> [(collection: AssetCollection, members: [String])] {
        let assets = try await store.fetchAssets(
            AssetQuery(sort: [FetchSort(key: .creationDate, ascending: true)], includeAllBurstAssets: true))
        var groups: [String: (title: String, members: [String], start: Date, end: Date)] = [:]
        var order: [String] = []
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd"
        for stored in assets {
            let asset = stored.asset
            guard let date = asset.creationDate else { continue }
            formatter.timeZone =
                TimeZone(secondsFromGMT: asset.creationTimeZoneOffset ?? 0) ?? TimeZone(identifier: "UTC")
            let day = formatter.string(from: date)
            let place = asset.location.map {
                String(format: "%+.1f%+.1f", ($0.latitude * 10).rounded() / 10, ($0.longitude * 10).rounded() / 10)
            }
            let key = "moment:\(day):\(place ?? "none")"
            if groups[key] == nil {
                order.append(key)
                groups[key] = (place.map { "\(day) at \($0)" } ?? day, [], date, date)
            }
            groups[key]!.members.append(asset.localIdentifier)
            groups[key]!.start = min(groups[key]!.start, date)
            groups[key]!.end = max(groups[key]!.end, date)
        }
        return order.map { key in
            let group = groups[key]!
            return (
                AssetCollection(
                    localIdentifier: key, localizedTitle: group.title, assetCollectionType: .moment,
                    assetCollectionSubtype: nil, estimatedAssetCount: group.members.count, startDate: group.start,
                    endDate: group.end), group.members
            )
        }
    }

    // MARK: - User albums

    /// Creates an empty album (`PHAssetCollectionChangeRequest.creationRequestForAssetCollection`).
    public func createAlbum(title: String) async throws -> AssetCollection {
        let identifier = "album:" + LibraryIdentity.randomUUID()
        try await store.apply([.createAlbum(identifier: identifier, title: title)])
        return AssetCollection(
            localIdentifier: identifier, localizedTitle: title, assetCollectionType: .album,
            assetCollectionSubtype: .albumRegular, estimatedAssetCount: 0)
    }

    /// Renames a user album. Throws `.notFound` for an unknown album.
    public func renameAlbum(_ identifier: String, title: String) async throws {
        try await store.apply([.renameAlbum(identifier: identifier, title: title)])
    }

    /// Deletes a user album (its assets stay in the library). Throws `.notFound` for an unknown album.
    public func deleteAlbum(_ identifier: String) async throws {
        try await store.apply([.deleteAlbum(identifier: identifier)])
    }

    /// Adds assets to a user album (kept in the order added; an asset already there stays put).
    public func addAssets(_ identifiers: [String], toAlbum album: String) async throws {
        try await store.apply([.addToAlbum(identifier: album, localIdentifiers: identifiers)])
    }

    /// Takes assets out of a user album (they stay in the library).
    public func removeAssets(_ identifiers: [String], fromAlbum album: String) async throws {
        try await store.apply([.removeFromAlbum(identifier: album, localIdentifiers: identifiers)])
    }
}
