internal import CFFmpeg
internal import CFFmpegShim

/// Owns a tone mapping's tables (`reel_tonemap`, freed with `reel_tonemap_free`) and maps HDR frames
/// to SDR with them: 10-bit BT.2020 YCbCr 4:2:0 in (what the scaler makes of an HLG or PQ source),
/// 8-bit BT.709 limited-range YCbCr 4:2:0 out, the same size. Highlights roll off up to each
/// picture's own peak, measured and smoothed over the pictures before it, so frames are to be
/// mapped in order. The maths is in CFFmpegShim's tonemap.c; an AVX2 path is used where the CPU
/// has it.
///
/// Not `Sendable`: one per video stage, on its thread.
final class ToneMapper {
    private let map: OpaquePointer
    let mapping: ToneMapping
    /// Whether the AVX2+FMA path runs; false forces the plain C one (tests compare the two).
    let vectorized: Bool

    /// The pixel format frames must have to be mapped.
    static let inputFormat = AV_PIX_FMT_YUV420P10LE
    /// The pixel format of the mapped frames.
    static let outputFormat = AV_PIX_FMT_YUV420P

    init(_ mapping: ToneMapping, vectorized: Bool = true) throws(MediaError) {
        let transfer = mapping.transfer == .hlg ? REEL_TONEMAP_HLG : REEL_TONEMAP_PQ
        guard let map = reel_tonemap_create(transfer, mapping.peakLuminance, mapping.bt2020Primaries ? 1 : 0) else {
            throw MediaError(kind: .internalFailure, call: "reel_tonemap_create", message: "out of memory")
        }
        self.map = map
        self.mapping = mapping
        self.vectorized = vectorized && reel_tonemap_has_avx2() != 0
    }

    deinit { reel_tonemap_free(map) }

    /// The peak in cd/m² the last frame's highlights were rolled off to (203, reference white, or
    /// less: the frame had none, and nothing was compressed).
    var lastPeakLuminance: Double { reel_tonemap_peak(map) }

    /// Maps `source` (`inputFormat`) into `destination` (`outputFormat`, same size, writable), the
    /// next frame in order.
    func map(_ source: UnsafePointer<AVFrame>, into destination: UnsafeMutablePointer<AVFrame>) throws(MediaError) {
        try check(
            reel_tonemap_apply(map, source, destination, vectorized ? 1 : 0), "reel_tonemap_apply",
            kind: .internalFailure, context: "the frames are not 10-bit in, 8-bit out 4:2:0 of one even size")
    }
}
