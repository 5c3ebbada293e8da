import Foundation
import Testing

@testable import ReelMedia

/// HEVC codec strings against the examples ISO/IEC 14496-15 Annex E and Apple's HLS authoring
/// specification give, from `hvcC` bytes and from an Annex B SPS with emulation prevention bytes.
@Suite("Codec strings", .timeLimit(.minutes(1)))
struct CodecStringTests {
    /// A general profile_tier_level: profile space, tier, profile_idc; the compatibility flags'
    /// first byte (flag 0 its top bit); six constraint bytes; level_idc.
    static func ptl(space: UInt8 = 0, high: Bool = false, profile: UInt8, flags: UInt8, constraint: UInt8, level: UInt8)
        -> [UInt8]
    {
        [space << 6 | (high ? 0x20 : 0) | profile, flags, 0, 0, 0, constraint, 0, 0, 0, 0, 0, level]
    }

    @Test func hevcStringsMatchThePublishedExamples() {
        // Apple: Main 10 level 4.1 and 5.0; 14496-15 E.4: Main level 3.1 (flags 1 and 2), and
        // profile space 1 with flag 7 set.
        #expect(CodecString.hevc(Self.ptl(profile: 2, flags: 0x20, constraint: 0xB0, level: 123)) == "hvc1.2.4.L123.B0")
        #expect(CodecString.hevc(Self.ptl(profile: 2, flags: 0x20, constraint: 0xB0, level: 150)) == "hvc1.2.4.L150.B0")
        #expect(CodecString.hevc(Self.ptl(profile: 1, flags: 0x60, constraint: 0xB0, level: 93)) == "hvc1.1.6.L93.B0")
        #expect(
            CodecString.hevc(Self.ptl(space: 1, profile: 1, flags: 0x01, constraint: 0xB0, level: 93))
                == "hvc1.A1.80.L93.B0")
        #expect(
            CodecString.hevc(Self.ptl(high: true, profile: 2, flags: 0x20, constraint: 0x90, level: 153))
                == "hvc1.2.4.H153.90")
    }

    /// The AV1 ISOBMFF binding's example `av01.0.04M.10.0.112.09.16.09.0` starts with the four fields
    /// Reel writes: Main profile, level 3.0 (`seq_level_idx` 4), Main tier, 10-bit.
    @Test func av1StringsComeFromTheAv1CRecord() {
        // marker+version, profile|level, tier|high_bitdepth|twelve_bit|mono|subsampling x,y|position, ...
        #expect(CodecString.av1([0x81, 0x04, 0x4C, 0x00]) == "av01.0.04M.10")
        #expect(CodecString.av1([0x81, 0x08, 0x0C, 0x00]) == "av01.0.08M.08")
        #expect(CodecString.av1([0x81, 0x0D, 0x8C, 0x00]) == "av01.0.13H.08")
        #expect(CodecString.av1([0x81, 0x50, 0x6C, 0x00]) == "av01.2.16M.12")
        // A bare sequence header OBU (an encoder's extradata) is not an av1C record.
        #expect(CodecString.av1([0x0A, 0x0B, 0x00, 0x00]) == nil)
    }

    @Test func theProfileIsReadFromHvcCOrFromAnAnnexBSPS() throws {
        let main10 = Self.ptl(profile: 2, flags: 0x20, constraint: 0xB0, level: 123)
        // An hvcC record: version 1, the 12 bytes, then the rest of its 23-byte header.
        let record: [UInt8] = [1] + main10 + [0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0]
        #expect(CodecString.hevcProfileTierLevel(record) == main10)
        // A VPS, then the SPS (NAL type 33: header 0x42 0x01), whose zero runs carry emulation
        // prevention bytes (00 00 03) as the bitstream must.
        let vps: [UInt8] = [0, 0, 0, 1, 0x40, 0x01, 0x0C, 0x01, 0xFF, 0xFF]
        let sps: [UInt8] = [
            0, 0, 0, 1, 0x42, 0x01, 0x01, 0x02, 0x20, 0x00, 0x00, 0x03, 0x00, 0xB0, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03,
            0x00, 0x7B, 0xA0,
        ]
        let found = try #require(CodecString.hevcProfileTierLevel(vps + sps))
        #expect(found == main10)
        #expect(CodecString.hevc(found) == "hvc1.2.4.L123.B0")
    }
}
