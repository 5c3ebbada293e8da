import Foundation
import TestSupport
import Testing

@testable import ReelMedia

/// The tone-mapping kernel on frames made here: where reference white and black land, HLG's OOTF acts
/// on luminance (BT.2100), a grey ramp stays monotonic, the roll-off follows the picture's peak
/// smoothly, a source dimmer than reference white is handled, and the AVX2 path matches the C one.
@Suite("Tone mapper", .timeLimit(.minutes(2)))
struct ToneMapperTests {
    /// A 10-bit 4:2:0 frame whose luma is `luma(x, y)` and chroma `chroma` (10-bit codes).
    static func source(
        width: Int, height: Int, chroma: (UInt16, UInt16) = (512, 512), luma: (Int, Int) -> UInt16
    ) throws -> Frame {
        let frame = try Frame(width: Int32(width), height: Int32(height), format: ToneMapper.inputFormat)
        for (index, size) in [(0, (width, height)), (1, (width / 2, height / 2)), (2, (width / 2, height / 2))] {
            let plane = try #require(frame.plane(index))
            for y in 0..<size.1 {
                let row = UnsafeMutableRawPointer(plane.bytes + y * plane.stride).assumingMemoryBound(to: UInt16.self)
                for x in 0..<size.0 { row[x] = index == 0 ? luma(x, y) : index == 1 ? chroma.0 : chroma.1 }
            }
        }
        return frame
    }

    /// Maps `frame` (with a fresh mapper unless given one) and returns the 8-bit output's planes, row by row.
    static func map(
        _ frame: Frame, _ mapping: ToneMapping, vectorized: Bool = true, with mapper: ToneMapper? = nil
    ) throws -> [[UInt8]] {
        let width = Int(frame.pointer.pointee.width)
        let height = Int(frame.pointer.pointee.height)
        let output = try Frame(width: Int32(width), height: Int32(height), format: ToneMapper.outputFormat)
        try (mapper ?? ToneMapper(mapping, vectorized: vectorized)).map(frame.pointer, into: output.pointer)
        return try [(0, width, height), (1, width / 2, height / 2), (2, width / 2, height / 2)].map { index, w, h in
            let plane = try #require(output.plane(index))
            return (0..<h).flatMap { y in Array(UnsafeBufferPointer(start: plane.bytes + y * plane.stride, count: w)) }
        }
    }

    static let hlg = ToneMapping(transfer: .hlg, peakLuminance: 1000)
    static let pq = ToneMapping(transfer: .pq, peakLuminance: 1000)

    /// 10-bit limited-range code of a signal level.
    static func code(_ signal: Double) -> UInt16 { UInt16((64 + 876 * signal).rounded()) }

    @Test(arguments: [(hlg, 0.75), (pq, 0.5806)])
    func referenceWhiteLandsOnSDRWhiteAndBlackOnBlack(_ mapping: ToneMapping, white: Double) throws {
        let frame = try Self.source(width: 16, height: 4) { x, _ in x < 8 ? Self.code(0) : Self.code(white) }
        let mapper = try ToneMapper(mapping)
        let planes = try Self.map(frame, mapping, with: mapper)
        // Nothing is brighter than reference white, so nothing rolls off: it is SDR white.
        #expect(planes[0][0] == 16 && (234...235).contains(planes[0][15]), "\(planes[0][0]) \(planes[0][15])")
        #expect(planes[1].allSatisfy { (127...129).contains($0) } && planes[2].allSatisfy { (127...129).contains($0) })
        #expect(mapper.lastPeakLuminance <= 204, "rolled off to \(mapper.lastPeakLuminance) cd/m²")
    }

    /// BT.709's red, blue and a mid yellow at reference white, put into HLG here with BT.2100's maths
    /// (the inverse OOTF on luminance, for a 1000 cd/m² display) and 10-bit codes, come out as
    /// BT.2100's exact maths (in Double, here) makes of those codes, within 2 code values: an OOTF
    /// applied to each channel instead is 20-30 off (red comes out as 255,0,53, blue as 0,57,255).
    @Test(arguments: [[1.0, 0, 0], [0, 0, 1.0], [0.5, 0.45, 0.02]])
    func hlgsSystemGammaActsOnLuminance(_ colour: [Double]) throws {
        let toBT2020 = [[0.6274, 0.3293, 0.0433], [0.0691, 0.9195, 0.0114], [0.0164, 0.0880, 0.8956]]
        let toBT709 = [
            [1.6604910, -0.5876411, -0.0728499], [-0.1245505, 1.1328999, -0.0083494],
            [-0.0181508, -0.1005789, 1.1187297],
        ]
        func times(_ matrix: [[Double]], _ v: [Double]) -> [Double] {
            matrix.map { row in zip(row, v).map { $0 * $1 }.reduce(0, +) }
        }
        func luminance2020(_ v: [Double]) -> Double { 0.2627 * v[0] + 0.6780 * v[1] + 0.0593 * v[2] }
        let (a, b) = (0.17883277, 1 - 4 * 0.17883277)
        let c = 0.5 - a * log(4 * a)
        // Display light (1 = 1000 cd/m²) to HLG signal: Ys = Yd^(1/1.2), scene = display / Ys^0.2.
        let display = times(toBT2020, colour).map { $0 * 203 / 1000 }
        let sceneLuminance = pow(luminance2020(display), 1 / 1.2)
        let signal = display.map { light -> Double in
            let scene = light / pow(sceneLuminance, 0.2)
            return scene <= 1.0 / 12 ? (3 * scene).squareRoot() : a * log(12 * scene - b) + c
        }
        let luma = luminance2020(signal)
        let codes = (
            y: Self.code(luma), cb: UInt16((512 + 896 * (signal[2] - luma) / 1.8814).rounded()),
            cr: UInt16((512 + 896 * (signal[0] - luma) / 1.4746).rounded())
        )
        let frame = try Self.source(width: 16, height: 16, chroma: (codes.cb, codes.cr)) { _, _ in codes.y }
        let planes = try Self.map(frame, Self.hlg)
        // The same codes back with BT.2100's exact maths: scene light, display = 1000/203 Ys^0.2 scene
        // (reference white 1), BT.709 primaries (a negative channel moved toward grey), BT.1886's inverse.
        let y = (Double(codes.y) - 64) / 876
        let cb = (Double(codes.cb) - 512) / 896
        let cr = (Double(codes.cr) - 512) / 896
        let red = y + 1.4746 * cr
        let blue = y + 1.8814 * cb
        let decoded = [red, (y - 0.2627 * red - 0.0593 * blue) / 0.6780, blue].map { e -> Double in
            let e = min(max(e, 0), 1)
            return e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
        }
        let gain = 1000 / 203 * pow(luminance2020(decoded), 0.2)
        var rgb = times(toBT709, decoded.map { $0 * gain })
        let grey = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
        if let low = rgb.min(), low < 0 { rgb = rgb.map { grey + grey / (grey - low) * ($0 - grey) } }
        let sdr = rgb.map { pow(min(max($0, 0), 1), 1 / 2.4) }
        let sdrLuma = 0.2126 * sdr[0] + 0.7152 * sdr[1] + 0.0722 * sdr[2]
        let expected = [
            16 + 219 * sdrLuma, 128 + 224 * (sdr[2] - sdrLuma) / 1.8556, 128 + 224 * (sdr[0] - sdrLuma) / 1.5748,
        ]
        // And what the colour was in BT.709 to begin with: within 8 code values of that too.
        let original = colour.map { pow($0, 1 / 2.4) }
        let originalLuma = 0.2126 * original[0] + 0.7152 * original[1] + 0.0722 * original[2]
        let truth = [
            16 + 219 * originalLuma, 128 + 224 * (original[2] - originalLuma) / 1.8556,
            128 + 224 * (original[0] - originalLuma) / 1.5748,
        ]
        for plane in 0..<3 {
            let worst = planes[plane].map { abs(Double($0) - expected[plane]) }.max() ?? 0
            #expect(worst <= 2, "plane \(plane): \(planes[plane][0]) for \(expected[plane])")
            #expect(abs(expected[plane] - truth[plane]) <= 8, "plane \(plane): \(expected[plane]) for \(truth[plane])")
        }
    }

    @Test(arguments: [hlg, pq])
    func aGreyRampStaysMonotonicAndReachesWhite(_ mapping: ToneMapping) throws {
        let frame = try Self.source(width: 880, height: 2) { x, _ in UInt16(64 + x) }
        for vectorized in [true, false] {
            let luma = try Self.map(frame, mapping, vectorized: vectorized)[0].prefix(877)
            #expect(zip(luma, luma.dropFirst()).allSatisfy { $0 <= $1 }, "vectorized: \(vectorized)")
            #expect(luma.first == 16 && luma.last == 235, "vectorized: \(vectorized)")
        }
    }

    /// A source that says it is never brighter than 120 cd/m² has no highlights to roll off: what is
    /// brighter anyway clips to SDR white.
    @Test func aSourceDimmerThanReferenceWhiteClipsInsteadOfRollingOff() throws {
        let dim = ToneMapping(transfer: .pq, peakLuminance: 120)
        let frame = try Self.source(width: 880, height: 2) { x, _ in UInt16(64 + x) }
        let mapper = try ToneMapper(dim)
        let luma = try Self.map(frame, dim, with: mapper)[0].prefix(877)
        #expect(zip(luma, luma.dropFirst()).allSatisfy { $0 <= $1 } && luma.last == 235)
        // PQ 58 % (203 cd/m²) is white already.
        #expect(luma[Int(0.5806 * 876)] >= 234)
        #expect(mapper.lastPeakLuminance <= 204)
    }

    /// Reference white beside black for 3 frames, then beside 1000 cd/m² highlights for 16, then
    /// alone again for 16 (HLG): reference white makes room for the highlights step by step (no frame
    /// moves it half the way), settles below 235, and comes back more slowly than it went; below the
    /// knee nothing moves at all.
    @Test func theRollOffFollowsThePicturesPeakSmoothly() throws {
        let plain = try Self.source(width: 64, height: 64) { x, _ in
            x < 16 ? Self.code(0.3) : x < 32 ? Self.code(0.75) : Self.code(0)
        }
        let bright = try Self.source(width: 64, height: 64) { x, _ in
            x < 16 ? Self.code(0.3) : x < 32 ? Self.code(0.75) : Self.code(1)
        }
        let mapper = try ToneMapper(Self.hlg)
        var white: [Int] = []
        var grey: [Int] = []
        var peaks: [Double] = []
        for frame in Array(repeating: plain, count: 3) + Array(repeating: bright, count: 16)
            + Array(repeating: plain, count: 16)
        {
            let luma = try Self.map(frame, Self.hlg, with: mapper)[0]
            white.append(Int(luma[24]))
            grey.append(Int(luma[8]))
            peaks.append(mapper.lastPeakLuminance)
        }
        #expect(white[0..<3].allSatisfy { $0 >= 234 } && peaks[0..<3].allSatisfy { $0 <= 204 }, "\(white) \(peaks)")
        let dimmed = white[18]
        #expect((200...228).contains(dimmed) && peaks[18] > 900, "settled at \(dimmed), peak \(peaks[18])")
        let down = Array(white[2...18])
        #expect(zip(down, down.dropFirst()).allSatisfy { $0 >= $1 }, "\(down)")
        #expect(zip(down, down.dropFirst()).allSatisfy { 2 * ($0 - $1) < white[2] - dimmed }, "\(down)")
        let up = Array(white[18...])
        #expect(zip(up, up.dropFirst()).allSatisfy { $0 <= $1 }, "\(up)")
        // Four frames after the highlights go, less than half the way back; four frames after they
        // came, more than half the way down.
        #expect(
            white[22] - dimmed < (white[0] - dimmed) / 2 && white[0] - white[6] > (white[0] - dimmed) / 2, "\(white)")
        // HLG 30 % (about 11 cd/m²) is far below any knee.
        #expect(Set(grey).count == 1, "\(grey)")
    }

    /// Random pictures (seeded): the two paths differ by at most one code value anywhere.
    @Test(
        .enabled(if: (try? ToneMapper(hlg))?.vectorized == true, "no AVX2+FMA here: it would compare C with C"),
        arguments: [hlg, pq, ToneMapping(transfer: .pq, peakLuminance: 4000, bt2020Primaries: false)])
    func theVectorPathMatchesThePlainOne(_ mapping: ToneMapping) throws {
        var random = SeededGenerator(seed: 13)
        let width = 70
        let height = 8  // 64 columns for the vector path, 6 left for the plain one
        var values = (0..<(width * height)).map { _ in UInt16.random(in: 0...1023, using: &random) }
        let frame = try Self.source(width: width, height: height) { x, y in values[y * width + x] }
        for index in [1, 2] {
            let plane = try #require(frame.plane(index))
            for y in 0..<(height / 2) {
                let row = UnsafeMutableRawPointer(plane.bytes + y * plane.stride).assumingMemoryBound(to: UInt16.self)
                for x in 0..<(width / 2) { row[x] = UInt16.random(in: 64...960, using: &random) }
            }
        }
        values.removeAll()
        let vector = try Self.map(frame, mapping, vectorized: true)
        let plain = try Self.map(frame, mapping, vectorized: false)
        for plane in 0..<3 {
            let worst = zip(vector[plane], plain[plane]).map { abs(Int($0) - Int($1)) }.max() ?? 0
            #expect(worst <= 1, "plane \(plane) differs by \(worst)")
        }
    }

    @Test func framesOfTheWrongFormatAreRefused() throws {
        let eightBit = try Frame(width: 16, height: 16, format: ToneMapper.outputFormat)
        let output = try Frame(width: 16, height: 16, format: ToneMapper.outputFormat)
        #expect(throws: MediaError.self) { try ToneMapper(Self.hlg).map(eightBit.pointer, into: output.pointer) }
    }
}
