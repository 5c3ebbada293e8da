#if canImport(Glibc)
    import Glibc
#endif

/// The key an asset is filed under, read with at most three positioned reads instead of the whole
/// file: BLAKE2b-256 of the file's size and its first, middle and last 64 KiB.
///
/// Why 64 KiB: editors rewrite metadata at a file's ends (a JPEG's Exif/MakerNote segment, at most
/// 64 KiB, comes first; HEIC `meta` and QuickTime `moov` sit at the start or the end), so two
/// different files almost always differ inside the first or last 64 KiB and never need a whole-file
/// hash to be told apart, while the middle sample catches a re-encode or a trim that kept both ends.
/// Three 64 KiB reads cost about what the header parse reads anyway, whatever the file's size (a
/// 4 GB movie is keyed from 192 KiB).
///
/// A file of at most `wholeFileLimit` (3 × 64 KiB) bytes is hashed whole, and its key is exactly
/// `b2sum -l 256` of it: the key libraries scanned before sampling used for every file, so those
/// files keep their keys. A larger file's key is domain-separated (`reel-sampled-key-v1`, then the
/// size as 8 little-endian bytes, then the three samples) so it can never equal a whole-file hash.
///
/// Two different files can share a sampled key (same size, same samples, different bytes between
/// them): the scanner confirms a shared key by hashing both files whole, and files a file that
/// differs under its whole-content hash instead (`LibraryScanner`), so a key shared by two assets
/// means the same bytes.
public enum ContentKey {
    /// Bytes in each sample.
    public static let sampleBytes: Int64 = 64 << 10
    /// Files up to this size are hashed whole (their samples would cover them anyway).
    public static let wholeFileLimit: Int64 = 3 * sampleBytes
    static let domain = Array("reel-sampled-key-v1\0".utf8)

    /// Whether a file of `size` bytes is keyed from samples (larger than `wholeFileLimit`).
    public static func isSampled(size: Int64) -> Bool { size > wholeFileLimit }

    /// Where the samples of a file of `size` bytes start: 0, the middle block, the last block.
    public static func sampleOffsets(size: Int64) -> [Int64] {
        [0, size / 2 - sampleBytes / 2, size - sampleBytes]
    }

    /// The key of the `size` bytes of the open descriptor and the bytes read to make it; nil when
    /// they cannot be read (the file shrank or failed).
    public static func key(descriptor: Int32, size: Int64) -> (key: String, bytesRead: Int64)? {
        guard isSampled(size: size) else {
            guard let hash = ContentHasher.hash(descriptor: descriptor, length: size) else { return nil }
            return (hash, size)
        }
        var hasher = ContentHasher()
        hasher.update(domain)
        withUnsafeBytes(of: UInt64(size).littleEndian) { hasher.update($0) }
        for offset in sampleOffsets(size: size) {
            guard hasher.update(descriptor: descriptor, offset: offset, length: sampleBytes) else { return nil }
        }
        return (hasher.finalize(), 3 * sampleBytes)
    }
}
