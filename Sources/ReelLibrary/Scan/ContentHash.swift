#if canImport(Glibc)
    import Glibc
#endif

/// BLAKE2b (RFC 7693) with a 32-byte digest, unkeyed: what `b2sum -l 256` prints. It keys an asset
/// by its content (`ContentKey`) and confirms a written resource; in Swift (no C, no dependency).
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
        guard let base = bytes.baseAddress else { return }
        while index < count {
            // The last block is compressed only at `finalize`, so a full buffer waits for more input.
            if filled == 128 {
                counter &+= 128
                compress(last: false)
                filled = 0
            }
            // Whole blocks straight from the input while more follows, without the copy.
            if filled == 0 {
                while count - index > 128 {
                    counter &+= 128
                    ContentHasher.compress(&h, base + index, counter: counter, last: false)
                    index += 128
                }
            }
            let take = min(128 - filled, count - index)
            buffer.withUnsafeMutableBytes { target in
                target.baseAddress!.advanced(by: filled).copyMemory(from: base + index, byteCount: take)
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
        buffer.withUnsafeBytes { raw in
            ContentHasher.compress(&h, raw.baseAddress!, counter: counter, last: last)
        }
    }

    /// One BLAKE2b compression (RFC 7693 §3.2) of the 128 bytes at `block`, with the rounds and the
    /// message schedule unrolled into locals so they can live in registers (rather than indexing a
    /// working vector in memory through the schedule table).
    @inline(__always)
    private static func compress(
        _ h: inout (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64),
        _ block: UnsafeRawPointer, counter: UInt64, last: Bool
    ) {
        @inline(__always) func word(_ index: Int) -> UInt64 {
            UInt64(littleEndian: block.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
        }
        let m0 = word(0)
        let m1 = word(1)
        let m2 = word(2)
        let m3 = word(3)
        let m4 = word(4)
        let m5 = word(5)
        let m6 = word(6)
        let m7 = word(7)
        let m8 = word(8)
        let m9 = word(9)
        let m10 = word(10)
        let m11 = word(11)
        let m12 = word(12)
        let m13 = word(13)
        let m14 = word(14)
        let m15 = word(15)
        var v0 = h.0
        var v1 = h.1
        var v2 = h.2
        var v3 = h.3
        var v4 = h.4
        var v5 = h.5
        var v6 = h.6
        var v7 = h.7
        var v8: UInt64 = 0x6a09_e667_f3bc_c908
        var v9: UInt64 = 0xbb67_ae85_84ca_a73b
        var v10: UInt64 = 0x3c6e_f372_fe94_f82b
        var v11: UInt64 = 0xa54f_f53a_5f1d_36f1
        var v12: UInt64 = 0x510e_527f_ade6_82d1 ^ counter
        var v13: UInt64 = 0x9b05_688c_2b3e_6c1f
        var v14: UInt64 = last ? ~0x1f83_d9ab_fb41_bd6b : 0x1f83_d9ab_fb41_bd6b
        var v15: UInt64 = 0x5be0_cd19_137e_2179
        @inline(__always) func g(
            _ a: inout UInt64, _ b: inout UInt64, _ c: inout UInt64, _ d: inout UInt64, _ x: UInt64, _ y: UInt64
        ) {
            a = a &+ b &+ x
            d = rotr(d ^ a, 32)
            c = c &+ d
            b = rotr(b ^ c, 24)
            a = a &+ b &+ y
            d = rotr(d ^ a, 16)
            c = c &+ d
            b = rotr(b ^ c, 63)
        }
        g(&v0, &v4, &v8, &v12, m0, m1)
        g(&v1, &v5, &v9, &v13, m2, m3)
        g(&v2, &v6, &v10, &v14, m4, m5)
        g(&v3, &v7, &v11, &v15, m6, m7)
        g(&v0, &v5, &v10, &v15, m8, m9)
        g(&v1, &v6, &v11, &v12, m10, m11)
        g(&v2, &v7, &v8, &v13, m12, m13)
        g(&v3, &v4, &v9, &v14, m14, m15)
        g(&v0, &v4, &v8, &v12, m14, m10)
        g(&v1, &v5, &v9, &v13, m4, m8)
        g(&v2, &v6, &v10, &v14, m9, m15)
        g(&v3, &v7, &v11, &v15, m13, m6)
        g(&v0, &v5, &v10, &v15, m1, m12)
        g(&v1, &v6, &v11, &v12, m0, m2)
        g(&v2, &v7, &v8, &v13, m11, m7)
        g(&v3, &v4, &v9, &v14, m5, m3)
        g(&v0, &v4, &v8, &v12, m11, m8)
        g(&v1, &v5, &v9, &v13, m12, m0)
        g(&v2, &v6, &v10, &v14, m5, m2)
        g(&v3, &v7, &v11, &v15, m15, m13)
        g(&v0, &v5, &v10, &v15, m10, m14)
        g(&v1, &v6, &v11, &v12, m3, m6)
        g(&v2, &v7, &v8, &v13, m7, m1)
        g(&v3, &v4, &v9, &v14, m9, m4)
        g(&v0, &v4, &v8, &v12, m7, m9)
        g(&v1, &v5, &v9, &v13, m3, m1)
        g(&v2, &v6, &v10, &v14, m13, m12)
        g(&v3, &v7, &v11, &v15, m11, m14)
        g(&v0, &v5, &v10, &v15, m2, m6)
        g(&v1, &v6, &v11, &v12, m5, m10)
        g(&v2, &v7, &v8, &v13, m4, m0)
        g(&v3, &v4, &v9, &v14, m15, m8)
        g(&v0, &v4, &v8, &v12, m9, m0)
        g(&v1, &v5, &v9, &v13, m5, m7)
        g(&v2, &v6, &v10, &v14, m2, m4)
        g(&v3, &v7, &v11, &v15, m10, m15)
        g(&v0, &v5, &v10, &v15, m14, m1)
        g(&v1, &v6, &v11, &v12, m11, m12)
        g(&v2, &v7, &v8, &v13, m6, m8)
        g(&v3, &v4, &v9, &v14, m3, m13)
        g(&v0, &v4, &v8, &v12, m2, m12)
        g(&v1, &v5, &v9, &v13, m6, m10)
        g(&v2, &v6, &v10, &v14, m0, m11)
        g(&v3, &v7, &v11, &v15, m8, m3)
        g(&v0, &v5, &v10, &v15, m4, m13)
        g(&v1, &v6, &v11, &v12, m7, m5)
        g(&v2, &v7, &v8, &v13, m15, m14)
        g(&v3, &v4, &v9, &v14, m1, m9)
        g(&v0, &v4, &v8, &v12, m12, m5)
        g(&v1, &v5, &v9, &v13, m1, m15)
        g(&v2, &v6, &v10, &v14, m14, m13)
        g(&v3, &v7, &v11, &v15, m4, m10)
        g(&v0, &v5, &v10, &v15, m0, m7)
        g(&v1, &v6, &v11, &v12, m6, m3)
        g(&v2, &v7, &v8, &v13, m9, m2)
        g(&v3, &v4, &v9, &v14, m8, m11)
        g(&v0, &v4, &v8, &v12, m13, m11)
        g(&v1, &v5, &v9, &v13, m7, m14)
        g(&v2, &v6, &v10, &v14, m12, m1)
        g(&v3, &v7, &v11, &v15, m3, m9)
        g(&v0, &v5, &v10, &v15, m5, m0)
        g(&v1, &v6, &v11, &v12, m15, m4)
        g(&v2, &v7, &v8, &v13, m8, m6)
        g(&v3, &v4, &v9, &v14, m2, m10)
        g(&v0, &v4, &v8, &v12, m6, m15)
        g(&v1, &v5, &v9, &v13, m14, m9)
        g(&v2, &v6, &v10, &v14, m11, m3)
        g(&v3, &v7, &v11, &v15, m0, m8)
        g(&v0, &v5, &v10, &v15, m12, m2)
        g(&v1, &v6, &v11, &v12, m13, m7)
        g(&v2, &v7, &v8, &v13, m1, m4)
        g(&v3, &v4, &v9, &v14, m10, m5)
        g(&v0, &v4, &v8, &v12, m10, m2)
        g(&v1, &v5, &v9, &v13, m8, m4)
        g(&v2, &v6, &v10, &v14, m7, m6)
        g(&v3, &v7, &v11, &v15, m1, m5)
        g(&v0, &v5, &v10, &v15, m15, m11)
        g(&v1, &v6, &v11, &v12, m9, m14)
        g(&v2, &v7, &v8, &v13, m3, m12)
        g(&v3, &v4, &v9, &v14, m13, m0)
        g(&v0, &v4, &v8, &v12, m0, m1)
        g(&v1, &v5, &v9, &v13, m2, m3)
        g(&v2, &v6, &v10, &v14, m4, m5)
        g(&v3, &v7, &v11, &v15, m6, m7)
        g(&v0, &v5, &v10, &v15, m8, m9)
        g(&v1, &v6, &v11, &v12, m10, m11)
        g(&v2, &v7, &v8, &v13, m12, m13)
        g(&v3, &v4, &v9, &v14, m14, m15)
        g(&v0, &v4, &v8, &v12, m14, m10)
        g(&v1, &v5, &v9, &v13, m4, m8)
        g(&v2, &v6, &v10, &v14, m9, m15)
        g(&v3, &v7, &v11, &v15, m13, m6)
        g(&v0, &v5, &v10, &v15, m1, m12)
        g(&v1, &v6, &v11, &v12, m0, m2)
        g(&v2, &v7, &v8, &v13, m11, m7)
        g(&v3, &v4, &v9, &v14, m5, m3)
        h.0 ^= v0 ^ v8
        h.1 ^= v1 ^ v9
        h.2 ^= v2 ^ v10
        h.3 ^= v3 ^ v11
        h.4 ^= v4 ^ v12
        h.5 ^= v5 ^ v13
        h.6 ^= v6 ^ v14
        h.7 ^= v7 ^ v15
    }

    /// The hash of `length` bytes of the open descriptor from `offset` (the whole rest when nil),
    /// read 1 MiB at a time with `pread`. Returns nil when the bytes cannot all be read (the file
    /// shrank or failed).
    public static func hash(descriptor: Int32, offset: Int64 = 0, length: Int64, progress: ((Int64) -> Void)? = nil)
        -> String?
    {
        var hasher = ContentHasher()
        guard hasher.update(descriptor: descriptor, offset: offset, length: length, progress: progress) else {
            return nil
        }
        return hasher.finalize()
    }

    /// Adds `length` bytes of the open descriptor from `offset`, read at most 1 MiB at a time with
    /// `pread`; false when they cannot all be read (the file shrank or failed).
    public mutating func update(
        descriptor: Int32, offset: Int64, length: Int64, progress: ((Int64) -> Void)? = nil
    ) -> Bool {
        let chunk = Int(min(Int64(1 << 20), max(length, 1)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(chunk), length - done))
            let got = pread(descriptor, buffer.baseAddress, want, off_t(offset + done))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return false }
            update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            done += Int64(got)
            progress?(done)
        }
        return true
    }
}
