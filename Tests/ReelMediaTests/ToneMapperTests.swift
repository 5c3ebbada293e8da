import Foundation
import TestSupport
import Testing

@testable import ReelMedia

/// The tone-mapping kernel on frames made here: where reference white and black land, a grey ramp
/// stays monotonic, a peak below the roll-off's knee is handled, and the AVX2 path matches the C one.
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

    /// Maps `frame` and returns the 8-bit output's planes, row by row.
    static func map(_ frame: Frame, _ mapping: ToneMapping, vectorized: Bool = true) throws -> [[UInt8]] {
        let width = Int(frame.pointer.pointee.width)
        let height = Int(frame.pointer.pointee.height)
        let output = try Frame(width: Int32(width), height: Int32(height), format: ToneMapper.outputFormat)
        try ToneMapper(mapping, vectorized: vectorized).map(frame.pointer, into: output.pointer)
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
    func referenceWhiteLandsNearSDRWhiteAndBlackOnBlack(_ mapping: ToneMapping, white: Double) throws {
        let frame = try Self.source(width: 16, height: 4) { x, _ in x < 8 ? Self.code(0) : Self.code(white) }
        let planes = try Self.map(frame, mapping)
        // Reference white lies above the roll-off's knee (85 %), so it comes out just under 235.
        #expect(planes[0][0] == 16 && (226...235).contains(planes[0][15]), "\(planes[0][0]) \(planes[0][15])")
        #expect(planes[1].allSatisfy { (127...129).contains($0) } && planes[2].allSatisfy { (127...129).contains($0) })
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

    @Test func aPeakBelowTheKneeClipsInsteadOfRollingOff() throws {
        let dim = ToneMapping(transfer: .pq, peakLuminance: 120)
        let frame = try Self.source(width: 880, height: 2) { x, _ in UInt16(64 + x) }
        let luma = try Self.map(frame, dim)[0].prefix(877)
        #expect(zip(luma, luma.dropFirst()).allSatisfy { $0 <= $1 } && luma.last == 235)
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
