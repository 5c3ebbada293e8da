internal import CFFmpeg

/// RFC 6381 codec strings (HLS CODECS, DASH `@codecs`) of a written H.264, HEVC or AV1 stream, from
/// its own parameter sets: the `avcC`/`hvcC`/`av1C` record a demuxer gives as extradata, or the Annex
/// B parameter sets an encoder gives (H.264 and HEVC).
public enum CodecString {
    /// The codec string of a stream read back (`avcC`/`hvcC` extradata) or about to be written
    /// (Annex B extradata). Throws `internal-failure` when the parameter sets are missing.
    static func of(_ parameters: UnsafeMutablePointer<AVCodecParameters>) throws(MediaError) -> String {
        let size = Int(parameters.pointee.extradata_size)
        let bytes = parameters.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        switch parameters.pointee.codec_id {
        case AV_CODEC_ID_HEVC:
            guard let record = hevcProfileTierLevel(bytes) else {
                throw MediaError(
                    kind: .internalFailure, call: "codecs", message: "no profile_tier_level in the HEVC parameter sets")
            }
            return hevc(record)
        case AV_CODEC_ID_AV1:
            guard let string = av1(bytes) else {
                throw MediaError(kind: .internalFailure, call: "codecs", message: "no av1C record in the AV1 stream")
            }
            return string
        default:
            return try LadderPipeline.avcCodecs(parameters)
        }
    }

    /// Reads the init segment at `path` (one video track) and gives the codec string of what its
    /// sample entry (`avcC`/`hvcC`) says. Throws `output-failed` when FFmpeg cannot open it.
    public static func ofInitSegment(at path: String) throws(MediaError) -> String {
        FFmpegLog.installIfNeeded()
        var context: UnsafeMutablePointer<AVFormatContext>?
        let opened = avformat_open_input(&context, path, av_find_input_format("mp4"), nil)
        guard opened >= 0, let context else {
            throw MediaError(
                call: "avformat_open_input", code: opened, kind: .outputFailed, context: "cannot read back \(path)")
        }
        defer {
            var pointer: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&pointer)
        }
        guard context.pointee.nb_streams == 1, let stream = context.pointee.streams[0] else {
            throw MediaError(kind: .outputFailed, call: "avformat_open_input", message: "\(path) is not one track")
        }
        return try of(stream.pointee.codecpar)
    }

    /// `av01.<P>.<LL><T>.<DD>` (the AV1 ISOBMFF binding's codecs parameter, its optional fields left
    /// out) from an `av1C` record: seq_profile, seq_level_idx_0 in two digits, seq_tier_0 (`M` Main,
    /// `H` High) and the bit depth in two digits (high_bitdepth, twelve_bit). Main profile, level 4.0,
    /// Main tier, 10-bit: `av01.0.08M.10`. Nil when `record` is not an `av1C` (marker and version 1).
    public static func av1(_ record: [UInt8]) -> String? {
        guard record.count >= 4, record[0] == 0x81 else { return nil }
        let profile = record[1] >> 5
        let level = record[1] & 0x1F
        let tier = record[2] & 0x80 != 0 ? "H" : "M"
        let depth = record[2] & 0x40 == 0 ? 8 : (profile == 2 && record[2] & 0x20 != 0 ? 12 : 10)
        return "av01.\(profile).\(level < 10 ? "0" : "")\(level)\(tier).\(depth < 10 ? "0" : "")\(depth)"
    }

    /// `hvc1.<P>.<C>.<T><L>.<B…>` (ISO/IEC 14496-15 Annex E) from the 12 bytes of a general
    /// profile_tier_level, laid out as in `hvcC` bytes 1-12: profile space (none, A, B, C) and
    /// profile_idc; the 32 compatibility flags bit-reversed, in hex without leading zeros; tier
    /// (`L` Main, `H` High) and level_idc; the six constraint bytes in hex, trailing zero bytes
    /// dropped (the first always kept). Main 10 level 4.1, progressive frames: `hvc1.2.4.L123.B0`.
    public static func hevc(_ record: [UInt8]) -> String {
        precondition(record.count >= 12, "a profile_tier_level has 12 bytes")
        let space = ["", "A", "B", "C"][Int(record[0] >> 6)]
        let tier = record[0] & 0x20 != 0 ? "H" : "L"
        let profile = record[0] & 0x1F
        let flags = record[1...4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var reversed: UInt32 = 0
        for bit in 0..<32 where flags & (1 << UInt32(bit)) != 0 { reversed |= 1 << UInt32(31 - bit) }
        var constraints = Array(record[5...10])
        while constraints.count > 1, constraints.last == 0 { constraints.removeLast() }
        return "hvc1.\(space)\(profile).\(String(reversed, radix: 16, uppercase: true)).\(tier)\(record[11])."
            + constraints.map { String($0, radix: 16, uppercase: true) }.joined(separator: ".")
    }

    /// The general profile_tier_level's 12 bytes: `hvcC` bytes 1-12, or from the first SPS (NAL type
    /// 33) of Annex B parameter sets, emulation prevention bytes removed.
    static func hevcProfileTierLevel(_ bytes: [UInt8]) -> [UInt8]? {
        if bytes.count >= 23, bytes[0] == 1 { return Array(bytes[1...12]) }
        var index = 0
        while index + 3 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1, (bytes[index + 3] >> 1) & 0x3F == 33 {
                // Two bytes of NAL header, then one of VPS id, sub-layers and nesting.
                var payload: [UInt8] = []
                var zeros = 0
                for byte in bytes[(index + 3)...] {
                    if zeros >= 2 && byte == 3 {
                        zeros = 0
                        continue
                    }
                    if zeros >= 2 && byte <= 2 { break }  // the next start code
                    zeros = byte == 0 ? zeros + 1 : 0
                    payload.append(byte)
                    if payload.count == 15 { break }
                }
                return payload.count == 15 ? Array(payload[3...14]) : nil
            }
            index += 1
        }
        return nil
    }
}
