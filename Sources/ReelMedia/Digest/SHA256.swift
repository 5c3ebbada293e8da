internal import CFFmpeg

/// SHA-256 (FIPS 180-4) through libavutil's `av_sha`: what `sha256sum` prints. A remote asset's named
/// checksum is verified with it before any decoding. Not `Sendable`: one owner feeds it.
public final class SHA256 {
    private let context: OpaquePointer

    public init() {
        // av_sha_alloc only fails when memory does; av_sha_init fails only for an unknown length.
        guard let context = av_sha_alloc() else { fatalError("av_sha_alloc: out of memory") }
        self.context = context
        let status = av_sha_init(context, 256)
        precondition(status == 0, "av_sha_init(256) failed: \(status)")
    }

    deinit { av_free(UnsafeMutableRawPointer(context)) }

    /// Adds bytes.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        av_sha_update(context, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    /// The digest as 64 lower-case hex digits; the hasher is spent.
    public func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        av_sha_final(context, &digest)
        return digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Whether `text` reads as a SHA-256 digest: 64 hex digits, either case.
    public static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0 | 0x20) }
    }
}
