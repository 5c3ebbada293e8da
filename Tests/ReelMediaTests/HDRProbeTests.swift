import Foundation
import ReelMedia
import TestSupport
import Testing

/// The probe tells SDR, HLG, PQ and Dolby Vision apart, reads HDR10 static metadata from the container
/// or the first frame, and reads the whole display matrix (mirrors too); ffprobe agrees.
@Suite("HDR and orientation facts", .tags(.process, .media), .timeLimit(.minutes(6)))
struct HDRProbeTests {
    func video(_ recipe: Fixtures.Recipe) async throws -> StreamInfo {
        let url = try await Fixtures.url(recipe)
        return try #require(try MediaProbe.probe(path: url.path).bestVideoStream)
    }

    @Test func sdrAndHLGCarryNoStaticMetadata() async throws {
        let sdr = try await video(Fixtures.sdrOriginal)
        #expect(sdr.dynamicRange == .sdr && sdr.peakLuminance == nil && sdr.masteringDisplay == nil)
        let hlg = try await video(Fixtures.hlg)
        #expect(hlg.dynamicRange == .hlg && hlg.colorTransfer == "arib-std-b67" && hlg.bitDepth == 10)
        #expect(hlg.masteringDisplay == nil && hlg.contentLightLevel == nil && hlg.hdrMetadataSource == nil)
        #expect(hlg.peakLuminance == 1000)
        #expect(hlg.dolbyVision == nil && hlg.hasDolbyVisionRPU == false)
    }

    @Test func hdr10MetadataComesFromTheFirstFramesSEI() async throws {
        let url = try await Fixtures.url(Fixtures.pq)
        let pq = try #require(try MediaProbe.probe(path: url.path).bestVideoStream)
        #expect(pq.dynamicRange == .pq && pq.hdrMetadataSource == .bitstream)
        let frame = try await ProbedFile.firstFrameSideData(url)
        let display = try #require(frame.first { $0.side_data_type == "Mastering display metadata" })
        let light = try #require(frame.first { $0.side_data_type == "Content light level metadata" })
        #expect(pq.contentLightLevel?.maxContentLightLevel == light.max_content)
        #expect(pq.contentLightLevel?.maxFrameAverageLightLevel == light.max_average)
        #expect(pq.masteringDisplay?.maxLuminance == ProbedFile.Stream.SideData.value(display.max_luminance))
        #expect(pq.masteringDisplay?.minLuminance == ProbedFile.Stream.SideData.value(display.min_luminance))
        #expect(pq.masteringDisplay?.red?.x == ProbedFile.Stream.SideData.value(display.red_x))
        #expect(pq.masteringDisplay?.green?.y == ProbedFile.Stream.SideData.value(display.green_y))
        #expect(pq.masteringDisplay?.whitePoint?.x == ProbedFile.Stream.SideData.value(display.white_point_x))
        #expect(pq.contentLightLevel?.maxContentLightLevel == 1000 && pq.peakLuminance == 1000)
    }

    @Test func containerMetadataWinsOverSEI() async throws {
        let url = try await Fixtures.url(Fixtures.pqWithBoxes)
        let pq = try #require(try MediaProbe.probe(path: url.path).bestVideoStream)
        let stream = try #require(try await ProbedFile.probe(url).video)
        let light = try #require(stream.side_data_list?.first { $0.side_data_type == "Content light level metadata" })
        let display = try #require(stream.side_data_list?.first { $0.side_data_type == "Mastering display metadata" })
        #expect(pq.hdrMetadataSource == .container)
        #expect(pq.contentLightLevel?.maxContentLightLevel == light.max_content && light.max_content == 800)
        #expect(pq.masteringDisplay?.maxLuminance == ProbedFile.Stream.SideData.value(display.max_luminance))
        #expect(pq.masteringDisplay?.maxLuminance == 4000)
        // MaxCLL comes first: the brightest pixel, not the display's peak.
        #expect(pq.peakLuminance == 800)
    }

    @Test(arguments: [
        (Fixtures.dolbyVision84, 8, 4, DynamicRange.hlg), (Fixtures.dolbyVision81, 8, 1, DynamicRange.pq),
        (Fixtures.dolbyVision5, 5, 0, nil),
    ])
    func dolbyVisionConfigurationIsRead(
        _ recipe: Fixtures.Recipe, profile: Int, compatibility: Int, base: DynamicRange?
    )
        async throws
    {
        let url = try await Fixtures.url(recipe)
        let dv = try #require(try MediaProbe.probe(path: url.path).bestVideoStream)
        let stream = try #require(try await ProbedFile.probe(url).video)
        let record = try #require(stream.side_data_list?.first { $0.side_data_type == "DOVI configuration record" })
        #expect(dv.dynamicRange == .dolbyVision)
        #expect(dv.dolbyVision?.profile == profile && record.dv_profile == profile)
        #expect(
            dv.dolbyVision?.compatibilityID == compatibility && record.dv_bl_signal_compatibility_id == compatibility)
        #expect(dv.dolbyVision?.level == record.dv_level)
        #expect(dv.dolbyVision?.rpuPresent == (record.rpu_present_flag == 1))
        #expect(dv.dolbyVision?.baseLayerPresent == (record.bl_present_flag == 1))
        #expect(dv.dolbyVision?.baseLayer == base && dv.baseDynamicRange == base)
        #expect(dv.codec == "hevc" && dv.codecTag == (profile == 5 ? "dvh1" : "hvc1"))
    }

    @Test func rpuNALUnitsAreSeen() async throws {
        let dv = try await video(Fixtures.dolbyVisionWithRPU)
        #expect(dv.hasDolbyVisionRPU == true && dv.dolbyVision?.name == "8.4")
        #expect(try await video(Fixtures.dolbyVision84).hasDolbyVisionRPU == false)
    }

    @Test(arguments: [
        (Fixtures.Mirror.horizontal, 0, 480, 270), (.vertical, 180, 480, 270), (.horizontalThenClockwise, 90, 270, 480),
    ])
    func mirrorsAreReadWithTheRotation(_ mirror: Fixtures.Mirror, rotation: Int, width: Int, height: Int) async throws {
        let url = try await Fixtures.url(Fixtures.mirrored(mirror))
        let info = try #require(try MediaProbe.probe(path: url.path).bestVideoStream)
        #expect(info.isMirrored == true && info.rotation == rotation)
        #expect(info.displaySize?.width == width && info.displaySize?.height == height)
        #expect(try await ProbedFile.probe(url).video?.hasDisplayMatrix == true)
    }

    @Test func rotationsAreNotMirrors() async throws {
        for tag in [90, 180, 270] {
            let info = try await video(Fixtures.rotated(tag))
            #expect(info.isMirrored == false && info.rotation == (360 - tag) % 360)
        }
    }
}
