#if canImport(Glibc)
    import Glibc
#endif

/// BLAKE2b (RFC 7693) with a 32-byte digest, unkeyed: what `b2sum -l 256` prints. It keys an asset
/// by its content and confirms a written resource; fast enough in Swift (no C, no dependency) to
/// hash every new file of a scan.
public struct ContentHasher: Sendable {
    private var h: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    private var buffer = [UInt8](repeating: 0, count: 128)
    private var filled = 0
    private var counter: UInt64 = 0
    private let digestLength: Int

    static let iv: [UInt64] = [
        0x6a09_e667_f3bc_c908, 0xbb67_ae85_84ca_a73b, 0x3c6e_f372_fe94_f82b, 0xa54f_f53a_5f1d_36f1,
        0x510e_527f_ade6_82d1, 0x9b05_688c_2b3e_6c1f, 0x1f83_d9ab_fb41_bd6b, 0x5be0_cd19_137e_2179,
    ]
    static let sigma: [[Int]] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4], [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13], [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11], [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5], [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ]

    /// A hasher for a `digestLength`-byte digest (1…64; 32 unless told).
    public init(digestLength: Int = 32) {
        precondition(digestLength >= 1 && digestLength <= 64)
        self.digestLength = digestLength
        let iv = ContentHasher.iv
        h = (iv[0] ^ (0x0101_0000 | UInt64(digestLength)), iv[1], iv[2], iv[3], iv[4], iv[5], iv[6], iv[7])
    }

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        let count = bytes.count
        while index < count {
            // The last block is compressed only at `finalize`, so a full buffer waits for more input.
            if filled == 128 {
                counter &+= 128
                compress(last: false)
                filled = 0
            }
            let take = min(128 - filled, count - index)
            buffer.withUnsafeMutableBytes { target in
                target.baseAddress!.advanced(by: filled).copyMemory(
                    from: bytes.baseAddress!.advanced(by: index), byteCount: take)
            }
            filled += take
            index += take
        }
    }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest, lowercase hex.
    public mutating func finalize() -> String {
        counter &+= UInt64(filled)
        for index in filled..<128 { buffer[index] = 0 }
        compress(last: true)
        let words = [h.0, h.1, h.2, h.3, h.4, h.5, h.6, h.7]
        var bytes: [UInt8] = []
        for word in words {
            for shift in stride(from: 0, to: 64, by: 8) {
                bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in bytes.prefix(digestLength) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    @inline(__always)
    private static func rotr(_ x: UInt64, _ n: UInt64) -> UInt64 { (x >> n) | (x << (64 &- n)) }

    private mutating func compress(last: Bool) {
        let counter = counter
        var state = h
        // Stack space for the message words and the working vector (no allocation per block).
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 32) { space in
            let m = space.baseAddress!
            let v = m + 16
            buffer.withUnsafeBytes { raw in
                for index in 0..<16 {
                    m[index] = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
                }
            }
            let iv = ContentHasher.iv
            v[0] = state.0
            v[1] = state.1
            v[2] = state.2
            v[3] = state.3
            v[4] = state.4
            v[5] = state.5
            v[6] = state.6
            v[7] = state.7
            for index in 0..<8 { v[8 + index] = iv[index] }
            v[12] ^= counter
            if last { v[14] = ~v[14] }
            @inline(__always) func g(_ a: Int, _ b: Int, _ c: Int, _ d: Int, _ x: UInt64, _ y: UInt64) {
                v[a] = v[a] &+ v[b] &+ x
                v[d] = ContentHasher.rotr(v[d] ^ v[a], 32)
                v[c] = v[c] &+ v[d]
                v[b] = ContentHasher.rotr(v[b] ^ v[c], 24)
                v[a] = v[a] &+ v[b] &+ y
                v[d] = ContentHasher.rotr(v[d] ^ v[a], 16)
                v[c] = v[c] &+ v[d]
                v[b] = ContentHasher.rotr(v[b] ^ v[c], 63)
            }
            ContentHasher.sigma.withUnsafeBufferPointer { sigma in
                for round in 0..<12 {
                    sigma[round % 10].withUnsafeBufferPointer { s in
                        g(0, 4, 8, 12, m[s[0]], m[s[1]])
                        g(1, 5, 9, 13, m[s[2]], m[s[3]])
                        g(2, 6, 10, 14, m[s[4]], m[s[5]])
                        g(3, 7, 11, 15, m[s[6]], m[s[7]])
                        g(0, 5, 10, 15, m[s[8]], m[s[9]])
                        g(1, 6, 11, 12, m[s[10]], m[s[11]])
                        g(2, 7, 8, 13, m[s[12]], m[s[13]])
                        g(3, 4, 9, 14, m[s[14]], m[s[15]])
                    }
                }
            }
            state.0 ^= v[0] ^ v[8]
            state.1 ^= v[1] ^ v[9]
            state.2 ^= v[2] ^ v[10]
            state.3 ^= v[3] ^ v[11]
            state.4 ^= v[4] ^ v[12]
            state.5 ^= v[5] ^ v[13]
            state.6 ^= v[6] ^ v[14]
            state.7 ^= v[7] ^ v[15]
        }
        h = state
    }

    /// The hash of `length` bytes of the open descriptor from `offset` (the whole rest when nil),
    /// read 1 MiB at a time with `pread`. Returns nil when the bytes cannot all be read (the file
    /// shrank or failed).
    public static func hash(descriptor: Int32, offset: Int64 = 0, length: Int64, progress: ((Int64) -> Void)? = nil)
        -> String?
    {
        var hasher = ContentHasher()
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(chunk), length - done))
            let got = pread(descriptor, buffer.baseAddress, want, off_t(offset + done))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            done += Int64(got)
            progress?(done)
        }
        return hasher.finalize()
    }
}
