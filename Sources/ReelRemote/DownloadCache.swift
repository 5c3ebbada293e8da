import Foundation
import ReelExport
import ReelMedia
import ReelSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Where downloads live: whole objects under their key, and the partial download of each with a
/// sidecar saying what it is a prefix of. Keys are content-addressed when the job names a SHA-256
/// (`sha256-<hex>`), else the URL without its query and the server's strong ETag hashed together: a
/// ladder and its thumbnails of one upload download it once, and a changed object is a new key.
/// Least recently used entries are removed past `capacity` bytes.
public struct DownloadCache: Sendable {
    public let folder: String
    public let capacity: Int64

    /// The default folder: `$REEL_DOWNLOAD_CACHE`, else `$XDG_CACHE_HOME/reel/downloads`, else
    /// `~/.cache/reel/downloads`.
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let set = environment["REEL_DOWNLOAD_CACHE"], !set.isEmpty { return set }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/reel/downloads" }
        return NSHomeDirectory() + "/.cache/reel/downloads"
    }

    /// 10 GiB unless told: a few phone videos of a busy worker, kept for their ladders and thumbnails.
    public static let defaultCapacity: Int64 = 10 << 30

    public init(folder: String = DownloadCache.defaultFolder(), capacity: Int64 = DownloadCache.defaultCapacity) {
        self.folder = folder.hasSuffix("/") && folder.count > 1 ? String(folder.dropLast()) : folder
        self.capacity = capacity
    }

    /// Creates the folder (mode 0700: downloads may be private) or says why it cannot.
    func prepare() throws(ExportError) {
        do {
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ExportError(
                .outputFailed, "cannot create the download cache \(folder): \(error.localizedDescription)")
        }
    }

    // MARK: Keys and names

    /// The key of an object the job names by its digest.
    static func key(sha256: String) -> String { "sha256-" + sha256.lowercased() }

    /// The key of the object at `url` (query left out: a presigned URL's signature changes, the object
    /// does not) as the server's strong `etag` names it.
    static func key(url: URL, etag: String) -> String {
        let hasher = SHA256()
        let text = RemoteURL.redacted(url) + "\n" + etag
        Array(text.utf8).withUnsafeBytes { hasher.update($0) }
        return "etag-" + hasher.finalizeHex().prefix(40)
    }

    func path(_ key: String) -> String { folder + "/" + key }
    func partialPath(_ key: String) -> String { folder + "/." + key + ".partial" }
    func sidecarPath(_ key: String) -> String { folder + "/." + key + ".partial.json" }
    func lockPath(_ key: String) -> String { folder + "/." + key + ".lock" }

    // MARK: Entries

    /// The size of the complete entry `key`, touched as used; nil when there is none.
    func hit(_ key: String) -> Int64? {
        var status = stat()
        guard stat(path(key), &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        utimes(path(key), nil)
        return Int64(status.st_size)
    }

    /// What a partial download is a prefix of: compared before resuming it.
    struct Sidecar: Codable, Equatable {
        var url: String
        var etag: String?
        var size: Int64?
    }

    func readSidecar(_ key: String) -> Sidecar? {
        guard let data = FileManager.default.contents(atPath: sidecarPath(key)) else { return nil }
        return try? JSONDecoder().decode(Sidecar.self, from: data)
    }

    func writeSidecar(_ sidecar: Sidecar, _ key: String) throws(ExportError) {
        let data = (try? JSONEncoder().encode(sidecar)) ?? Data()
        do {
            try AtomicFile.write(data, to: sidecarPath(key), replacing: true, syncFile: false)
        } catch {
            throw ExportError(.outputFailed, "cannot write to the download cache: \(error.message)")
        }
    }

    /// Forgets a partial download (its bytes and its sidecar).
    func discardPartial(_ key: String) {
        unlink(partialPath(key))
        unlink(sidecarPath(key))
    }

    /// Turns the finished partial into the entry `key`.
    func complete(_ key: String) throws(ExportError) {
        guard rename(partialPath(key), path(key)) == 0 else {
            throw ExportError(
                .outputFailed, "cannot complete the download in \(folder): \(String(cString: strerror(errno)))")
        }
        unlink(sidecarPath(key))
    }

    /// Makes the entry `key` known as `other` too (a hard link; nothing when links fail).
    func link(_ key: String, as other: String) {
        unlink(path(other))
        _ = Glibc.link(path(key), path(other))
    }

    /// Removes least recently used entries (and partials nobody has touched for a day) until the
    /// cache holds at most `capacity` bytes; `keeping` is never removed.
    func evict(keeping: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        struct Entry {
            var name: String
            var size: Int64
            var used: Int
        }
        var entries: [Entry] = []
        var total: Int64 = 0
        let now = time(nil)
        for name in names {
            var status = stat()
            guard lstat(folder + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            let size = Int64(status.st_size)
            if name.hasPrefix(".") {
                // A partial is kept for its resume, unless abandoned for a day; so is a lock file.
                if name.hasSuffix(".lock") && now - status.st_mtim.tv_sec > 86_400 {
                    // Only one nobody holds.
                    let fd = open(folder + "/" + name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                    if fd >= 0 {
                        if flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(folder + "/" + name) }
                        close(fd)
                    }
                } else if name.hasSuffix(".partial") && now - status.st_mtim.tv_sec > 86_400 {
                    unlink(folder + "/" + name)
                    unlink(folder + "/" + name + ".json")
                } else {
                    total += size
                }
                continue
            }
            total += size
            if name != keeping { entries.append(Entry(name: name, size: size, used: status.st_mtim.tv_sec)) }
        }
        for entry in entries.sorted(by: { $0.used < $1.used }) where total > capacity {
            if unlink(folder + "/" + entry.name) == 0 { total -= entry.size }
        }
    }

    /// Holds `key` against other processes fetching it (an exclusive `flock` on its lock file) until
    /// the returned descriptor is closed; waits for a holder, cancellably.
    func lock(_ key: String) async throws(ExportError) -> Int32 {
        let fd = open(lockPath(key), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ExportError(
                .outputFailed, "cannot lock in the download cache \(folder): \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { return fd }  // no locks here: go on unlocked
            do {
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                close(fd)
                throw ExportError(.cancelled, "the download was cancelled")
            }
        }
        return fd
    }

    /// The SHA-256 of the file at `path`, read in 1 MiB blocks off Swift's pool.
    static func sha256(of path: String) async throws(ExportError) -> String {
        let digest: String? = await BlockingIO.shared.run {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            let hasher = SHA256()
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { return nil }
                if count == 0 { break }
                buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
            return hasher.finalizeHex()
        }
        guard let digest else { throw ExportError(.internal, "cannot read back the download \(path)") }
        return digest
    }
}
