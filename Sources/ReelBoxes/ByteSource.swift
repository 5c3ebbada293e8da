#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random-access bytes: a file read with `pread`, or bytes in memory. Every read is checked against
/// `count`; nothing reads past the end.
public protocol ByteSource: Sendable {
    /// How many bytes there are.
    var count: Int64 { get }
    /// Exactly `length` bytes from `offset`. Throws `outOfBounds` when the range is not inside
    /// `0..<count`, `readFailed` when the file cannot be read.
    func read(at offset: Int64, length: Int) throws(BoxError) -> [UInt8]
}

extension ByteSource {
    /// Checks that `offset..<offset+length` lies inside `range`, without overflowing.
    @inlinable
    public func check(_ offset: Int64, _ length: Int64, inside range: Range<Int64>) throws(BoxError) {
        guard length >= 0, offset >= range.lowerBound, offset <= range.upperBound,
            length <= range.upperBound - offset
        else {
            throw BoxError(
                .outOfBounds, at: offset, "\(length) bytes at \(offset) run past the end at \(range.upperBound)")
        }
    }
}

/// Bytes held in memory.
public struct BufferSource: ByteSource {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var count: Int64 { Int64(bytes.count) }

    public func read(at offset: Int64, length: Int) throws(BoxError) -> [UInt8] {
        try check(offset, Int64(length), inside: 0..<count)
        return Array(bytes[Int(offset)..<Int(offset) + length])
    }
}

/// A regular file read with `pread`: the descriptor is opened once and closed when the last copy
/// of the source goes. Reads larger than `maxRead` are refused, so a lying size cannot make the
/// reader allocate gigabytes.
public final class FileSource: ByteSource {
    private let descriptor: Int32
    public let count: Int64
    /// The largest single read (16 MiB): metadata never needs more.
    public let maxRead: Int

    /// Opens `path` for reading (without following a final symlink when `followSymlinks` is false).
    /// Throws `readFailed` when it cannot be opened or is not a regular file.
    public init(path: String, followSymlinks: Bool = true, maxRead: Int = 16 << 20) throws(BoxError) {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW)
        let descriptor = open(path, flags)
        guard descriptor >= 0 else {
            throw BoxError(.readFailed, at: 0, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw BoxError(.readFailed, at: 0, "\(path) is not a regular file")
        }
        self.descriptor = descriptor
        self.count = Int64(status.st_size)
        self.maxRead = maxRead
    }

    deinit { close(descriptor) }

    /// The open descriptor, valid while this source lives (for streaming the whole file, e.g. to
    /// hash it, without opening it twice).
    public var fileDescriptor: Int32 { descriptor }

    public func read(at offset: Int64, length: Int) throws(BoxError) -> [UInt8] {
        try check(offset, Int64(length), inside: 0..<count)
        guard length <= maxRead else {
            throw BoxError(.limitExceeded, at: offset, "a read of \(length) bytes is over the limit of \(maxRead)")
        }
        if length == 0 { return [] }
        var buffer = [UInt8](repeating: 0, count: length)
        var done = 0
        while done < length {
            let got = buffer.withUnsafeMutableBytes { raw in
                pread(descriptor, raw.baseAddress! + done, length - done, off_t(offset) + off_t(done))
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw BoxError(
                    .readFailed, at: offset + Int64(done), "read failed: \(String(cString: strerror(errno)))")
            }
            if got == 0 {
                throw BoxError(.outOfBounds, at: offset + Int64(done), "the file ended early (it shrank while read)")
            }
            done += got
        }
        return buffer
    }
}
