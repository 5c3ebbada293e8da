import Foundation
import ReelSystem

/// Writes a resource's bytes out unchanged (`PHAssetResourceManager.writeData`): streamed from the
/// file (or the byte range of it), into a hidden temporary file beside the destination, flushed,
/// hashed as written and compared with a hash of the source range read again, and only then
/// renamed into place. A failure leaves nothing at the destination.
public enum ResourceWriter {
    /// Progress: bytes written of the total.
    public typealias Progress = @Sendable (_ written: Int64, _ total: Int64) -> Void

    /// Copies `resource` to `destination`. Throws `LibraryError` (`.stale` when the source file
    /// changed since it was indexed, `.writeFailed` otherwise); refuses to replace an existing file
    /// unless `overwrite`. Returns the BLAKE2b-256 of the bytes written (equal to the source's).
    @discardableResult
    public static func write(
        _ resource: AssetResource, to destination: String, overwrite: Bool = false, progress: Progress? = nil
    ) throws(LibraryError) -> String {
        if !overwrite, FileManager.default.fileExists(atPath: destination) {
            throw LibraryError(.writeFailed, "\(destination) exists; not replaced")
        }
        let input = open(resource.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard input >= 0 else {
            throw LibraryError(.stale, "cannot open \(resource.path): \(String(cString: strerror(errno)))")
        }
        defer { close(input) }
        var status = stat()
        guard fstat(input, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
            resource.offset >= 0, resource.length > 0, resource.offset <= Int64(status.st_size) - resource.length
        else {
            throw LibraryError(
                .stale,
                "\(resource.path) no longer holds bytes \(resource.offset)..<\(resource.offset + resource.length)")
        }
        let temporary = AtomicFile.temporaryPath(for: destination)
        let output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            throw LibraryError(.writeFailed, "cannot write beside \(destination): \(String(cString: strerror(errno)))")
        }
        var finished = false
        defer {
            if !finished { unlink(temporary) }
        }
        var hasher = ContentHasher()
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < resource.length {
            let want = Int(min(Int64(chunk), resource.length - done))
            let got = pread(input, buffer.baseAddress, want, off_t(resource.offset + done))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else {
                close(output)
                throw LibraryError(.stale, "\(resource.path) ended early while copying (it changed)")
            }
            guard AtomicFile.writeAll(output, UnsafeRawBufferPointer(rebasing: buffer[0..<got])) else {
                let reason = String(cString: strerror(errno))
                close(output)
                throw LibraryError(.writeFailed, "cannot write \(destination): \(reason)")
            }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            done += Int64(got)
            progress?(done, resource.length)
        }
        guard fsync(output) == 0, close(output) == 0 else {
            throw LibraryError(.writeFailed, "cannot flush \(destination): \(String(cString: strerror(errno)))")
        }
        let written = hasher.finalize()
        // Read what landed on disk back and the source range again: both must match the bytes copied.
        let landed = open(temporary, O_RDONLY | O_CLOEXEC)
        let onDisk = landed >= 0 ? ContentHasher.hash(descriptor: landed, length: resource.length) : nil
        if landed >= 0 { close(landed) }
        let source = ContentHasher.hash(descriptor: input, offset: resource.offset, length: resource.length)
        guard onDisk == written, source == written else {
            throw LibraryError(.writeFailed, "the copy of \(resource.path) does not hash as its source; not kept")
        }
        // The recorded key is the whole file's hash when it was hashed whole (small files, split
        // keys), else its sampled `ContentKey` (set only for resources that are the whole file).
        if let expected = resource.contentHash, expected != written,
            resource.offset != 0 || ContentKey.key(descriptor: input, size: resource.length)?.key != expected
        {
            throw LibraryError(.stale, "\(resource.path) changed since it was indexed (its hash differs); not written")
        }
        do {
            try AtomicFile.moveIntoPlace(temporary, to: destination, replacing: overwrite)
        } catch {
            throw LibraryError(
                .writeFailed, error.isExisting ? "\(destination) exists; not replaced" : error.message)
        }
        finished = true
        return written
    }
}
