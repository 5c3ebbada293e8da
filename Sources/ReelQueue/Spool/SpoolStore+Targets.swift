import Foundation

/// One waiting or running job per output path: `targets/<hash of the path>` is a symbolic link to the
/// job's id (no data block; the job's status gives the path, so a collision of hashes is seen).
/// Spools written before 0.2.1 hold "id\npath" in a file, which is read too.
///
/// Creating the entry is an atomic exclusive create; everything else that changes entries (taking
/// over one left by a job that ended without releasing it, releasing one) happens under one short
/// spool-wide lock, so a release can never remove an entry someone else just took.
extension SpoolStore {
    /// Reserves `output` for job `id`, or throws naming the waiting or running job that writes it.
    func reserveTarget(_ output: String, for id: String) throws(QueueError) {
        let file = path(.targets, SpoolStore.targetName(output))
        if try storage({ try FileSystem.createEntry(id, at: file) }) { return }
        guard let lock = FileLock(path: path(.locks, "targets.lock"), wait: true) else {
            throw QueueError(.unavailable, "cannot lock the spool's output table in \(root.path)")
        }
        defer { lock.release() }
        if let holder = readTarget(file), holder != id, let status = try status(id: holder), status.output == output,
            !status.state.isTerminal
        {
            throw QueueError(
                .conflict,
                "\(output) is already the output of job \(holder) (\(status.state.rawValue)); wait for it, cancel it, "
                    + "or choose another output")
        }
        // Free: left by a job that ended (or, improbably, another path with the same hash).
        unlink(file)
        guard try storage({ try FileSystem.createEntry(id, at: file) }) else {
            throw QueueError(.conflict, "\(output) was just reserved by another submission")
        }
    }

    /// Frees the output path of a job that ended (if the entry is still the job's own).
    func releaseTarget(of status: JobStatus) {
        let file = path(.targets, SpoolStore.targetName(status.output))
        guard let lock = FileLock(path: path(.locks, "targets.lock"), wait: true) else { return }
        defer { lock.release() }
        if readTarget(file) == status.id { unlink(file) }
    }

    /// The id of the job an entry names.
    private func readTarget(_ file: String) -> String? {
        FileSystem.readEntry(file)?.split(separator: "\n", maxSplits: 1).first.map(String.init)
    }

    /// A file name for an output path of any length: two 64-bit FNV-1a hashes (with different offset
    /// bases) of its bytes, in hex; a collision is seen in the holder's status.
    static func targetName(_ output: String) -> String {
        func fnv(_ basis: UInt64) -> UInt64 {
            output.utf8.reduce(basis) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
        }
        return String(format: "%016llx%016llx", fnv(0xCBF2_9CE4_8422_2325), fnv(0x6C62_272E_07BB_0142))
    }
}
