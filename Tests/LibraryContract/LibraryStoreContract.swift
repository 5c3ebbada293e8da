import Foundation
import ReelLibrary
import Testing

/// What the contract needs from a store under test.
public protocol LibraryStoreHarness: Sendable {
    /// A fresh, empty store.
    func makeStore() async throws -> any LibraryStore
}

/// The library store's contract, store-agnostic: the SQLite store runs it in ReelLibraryTests; a
/// PostgreSQL store will run the same cases.
public enum LibraryStoreContract {
    public struct Case: Sendable, CustomStringConvertible {
        public let description: String
        let body: @Sendable (any LibraryStore) async throws -> Void
        /// Runs the case against a fresh store from `harness`.
        public func run(_ harness: any LibraryStoreHarness) async throws {
            try await body(try await harness.makeStore())
        }
    }

    public static let cases: [Case] = [
        Case(description: "identifiers come from content, copies are numbered, numbers are reused", body: identifiers),
        Case(description: "an update keeps favorite, hidden and the date added", body: updatesKeepLibraryState),
        Case(description: "a batch is all or none", body: batchesAreAtomic),
        Case(description: "predicates, bit tests, dates, sort and limit select as PhotoKit would", body: fetching),
        Case(description: "hidden assets and burst members are left out unless asked for", body: hiddenAndBursts),
        Case(description: "changes since a token: inserted, updated, deleted; foreign tokens refused", body: changes),
        Case(description: "albums keep their members in order and refuse unknown assets", body: albums),
        Case(description: "files: stamps by folder, folders under a root, lookups, unowned files", body: files),
        Case(description: "skips are recorded and cleared", body: skips),
        Case(
            description: "pairing lookups: by content identifier, unpaired only, by folder and stem",
            body: pairingLookups),
        Case(
            description:
                "an edit's files and hasAdjustments: kept, updated, owned, fetched by predicate, with their files",
            body: edits),
        Case(
            description: "a recorded (imported) Live Photo pairing: stored, read back, found by either file",
            body: importedPairing),
        Case(
            description:
                "every stored field round-trips through insert and update; every predicate key finds its field",
            body: everyField),
    ]

    // MARK: - Builders

    public static func hash(_ seed: Int) -> String {
        String(repeating: String(format: "%02x", seed % 256), count: 32)
    }

    public static func asset(
        _ seed: Int, path: String? = nil, type: MediaType = .image, subtypes: MediaSubtypes = [], duration: Double = 0,
        created: Date? = Date(timeIntervalSince1970: 1_600_000_000), burst: String? = nil,
        contentIdentifier: String? = nil,
        hash: String? = nil
    ) -> StoredAsset {
        let path = path ?? "/photos/a/IMG_\(seed).\(type == .video ? "MOV" : "HEIC")"
        return StoredAsset(
            asset: LibraryAsset(
                localIdentifier: "", mediaType: type, mediaSubtypes: subtypes, pixelWidth: 100 + seed, pixelHeight: 50,
                duration: duration, creationDate: created, modificationDate: Date(timeIntervalSince1970: 1_700_000_000),
                burstIdentifier: burst, playbackStyle: type == .video ? .video : .image,
                originalFilename: (path as NSString).lastPathComponent, contentIdentifier: contentIdentifier,
                contentHash: hash ?? LibraryStoreContract.hash(seed), path: path,
                addedDate: Date(timeIntervalSince1970: 1_700_000_000)))
    }

    static func insert(_ store: any LibraryStore, _ assets: [StoredAsset]) async throws -> [String] {
        try await store.apply(assets.map { .insertAsset($0) }).map { $0! }
    }

    static func ids(_ store: any LibraryStore, _ predicate: String, sort: [FetchSort] = [], limit: Int = 0) async throws
        -> [String]
    {
        try await store.fetchAssets(
            AssetQuery(predicate: try PredicateParser.parse(predicate), sort: sort, limit: limit)
        )
        .map(\.asset.localIdentifier)
    }

    // MARK: - Cases

    static func identifiers(_ store: any LibraryStore) async throws {
        let shared = hash(7)
        let first = try await insert(store, [asset(1, path: "/p/a.HEIC", hash: shared)])[0]
        let second = try await insert(store, [asset(2, path: "/p/copy.HEIC", hash: shared)])[0]
        #expect(first == LibraryIdentity.localIdentifier(contentHash: shared, copy: 1))
        #expect(second == LibraryIdentity.localIdentifier(contentHash: shared, copy: 2))
        #expect(first.hasSuffix("/L0/001") && second.hasSuffix("/L0/002"))
        try await store.apply([.deleteAsset(localIdentifier: first)])
        let third = try await insert(store, [asset(3, path: "/p/again.HEIC", hash: shared)])[0]
        #expect(third == first, "the smallest free copy number is reused")
        await #expect(throws: LibraryError.self) {
            try await store.apply([.deleteAsset(localIdentifier: "nope/L0/001")])
        }
    }

    static func updatesKeepLibraryState(_ store: any LibraryStore) async throws {
        let id = try await insert(store, [asset(1)])[0]
        try await store.apply([.setFavorite(localIdentifier: id, true), .setHidden(localIdentifier: id, true)])
        var changed = asset(1, path: "/p/moved.HEIC")
        changed.asset.localIdentifier = id
        changed.asset.isFavorite = false
        changed.asset.addedDate = Date(timeIntervalSince1970: 0)
        try await store.apply([.updateAsset(changed)])
        let stored = try #require(try await store.assets(localIdentifiers: [id]).first)
        #expect(stored.asset.isFavorite && stored.asset.isHidden)
        #expect(stored.asset.path == "/p/moved.HEIC")
        #expect(stored.asset.addedDate == Date(timeIntervalSince1970: 1_700_000_000))
    }

    static func batchesAreAtomic(_ store: any LibraryStore) async throws {
        await #expect(throws: LibraryError.self) {
            try await store.apply([.insertAsset(asset(1)), .setFavorite(localIdentifier: "missing/L0/001", true)])
        }
        #expect(try await store.countAssets(AssetQuery(includeHiddenAssets: true)) == 0)
        let token = try await store.currentChangeToken()
        #expect(token.sequence == 0, "a failed batch leaves no change behind")
    }

    static func fetching(_ store: any LibraryStore) async throws {
        let day = 86_400.0
        let live = try await insert(
            store, [asset(1, subtypes: .photoLive, created: Date(timeIntervalSince1970: 10 * day))])[0]
        let hdr = try await insert(
            store, [asset(2, subtypes: .photoHDR, created: Date(timeIntervalSince1970: 20 * day))])[0]
        let video = try await insert(
            store,
            [
                asset(
                    3, type: .video, subtypes: .videoHighFrameRate, duration: 12.5,
                    created: Date(timeIntervalSince1970: 30 * day))
            ])[0]
        let undated = try await insert(store, [asset(4, created: nil)])[0]
        #expect(Set(try await ids(store, "(mediaSubtypes & 8) != 0")) == [live])
        #expect(Set(try await ids(store, "(mediaSubtypes & 8) == 0")) == [hdr, video, undated])
        #expect(Set(try await ids(store, "mediaType == 2 AND duration > 10")) == [video])
        #expect(Set(try await ids(store, "creationDate >= \"1970-01-15\" AND creationDate < \"1970-01-31\"")) == [hdr])
        #expect(Set(try await ids(store, "creationDate BETWEEN {\"1970-01-01\", \"1970-01-25\"}")) == [live, hdr])
        #expect(Set(try await ids(store, "localIdentifier IN {\"\(live)\", \"\(video)\"}")) == [live, video])
        #expect(Set(try await ids(store, "SELF == \"\(hdr)\"")) == [hdr])
        #expect(Set(try await ids(store, "NOT (mediaType == 1)")) == [video])
        #expect(Set(try await ids(store, "creationDate == nil")) == [undated])
        #expect(Set(try await ids(store, "pixelWidth > 102 OR pixelHeight < 0")) == [video, undated])
        // An injection attempt is a value, bound, never SQL.
        #expect(try await ids(store, "localIdentifier == \"x' OR 1=1 --\"").isEmpty)
        let byWidth = try await ids(
            store, "TRUEPREDICATE", sort: [FetchSort(key: .pixelWidth, ascending: false)], limit: 2)
        #expect(byWidth == [undated, video])
        let byDate = try await ids(store, "creationDate != nil", sort: [FetchSort(key: .creationDate, ascending: true)])
        #expect(byDate == [live, hdr, video])
        #expect(try await store.countAssets(AssetQuery(predicate: .constant(false))) == 0)
    }

    static func hiddenAndBursts(_ store: any LibraryStore) async throws {
        let shown = try await insert(store, [asset(1)])[0]
        let hidden = try await insert(store, [asset(2)])[0]
        try await store.apply([.setHidden(localIdentifier: hidden, true)])
        let burst = try await insert(
            store,
            [
                asset(3, created: Date(timeIntervalSince1970: 100), burst: "B1"),
                asset(4, created: Date(timeIntervalSince1970: 101), burst: "B1"),
                asset(5, created: Date(timeIntervalSince1970: 102), burst: "B1"),
            ])
        let defaults = Set(try await store.fetchAssets(AssetQuery()).map(\.asset.localIdentifier))
        #expect(defaults == [shown, burst[0]])
        let all = Set(
            try await store.fetchAssets(AssetQuery(includeHiddenAssets: true, includeAllBurstAssets: true)).map(
                \.asset.localIdentifier))
        #expect(all == Set([shown, hidden] + burst))
        let members = try await store.fetchAssets(AssetQuery(includeAllBurstAssets: true)).filter {
            $0.asset.burstIdentifier == "B1"
        }
        #expect(members.filter(\.asset.representsBurst).map(\.asset.localIdentifier) == [burst[0]])
        // PhotoKit's representsBurst is false outside a burst: a plain photo or video represents none.
        let outside = try await store.fetchAssets(AssetQuery(includeHiddenAssets: true)).filter {
            $0.asset.burstIdentifier == nil
        }
        #expect(outside.map(\.asset.localIdentifier).sorted() == [shown, hidden].sorted())
        #expect(outside.allSatisfy { !$0.asset.representsBurst }, "outside a burst, representsBurst is false")
    }

    static func changes(_ store: any LibraryStore) async throws {
        let kept = try await insert(store, [asset(1)])[0]
        let doomed = try await insert(store, [asset(2)])[0]
        let start = try await store.currentChangeToken()
        let added = try await insert(store, [asset(3)])[0]
        try await store.apply([.setFavorite(localIdentifier: kept, true)])
        try await store.apply([.deleteAsset(localIdentifier: doomed)])
        let short = try await insert(store, [asset(4)])[0]
        try await store.apply([.deleteAsset(localIdentifier: short)])
        let changes = try await store.changes(since: start)
        #expect(changes.insertedLocalIdentifiers == [added])
        #expect(changes.updatedLocalIdentifiers == [kept])
        #expect(changes.deletedLocalIdentifiers == [doomed], "an asset born and gone after the token is not reported")
        #expect(changes.token == (try await store.currentChangeToken()))
        let none = try await store.changes(since: changes.token)
        #expect(
            none.insertedLocalIdentifiers.isEmpty && none.updatedLocalIdentifiers.isEmpty
                && none.deletedLocalIdentifiers.isEmpty)
        await #expect(throws: LibraryError.self) {
            try await store.changes(since: LibraryChangeToken(library: "another", sequence: 0))
        }
        await #expect(throws: LibraryError.self) {
            try await store.changes(since: LibraryChangeToken(library: start.library, sequence: start.sequence + 1_000))
        }
        #expect(LibraryChangeToken(start.description) == start)
    }

    static func albums(_ store: any LibraryStore) async throws {
        let ids = try await insert(store, [asset(1), asset(2), asset(3)])
        try await store.apply([.createAlbum(identifier: "album:X", title: "Trip")])
        try await store.apply([.addToAlbum(identifier: "album:X", localIdentifiers: [ids[2], ids[0]])])
        try await store.apply([.addToAlbum(identifier: "album:X", localIdentifiers: [ids[1], ids[2]])])
        #expect(try await store.albumMembers("album:X") == [ids[2], ids[0], ids[1]])
        #expect(
            try await store.fetchAssets(AssetQuery(scope: .userAlbum("album:X"))).map(\.asset.localIdentifier) == [
                ids[2], ids[0], ids[1],
            ])
        await #expect(throws: LibraryError.self) {
            try await store.apply([.addToAlbum(identifier: "album:X", localIdentifiers: ["missing/L0/001"])])
        }
        try await store.apply([.removeFromAlbum(identifier: "album:X", localIdentifiers: [ids[0]])])
        try await store.apply([.renameAlbum(identifier: "album:X", title: "Trip 2")])
        #expect(try await store.albums() == [AlbumRecord(identifier: "album:X", title: "Trip 2", assetCount: 2)])
        try await store.apply([.deleteAsset(localIdentifier: ids[1])])
        #expect(try await store.albumMembers("album:X") == [ids[2]], "a deleted asset leaves its albums")
        try await store.apply([.deleteAlbum(identifier: "album:X")])
        #expect(try await store.albums().isEmpty)
        await #expect(throws: LibraryError.self) { try await store.albumMembers("album:X") }
    }

    static func record(_ path: String, hash: String, identifier: String? = nil, type: MediaType = .image) -> FileRecord
    {
        var facts = FileFacts(mediaType: type, format: "heic", uniformTypeIdentifier: "public.heic")
        facts.contentIdentifier = identifier
        return FileRecord(
            path: path, stamp: FileStamp(size: 10, modifiedNanoseconds: 5), contentHash: hash, facts: facts)
    }

    static func files(_ store: any LibraryStore) async throws {
        try await store.apply([
            .putFile(record("/r/a/1.HEIC", hash: hash(1), identifier: "ABC")),
            .putFile(record("/r/a/2.MOV", hash: hash(2), identifier: "abc", type: .video)),
            .putFile(record("/r/a/b/3.HEIC", hash: hash(1))),
            .putFile(record("/rx/4.HEIC", hash: hash(4))),
        ])
        #expect(
            try await store.fileStamps(inFolder: "/r/a") == [
                "1.HEIC": FileStamp(size: 10, modifiedNanoseconds: 5),
                "2.MOV": FileStamp(size: 10, modifiedNanoseconds: 5),
            ])
        #expect(Set(try await store.folders(under: "/r")) == ["/r/a", "/r/a/b"], "/rx is not under /r")
        #expect(
            Set(try await store.files(contentHash: hash(1), limit: 10).map(\.path)) == ["/r/a/1.HEIC", "/r/a/b/3.HEIC"])
        #expect(
            Set(try await store.files(contentIdentifier: "aBc", limit: 10).map(\.path)) == [
                "/r/a/1.HEIC", "/r/a/2.MOV",
            ])
        #expect(try await store.files(atPaths: ["/r/a/2.MOV", "/none"]).map(\.facts.mediaType) == [.video])
        var owned = asset(1, path: "/r/a/1.HEIC", hash: hash(1))
        owned.pairedVideoPath = "/r/a/2.MOV"
        _ = try await insert(store, [owned])
        #expect(Set(try await store.unownedFiles(limit: 10).map(\.path)) == ["/r/a/b/3.HEIC", "/rx/4.HEIC"])
        #expect(try await store.asset(containingPath: "/r/a/2.MOV")?.asset.path == "/r/a/1.HEIC")
        try await store.apply([.removeFile(path: "/rx/4.HEIC")])
        #expect(try await store.files(atPaths: ["/rx/4.HEIC"]).isEmpty)
        #expect(try await store.assetFolders() == [FolderCount(folder: "/r/a", count: 1)])
    }

    static func skips(_ store: any LibraryStore) async throws {
        try await store.apply([
            .recordSkip(SkippedFile(path: "/r/a/fifo", reason: "a FIFO")),
            .recordSkip(SkippedFile(path: "/r/b/link", reason: "a symbolic link")),
            .recordSkip(
                SkippedFile(
                    path: "/r/b/notes.txt", reason: "not media", stamp: FileStamp(size: 3, modifiedNanoseconds: 9))),
        ])
        #expect(try await store.skippedFiles(under: "/r").map(\.path) == ["/r/a/fifo", "/r/b/link", "/r/b/notes.txt"])
        #expect(try await store.skippedFiles(under: "/r").last?.stamp == FileStamp(size: 3, modifiedNanoseconds: 9))
        try await store.apply([.clearSkip(path: "/r/b/notes.txt")])
        try await store.apply([.clearSkip(path: "/r/a/fifo")])
        #expect(
            try await store.skippedFiles(under: "/r") == [SkippedFile(path: "/r/b/link", reason: "a symbolic link")])
        #expect(try await store.folders(under: "/r").contains("/r/b"))
    }

    static func edits(_ store: any LibraryStore) async throws {
        try await store.apply([
            .putFile(record("/e/IMG_1.HEIC", hash: hash(1))),
            .putFile(record("/e/IMG_E1.JPG", hash: hash(2))),
            .putFile(record("/e/IMG_1.AAE", hash: hash(3), type: .unknown)),
            .putFile(record("/e/IMG_E1.MOV", hash: hash(4), type: .video)),
        ])
        var edited = asset(1, path: "/e/IMG_1.HEIC", hash: hash(1))
        edited.fullSizePhotoPath = "/e/IMG_E1.JPG"
        edited.adjustmentDataPath = "/e/IMG_1.AAE"
        edited.fullSizePairedVideoPath = "/e/IMG_E1.MOV"
        edited.asset.hasAdjustments = true
        let made = try await insert(store, [edited, asset(5, path: "/e/IMG_5.HEIC")])
        let token = try await store.currentChangeToken()
        var stored = try #require(try await store.assets(localIdentifiers: [made[0]]).first)
        #expect(stored.asset.hasAdjustments && stored.editPaths == ["/e/IMG_E1.JPG", "/e/IMG_1.AAE", "/e/IMG_E1.MOV"])
        #expect(try await store.unownedFiles(limit: 10).isEmpty, "an edit's files are owned by its asset")
        #expect(try await ids(store, "hasAdjustments == TRUE") == [made[0]])
        #expect(try await ids(store, "hasAdjustments == NO") == [made[1]])
        let (withFiles, files) = try #require(try await store.assetWithFiles(made[0]))
        #expect(withFiles == stored)
        #expect(Set(files.map(\.path)) == ["/e/IMG_1.HEIC", "/e/IMG_E1.JPG", "/e/IMG_1.AAE", "/e/IMG_E1.MOV"])
        #expect(try await store.assetWithFiles("none/L0/001") == nil)
        stored.clearEdit()
        try await store.apply([.updateAsset(stored)])
        let reverted = try #require(try await store.assets(localIdentifiers: [made[0]]).first)
        #expect(!reverted.asset.hasAdjustments && reverted.editPaths.isEmpty)
        #expect(try await store.changes(since: token).updatedLocalIdentifiers == [made[0]])
        #expect(
            Set(try await store.unownedFiles(limit: 10).map(\.path)) == [
                "/e/IMG_E1.JPG", "/e/IMG_1.AAE", "/e/IMG_E1.MOV",
            ])
    }

    static func pairingLookups(_ store: any LibraryStore) async throws {
        var paired = asset(1, path: "/f/IMG_1.HEIC", contentIdentifier: "UUID-1")
        paired.pairedVideoPath = "/f/IMG_1.MOV"
        let ids = try await insert(
            store,
            [
                paired, asset(2, path: "/f/IMG_1 copy.HEIC", contentIdentifier: "uuid-1"),
                asset(3, path: "/f/img_2.jpg"), asset(4, path: "/f/IMG_2_HEVC.MOV", type: .video),
            ])
        #expect(
            try await store.assets(contentIdentifier: "UUID-1", mediaType: .image, unpaired: false, limit: 10).count
                == 2)
        #expect(
            try await store.assets(contentIdentifier: "UUID-1", mediaType: .image, unpaired: true, limit: 10).map(
                \.asset.localIdentifier)
                == [ids[1]])
        #expect(
            try await store.assets(contentIdentifier: "UUID-1", mediaType: .video, unpaired: false, limit: 10).isEmpty)
        #expect(
            Set(try await store.assets(inFolder: "/f", stem: "img_2", limit: 10).map(\.asset.localIdentifier)) == [
                ids[2], ids[3],
            ])
        #expect(try await store.assets(inFolder: "/g", stem: "img_2", limit: 10).isEmpty)
    }

    /// `import --live`'s pairing is the asset's own record: its kind, its movie and its Live Photo
    /// fields come back as written, either file finds the asset, and it is not an unpaired candidate
    /// for a movie that carries its still's identifier.
    static func importedPairing(_ store: any LibraryStore) async throws {
        var live = asset(1, path: "/live/still.heic", subtypes: .photoLive, contentIdentifier: "STILL-ID")
        live.asset.pairing = .imported
        live.asset.playbackStyle = .livePhoto
        live.asset.stillImageTime = 1.5
        live.pairedVideoPath = "/live/movie.mov"
        let id = try #require(try await insert(store, [live]).first)
        let stored = try #require(try await store.assets(localIdentifiers: [id]).first)
        #expect(stored.asset.pairing == .imported && stored.pairedVideoPath == "/live/movie.mov")
        #expect(stored.asset.mediaSubtypes.contains(.photoLive) && stored.asset.playbackStyle == .livePhoto)
        #expect(stored.asset.stillImageTime == 1.5)
        #expect(try await store.asset(containingPath: "/live/movie.mov")?.asset.localIdentifier == id)
        #expect(try await store.asset(containingPath: "/live/still.heic")?.asset.localIdentifier == id)
        #expect(
            try await store.assets(contentIdentifier: "still-id", mediaType: .image, unpaired: true, limit: 10)
                .isEmpty)
        #expect(try await ids(store, "(mediaSubtypes & 8) != 0") == [id])
        // An update (a rescan that read the still again) keeps the pairing as written.
        var updated = stored
        updated.asset.pixelWidth = 640
        try await store.apply([.updateAsset(updated)])
        let again = try #require(try await store.assets(localIdentifiers: [id]).first)
        #expect(again.asset.pairing == .imported && again.pairedVideoPath == "/live/movie.mov")
    }

    // MARK: - Every field

    /// An asset whose every field differs from `LibraryAsset`'s defaults and from `blank` (`second` gives
    /// other values again), so a field a store drops or mixes up shows.
    public static func everyField(second: Bool = false) -> StoredAsset {
        let n = second ? 2.0 : 1.0
        let folder = second ? "/every/two" : "/every/one"
        return StoredAsset(
            asset: LibraryAsset(
                localIdentifier: "ignored/L0/009", mediaType: second ? .image : .video,
                mediaSubtypes: second ? [.photoLive, .photoHDR] : [.videoHighFrameRate, .videoCinematic],
                pixelWidth: second ? 4032 : 3840, pixelHeight: second ? 3024 : 2160, duration: 12.5 * n,
                creationDate: Date(timeIntervalSince1970: 1_650_000_000.5 * n),
                creationTimeZoneOffset: -25_200 / Int(n),
                modificationDate: Date(timeIntervalSince1970: 1_700_000_123.25 + n),
                location: LibraryLocation(latitude: 48.8584 * n, longitude: -2.2945 * n, altitude: second ? nil : 35.5),
                isFavorite: !second, isHidden: !second, burstIdentifier: "BURST-\(Int(n))", representsBurst: true,
                playbackStyle: second ? .livePhoto : .videoLooping,
                sourceType: second ? .typeiTunesSynced : .typeCloudShared, originalFilename: "CLIP\(Int(n)).MOV",
                contentIdentifier: "CID-\(Int(n))", pairing: second ? .imported : .motionPhoto,
                stillImageTime: 0.75 * n,
                contentHash: hash(40 + Int(n)), path: "\(folder)/CLIP.MOV",
                addedDate: Date(timeIntervalSince1970: 1_700_000_500 + n), hasAdjustments: !second),
            pairedVideoPath: "\(folder)/CLIP_pair.MOV", fullSizePhotoPath: "\(folder)/CLIP_E.JPG",
            adjustmentDataPath: "\(folder)/CLIP.AAE", fullSizePairedVideoPath: "\(folder)/CLIP_E.MOV")
    }

    /// What every field of an asset is before it is set.
    public static let blank = StoredAsset(
        asset: LibraryAsset(
            localIdentifier: "", mediaType: .unknown, modificationDate: .distantPast, playbackStyle: .unsupported,
            originalFilename: "", contentHash: "", path: "", addedDate: .distantPast))

    /// The names of `value`'s stored properties, `StoredAsset`'s and its asset's, with their values.
    public static func fields(_ value: StoredAsset) -> [String: String] {
        var fields: [String: String] = [:]
        for child in Mirror(reflecting: value).children {
            guard let label = child.label, label != "asset" else { continue }
            fields[label] = String(describing: child.value)
        }
        for child in Mirror(reflecting: value.asset).children {
            guard let label = child.label else { continue }
            fields["asset." + label] = String(describing: child.value)
        }
        return fields
    }

    /// Inserts `everyField()`, reads it back every way a store reads assets, updates every field and
    /// reads it again (the library's own state kept); then a predicate on each key finds the asset by
    /// the value it was stored with. A field missing from `AssetColumns`, or a column decoded into
    /// the wrong field, fails here in both stores.
    static func everyField(_ store: any LibraryStore) async throws {
        let first = everyField()
        let second = everyField(second: true)
        // Every field is set (not its default), and the update changes every field but representsBurst.
        let (blankFields, firstFields) = (fields(blank), fields(first))
        for (name, value) in firstFields where name != "asset.localIdentifier" {
            #expect(value != blankFields[name], "the sample sets \(name)")
        }
        for (name, value) in fields(second) where !["asset.localIdentifier", "asset.representsBurst"].contains(name) {
            #expect(value != firstFields[name], "the update changes \(name)")
        }
        let id = try #require(try await insert(store, [first]).first)
        var expected = first
        expected.asset.localIdentifier = id
        func readBack(_ what: String) async throws {
            let all = AssetQuery(includeHiddenAssets: true, includeAllBurstAssets: true)
            #expect(try await store.assets(localIdentifiers: [id]) == [expected], "\(what): by identifier")
            #expect(try await store.fetchAssets(all) == [expected], "\(what): fetched")
            #expect(try await store.assetWithFiles(id)?.0 == expected, "\(what): with its files")
            #expect(try await store.asset(containingPath: expected.asset.path) == expected, "\(what): by path")
            let pairing = try await store.assets(
                contentIdentifier: expected.asset.contentIdentifier ?? "", mediaType: expected.asset.mediaType,
                unpaired: false, limit: 10)
            #expect(pairing == [expected], "\(what): by content identifier")
            for key in FetchKey.allCases {
                let value = AssetColumns.column(for: key).value(of: expected, AssetWrite(sequence: 0))
                let query = AssetQuery(
                    predicate: .compare(.key(key), .equal, value), includeHiddenAssets: true,
                    includeAllBurstAssets: true)
                #expect(
                    try await store.fetchAssets(query).map(\.asset.localIdentifier) == [id],
                    "\(what): \(key) == \(value)")
            }
        }
        try await readBack("inserted")
        var update = second
        update.asset.localIdentifier = id
        try await store.apply([.updateAsset(update)])
        expected = update
        expected.asset.isFavorite = first.asset.isFavorite
        expected.asset.isHidden = first.asset.isHidden
        expected.asset.addedDate = first.asset.addedDate
        try await readBack("updated")
    }
}
