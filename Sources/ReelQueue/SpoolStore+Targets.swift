import Foundation

/// One waiting or running job per output path: `targets/<hash>` holds the job id and the path.
///
/// Creating the entry is an atomic exclusive create; everything else that changes entries (taking
/// over one left by a job that ended without releasing it, releasing one) happens under one short
/// spool-wide lock, so a release can never remove an entry someone else just took.
extension SpoolStore {
    /// Reserves `output` for job `id`, or throws naming the waiting or running job that writes it.
    func reserveTarget(_ output: String, for id: String) throws(QueueError) {
        let file = path(.targets, SpoolStore.targetName(output))
        let entry = Data("\(id)\n\(output)".utf8)
        if try storage({ try FileSystem.createExclusively(entry, at: file) }) { return }
        guard let lock = FileLock(path: path(.locks, "targets.lock"), wait: true) else {
            throw QueueError(.unavailable, "cannot lock the spool's output table in \(root.path)")
        }
        defer { lock.release() }
        if let (holder, held) = readTarget(file), held == output, holder != id,
            let status = try status(id: holder), !status.state.isTerminal
        {
            throw QueueError(
                .conflict,
                "\(output) is already the output of job \(holder) (\(status.state.rawValue)); wait for it, cancel it, "
                    + "or choose another output")
        }
        // Free: left by a job that ended (or, improbably, another path with the same hash).
        unlink(file)
        guard try storage({ try FileSystem.createExclusively(entry, at: file) }) else {
            throw QueueError(.conflict, "\(output) was just reserved by another submission")
        }
    }

    /// Frees the output path of a job that ended (if the entry is still the job's own).
    func releaseTarget(of status: JobStatus) {
        let file = path(.targets, SpoolStore.targetName(status.output))
        guard let lock = FileLock(path: path(.locks, "targets.lock"), wait: true) else { return }
        defer { lock.release() }
        if readTarget(file)?.id == status.id { unlink(file) }
    }

    private func readTarget(_ file: String) -> (id: String, output: String)? {
        guard let data = FileSystem.read(file) else { return nil }
        let parts = String(decoding: data, as: UTF8.self).split(separator: "\n", maxSplits: 1).map(String.init)
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    /// A file name for an output path of any length: two 64-bit FNV-1a hashes (with different offset
    /// bases) of its bytes, in hex; the entry holds the path too, so a collision is seen.
    static func targetName(_ output: String) -> String {
        func fnv(_ basis: UInt64) -> UInt64 {
            output.utf8.reduce(basis) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
        }
        return String(format: "%016llx%016llx", fnv(0xCBF2_9CE4_8422_2325), fnv(0x6C62_272E_07BB_0142))
    }
}
