import Foundation
import ReelSystem

/// Which picture of which asset a derivative is of: the asset's identifier and the version of its
/// picture (the rendered file's content key), so an edited or replaced photo gets new derivatives and
/// a moved one, whose bytes and identifier stay, keeps its own.
public struct DerivativeKey: Sendable, Hashable, Codable {
    public var assetID: String
    /// Letters and digits only (a content hash, shortened); anything else is dropped.
    public var version: String

    public init(assetID: String, version: String) {
        self.assetID = assetID
        self.version = String(version.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(32))
    }
}

/// The files a caching image manager keeps (PhotoKit's `PHCachingImageManager` cache, on disk): for each
/// asset and version, one file per tier, its ThumbHash, or the reason it could not be decoded. Laid out
/// as `<folder>/<tier>/<shard>/<asset>.<version>.<recipe>.<ext>`, `<folder>/thumbhash/<shard>/<asset>.
/// <version>.thumbhash`, `<folder>/size/…` (the picture's upright size) and `<folder>/failed/<shard>/
/// <asset>.<version>.txt`, the shard being the asset's
/// first two characters. Every file is written whole (a temporary name, then renamed), so a reader or
/// a run killed midway never sees half a picture; any number of processes (a fleet's workers on a
/// shared folder) may fill one store. Stateless: the file system is the store.
public struct DerivativeStore: Sendable {
    public let folder: String

    public init(folder: String) {
        self.folder = (folder as NSString).standardizingPath
    }

    /// Where tier `tier` of `key` is (whether or not it exists yet).
    public func path(of key: DerivativeKey, tier: PhotoTier) -> String {
        let name = Self.safeName(tier.name)
        return
            "\(shard(name, key))/\(Self.safeName(key.assetID)).\(key.version).\(tier.recipe).\(tier.format.fileExtension)"
    }

    func thumbHashPath(of key: DerivativeKey) -> String {
        "\(shard("thumbhash", key))/\(Self.safeName(key.assetID)).\(key.version).thumbhash"
    }

    func sizePath(of key: DerivativeKey) -> String {
        "\(shard("size", key))/\(Self.safeName(key.assetID)).\(key.version).txt"
    }

    func failurePath(of key: DerivativeKey) -> String {
        "\(shard("failed", key))/\(Self.safeName(key.assetID)).\(key.version).txt"
    }

    private func shard(_ kind: String, _ key: DerivativeKey) -> String {
        let safe = Self.safeName(key.assetID)
        return "\(folder)/\(kind)/\(safe.prefix(2))"
    }

    /// The cached file of tier `tier` of `key`, when it is there (a file that is empty, as one a crash
    /// could leave, is not).
    public func cached(_ key: DerivativeKey, tier: PhotoTier) -> String? {
        let path = path(of: key, tier: tier)
        var facts = stat()
        guard stat(path, &facts) == 0, facts.st_mode & S_IFMT == S_IFREG, facts.st_size > 0 else { return nil }
        return path
    }

    /// The ThumbHash cached for `key`.
    public func thumbHash(_ key: DerivativeKey) -> [UInt8]? {
        guard let text = try? String(contentsOfFile: thumbHashPath(of: key), encoding: .utf8),
            let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), data.count >= 5
        else { return nil }
        return [UInt8](data)
    }

    /// The upright size of the picture `key`'s tiers were made from (an edit's may differ from the
    /// original's), when a run recorded it.
    public func pictureSize(_ key: DerivativeKey) -> (width: Int, height: Int)? {
        guard let text = try? String(contentsOfFile: sizePath(of: key), encoding: .utf8) else { return nil }
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { return nil }
        return (parts[0], parts[1])
    }

    /// Why `key` could not be cached, when a run recorded so.
    public func failure(_ key: DerivativeKey) -> String? {
        (try? String(contentsOfFile: failurePath(of: key), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether every tier of `tiers` (and the ThumbHash, when asked) of `key` is cached.
    public func isComplete(_ key: DerivativeKey, tiers: [PhotoTier], thumbHash: Bool) -> Bool {
        tiers.allSatisfy { cached(key, tier: $0) != nil } && (!thumbHash || self.thumbHash(key) != nil)
    }

    /// Stores `set` as `key`'s tiers (and ThumbHash), each file whole, replacing what a killed run or
    /// another worker left; then forgets any recorded failure of `key`.
    public func store(_ set: PhotoTierSet, for key: DerivativeKey) throws(PhotoError) {
        for (tier, image) in set.tiers {
            try write(image.data, to: path(of: key, tier: tier))
        }
        try write(Data("\(set.width)x\(set.height)\n".utf8), to: sizePath(of: key))
        if let hash = set.thumbHash {
            try write(Data((Data(hash).base64EncodedString() + "\n").utf8), to: thumbHashPath(of: key))
        }
        unlink(failurePath(of: key))
    }

    /// Records why `key` could not be cached (one line), so later runs report it instead of decoding
    /// the photo again.
    public func recordFailure(_ key: DerivativeKey, _ reason: String) throws(PhotoError) {
        let line = reason.replacingOccurrences(of: "\n", with: " ") + "\n"
        try write(Data(line.utf8), to: failurePath(of: key))
    }

    /// Removes every derivative of asset `assetID` except those of version `keeping` (nil: all of
    /// them): what an edit, a replaced file or a deleted asset leaves behind. Returns the files removed.
    @discardableResult
    public func remove(assetID: String, keeping: String? = nil) -> Int {
        let safe = Self.safeName(assetID)
        let prefix = safe + "."
        var removed = 0
        let kinds = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for kind in kinds {
            let shard = "\(folder)/\(kind)/\(safe.prefix(2))"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: shard)) ?? []
            where name.hasPrefix(prefix) {
                let version = name.dropFirst(prefix.count).prefix { $0 != "." }
                if let keeping, version == keeping { continue }
                if unlink("\(shard)/\(name)") == 0 { removed += 1 }
            }
        }
        return removed
    }

    /// Writes `data` at `path` whole, creating its folder.
    private func write(_ data: Data, to path: String) throws(PhotoError) {
        let parent = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw PhotoError(.writeFailed, "cannot create the cache folder \(parent): \(error.localizedDescription)")
        }
        // What a run killed while writing this file left (its temporary name).
        AtomicFile.removeLeftovers(for: path)
        do {
            // A derivative can always be made again: the file is synced (no empty picture after a power
            // cut), the folder is not (a lost name is a derivative made again).
            try AtomicFile.write(data, to: path, replacing: true, syncFile: true, syncFolder: false)
        } catch {
            throw PhotoError(.writeFailed, "cannot write \(path): \(error.message)")
        }
    }

    /// An identifier as a file name: letters, digits and `-` kept, `/` as `_`, anything else as
    /// `%XX` (so no identifier can name a path outside the store, or clash with another).
    static func safeName(_ text: String) -> String {
        var name = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                name.append(Character(UnicodeScalar(byte)))
            case UInt8(ascii: "/"):
                name.append("_")
            default:
                name += String(format: "%%%02X", byte)
            }
        }
        return name.isEmpty ? "%" : name
    }
}
