import Foundation
import ReelExport
import Synchronization

extension SpoolStore: JobStoreMonitoring {
    public func makeSummarizer() -> any QueueSummarizer { SpoolSummarizer(spool: self) }

    /// The spool is usable when its folders can be listed and written.
    public func checkAvailable() async throws {
        try await io.run { () throws(QueueError) in
            for folder in [Folder.status, .waiting, .running, .locks] {
                guard access(self.path(folder), R_OK | W_OK | X_OK) == 0 else {
                    throw QueueError(
                        .unavailable,
                        "the spool cannot be used: \(self.path(folder)): \(String(cString: strerror(errno)))")
                }
            }
        }
    }
}

/// Summarizes a spool without reading every status file each time: an index of each status file's
/// identity (inode, change time, size) and the few fields a summary needs. A pass lists the folder and
/// `stat`s each file; only files that changed since the last pass are read again (on a steady queue:
/// the running jobs' and the newly finished ones). The first pass reads them all.
///
/// Change times tick at the kernel's coarse clock (a few milliseconds), and a replaced file may get
/// its predecessor's inode back: an entry is trusted only once it was read a while after the file's
/// last change, so a file rewritten twice within one tick is read again at the next pass.
final class SpoolSummarizer: QueueSummarizer {
    private struct Entry {
        var inode: UInt64
        /// The file's change time and when it was read (nanoseconds since 1970).
        var changed: Int64
        var read: Int64
        var size: Int64
        var state: JobState
        /// When it failed, for failed jobs.
        var failedAt: Date?
        /// The last pass that saw the file.
        var pass: Int
    }

    private struct Index {
        var entries: [String: Entry] = [:]
        var passes = 0
    }

    /// The fields of a status file an index entry keeps.
    private struct Brief: Decodable {
        var state: JobState
        var finishedAt: Date?
        var updatedAt: Date
    }

    private let spool: SpoolStore
    private let index = Mutex(Index())
    /// How many status files the last pass read (for tests: a pass over an unchanged spool reads none).
    let lastPassReads = Atomic<Int>(0)

    init(spool: SpoolStore) { self.spool = spool }

    func summarize(recentFailures: Int) async throws -> QueueSummary {
        // File-system work for a whole folder: on the spool's I/O threads, never on Swift's cooperative pool.
        try await spool.io.run { () throws(QueueError) in try self.pass(recentFailures: recentFailures) }
    }

    /// One pass: refreshes the index, then reads the running jobs and the latest failures in full.
    private func pass(recentFailures limit: Int) throws(QueueError) -> QueueSummary {
        let folder = spool.path(.status)
        guard let directory = opendir(folder) else {
            throw QueueError(.unavailable, "cannot read \(folder): \(String(cString: strerror(errno)))")
        }
        defer { closedir(directory) }
        let descriptor = dirfd(directory)
        let decoder = JSONCoding.decoder
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        let now = Int64(clock.tv_sec) * 1_000_000_000 + Int64(clock.tv_nsec)
        return index.withLock { index in
            var reads = 0
            var seen = 0
            index.passes += 1
            let pass = index.passes
            while let item = readdir(directory) {
                let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard name.hasSuffix(".json") else { continue }
                let id = String(name.dropLast(5))
                var info = stat()
                guard fstatat(descriptor, name, &info, 0) == 0 else { continue }
                let changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
                seen += 1
                if var known = index.entries[id], known.inode == UInt64(info.st_ino), known.changed == changed,
                    known.size == Int64(info.st_size), known.read - known.changed > Self.settled
                {
                    known.pass = pass
                    index.entries[id] = known
                    continue
                }
                reads += 1
                guard let data = Self.read(descriptor, name),
                    let brief = try? decoder.decode(Brief.self, from: data)
                else {
                    index.entries[id] = nil
                    continue
                }
                index.entries[id] = Entry(
                    inode: UInt64(info.st_ino), changed: changed, read: now, size: Int64(info.st_size),
                    state: brief.state,
                    failedAt: brief.state == .failed ? (brief.finishedAt ?? brief.updatedAt) : nil, pass: pass)
            }
            lastPassReads.store(reads, ordering: .relaxed)
            if seen != index.entries.count {
                index.entries = index.entries.filter { $0.value.pass == pass }
            }
            var counts: [JobState: Int] = [:]
            var running: [String] = []
            // The latest `limit` failures, latest first, kept by insertion (no sort of every failure).
            var failed: [(id: String, at: Date)] = []
            let later = { (a: (id: String, at: Date), b: (id: String, at: Date)) in
                a.at != b.at ? a.at > b.at : a.id > b.id
            }
            for (id, entry) in index.entries {
                counts[entry.state, default: 0] += 1
                if entry.state == .exporting { running.append(id) }
                guard limit > 0, let at = entry.failedAt else { continue }
                let candidate = (id: id, at: at)
                if failed.count == limit, let last = failed.last, !later(candidate, last) { continue }
                let position = failed.firstIndex { later(candidate, $0) } ?? failed.count
                failed.insert(candidate, at: position)
                if failed.count > limit { failed.removeLast() }
            }
            let statuses = { (ids: [String]) in ids.compactMap { try? self.spool.status(id: $0) } }
            return QueueSummary(
                counts: counts,
                running: statuses(running).filter { $0.state == .exporting }.map(spool.markingOrphan)
                    .sorted { ($0.startedAt ?? $0.createdAt) < ($1.startedAt ?? $1.createdAt) },
                recentFailures: statuses(failed.prefix(limit).map(\.id)).filter { $0.state == .failed },
                takenAt: Date())
        }
    }

    /// How long after its last change a file must have been read for its entry to be trusted: well
    /// above the change-time granularity (ns).
    static let settled: Int64 = 100_000_000

    /// Reads a small file relative to an open folder.
    private static func read(_ folder: Int32, _ name: String) -> Data? {
        let fd = openat(folder, name, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }
}
