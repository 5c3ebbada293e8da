import Foundation
import ReelExport
import TestSupport
import Testing

@Suite("Presets", .timeLimit(.minutes(10)))
struct PresetTests {
    /// `Presets/` in this checkout: the single source of truth for the shipped presets.
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Presets").standardizedFileURL

    /// Every preset file, decoded.
    static func files() throws -> [String: Preset] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
        var presets: [String: Preset] = [:]
        for name in names {
            presets[name] = try JSONDecoder().decode(
                Preset.self, from: Data(contentsOf: folder.appendingPathComponent(name)))
        }
        return presets
    }

    /// Every shipped preset is listed in the order its file gives (each file has its own `order`), and a
    /// user folder's preset without one comes after them, while an override keeps its place.
    @Test func theShippedPresetsLoadInTheirFilesOrder() throws {
        let files = try Self.files()
        #expect(files.count >= 18)
        let orders = files.values.map(\.order)
        #expect(!orders.contains(nil), "every shipped preset file names its order")
        #expect(Set(orders).count == orders.count, "two shipped presets share an order")
        let expected = files.values.sorted { ($0.order ?? 0) < ($1.order ?? 0) }.map(\.name)
        #expect(PresetLibrary.shipped.presets.map(\.name) == expected)
        #expect(expected.first == "LowQuality" && expected.contains("Passthrough"))

        let user = Fixtures.scratchFolder("preset-order")
        var added = try #require(files["1280x720.json"])
        added.name = "AAAFirstByName"
        added.aliases = nil
        added.order = nil
        try JSONEncoder().encode(added).write(to: user.appendingPathComponent("added.json"))
        var override = try #require(files["LowQuality.json"])
        override.order = nil
        override.summary = "overridden"
        try JSONEncoder().encode(override).write(to: user.appendingPathComponent("low.json"))
        let library = try PresetLibrary(userFolder: user)
        #expect(library.presets.map(\.name) == expected + ["AAAFirstByName"])
        #expect(library.presets.first?.summary == "overridden")
    }

    @Test func shippedPresetsMatchTheJSONFilesInTheSourceTree() async throws {
        for (file, decoded) in try Self.files() {
            #expect(PresetLibrary.shipped.presets.contains(decoded), "\(file) differs from the embedded copy")
        }
        #expect(PresetLibrary.shipped.presets.count == (try Self.files().count))
    }

    @Test(arguments: [
        ("1280x720", "1280x720"), ("AVAssetExportPreset1280x720", "1280x720"),
        ("avassetexportpreset1280X720", "1280x720"),
        ("medium", "MediumQuality"), ("MEDIUMQUALITY", "MediumQuality"),
        ("AVAssetExportPresetMediumQuality", "MediumQuality"),
        ("low", "LowQuality"), ("highest", "HighestQuality"), ("passthrough", "Passthrough"),
        ("AVAssetExportPresetAppleM4A", "AppleM4A"), ("hevchighestquality", "HEVCHighestQuality"), ("720p", "1280x720"),
    ])
    func lookupIsCaseInsensitiveAndAcceptsApplesPrefix(_ name: String, _ expected: String) async throws {
        #expect(try PresetLibrary.shipped.preset(named: name).name == expected)
    }

    @Test func unknownPresetListsTheKnownOnes() {
        #expect {
            _ = try PresetLibrary.shipped.preset(named: "1280x721")
        } throws: { error in
            let error = error as! ExportError
            return error.code == .unknownPreset && error.message.contains("MediumQuality")
        }
    }

    @Test(arguments: [("1280x720p", "1280x720"), ("MediumQualty", "MediumQuality"), ("hevc1080", "HEVC1920x1080")])
    func aMistypedNameSaysWhichWasMeant(_ name: String, _ meant: String) {
        #expect {
            _ = try PresetLibrary.shipped.preset(named: name)
        } throws: { error in
            (error as! ExportError).message.contains("did you mean '\(meant)'?")
        }
        #expect {
            _ = try PresetLibrary.shipped.preset(named: "banana")
        } throws: { error in
            !(error as! ExportError).message.contains("did you mean")
        }
    }

    @Test func anUnknownKeyInAPresetFileIsAnError() async throws {
        let folder = Fixtures.scratchFolder("strict-preset")
        try """
        {"name": "Tiny", "summary": "tiny", "kind": "video", "colour": "hdr",
         "video": {"codec": "h264", "box": [160, 90], "encoderPreset": "ultrafast", "crff": 30, "crf": 30},
         "audio": {"codec": "aac", "bitrate": 48000, "maxChannels": 1}}
        """.write(to: folder.appendingPathComponent("Tiny.json"), atomically: true, encoding: .utf8)
        #expect {
            _ = try PresetLibrary(userFolder: folder)
        } throws: { error in
            let error = error as! ExportError
            return error.code == .invalidPreset && error.message.contains("Tiny.json")
                && error.message.contains("unknown key 'video.crff' (did you mean 'crf'?)")
                && error.message.contains("unknown key 'colour'") && !error.message.contains("\n")
        }
    }

    @Test func userFolderAddsAndOverrides() async throws {
        let folder = Fixtures.scratchFolder("presets")
        let custom = """
            {"name": "Tiny", "summary": "tiny", "kind": "video",
             "video": {"codec": "h264", "box": [160, 90], "encoderPreset": "ultrafast", "crf": 30},
             "audio": {"codec": "aac", "bitrate": 48000, "maxChannels": 1}}
            """
        let override = """
            {"name": "MediumQuality", "summary": "mine", "kind": "video",
             "video": {"codec": "h264", "box": [480, 270], "encoderPreset": "fast", "crf": 26},
             "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}}
            """
        try custom.write(to: folder.appendingPathComponent("Tiny.json"), atomically: true, encoding: .utf8)
        try override.write(to: folder.appendingPathComponent("medium.json"), atomically: true, encoding: .utf8)
        let library = try PresetLibrary(userFolder: folder)
        #expect(library.presets.count == PresetLibrary.shipped.presets.count + 1)
        #expect(try library.preset(named: "tiny").video?.box == [160, 90])
        #expect(try library.preset(named: "medium").summary == "mine")
    }

    @Test(arguments: [
        (
            #"{"name": "X", "summary": "x", "kind": "video", "video": {"codec": "h264", "encoderPreset": "fast", "crf": "high"}, "audio": {"codec": "aac", "bitrate": 1, "maxChannels": 2}}"#,
            "video.crf"
        ),
        (
            #"{"name": "X", "summary": "x", "kind": "video", "video": {"codec": "h264", "encoderPreset": "fast"}, "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}}"#,
            "video.crf"
        ),
        (
            #"{"name": "X", "summary": "x", "kind": "video", "video": {"codec": "vp9", "encoderPreset": "fast", "crf": 20}, "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}}"#,
            "video.codec"
        ),
        (
            #"{"name": "X", "summary": "x", "kind": "video", "video": {"codec": "h264", "encoderPreset": "fast", "crf": 80}, "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}}"#,
            "video.crf"
        ),
        (
            #"{"name": "X", "summary": "x", "kind": "video", "video": {"codec": "h264", "box": [720, 1280], "encoderPreset": "fast", "crf": 20}, "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}}"#,
            "video.box"
        ),
        (
            #"{"name": "X", "summary": "x", "kind": "audio", "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 6}}"#,
            "audio.maxChannels"
        ),
        (#"{"name": "X", "kind": "audio", "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}}"#, "summary"),
        (
            #"{"name": "X", "summary": "x", "kind": "audio", "audio": {"codec": "aac", "bitrate": 96000, "maxChannels": 2}"#,
            "not valid JSON"
        ),
    ])
    func malformedPresetNamesTheFileAndTheField(_ json: String, _ field: String) async throws {
        let folder = Fixtures.scratchFolder("bad-preset")
        try json.write(to: folder.appendingPathComponent("Broken.json"), atomically: true, encoding: .utf8)
        #expect {
            _ = try PresetLibrary(userFolder: folder)
        } throws: { error in
            let error = error as! ExportError
            return error.code == .invalidPreset && error.message.contains("Broken.json")
                && error.message.contains(field)
                && !error.message.contains("\n")
        }
    }

    @Test(arguments: [
        // Apple's measured anchors for a 16:9 1080p source.
        ("MediumQuality", 1920, 1080, 568, 320), ("LowQuality", 1920, 1080, 224, 128),
        ("HighestQuality", 1920, 1080, 1920, 1080), ("1280x720", 1920, 1080, 1280, 720),
        ("640x480", 1920, 1080, 640, 360), ("960x540", 1920, 1080, 960, 540),
        // Portrait fits the box turned on its side.
        ("1280x720", 1080, 1920, 720, 1280), ("MediumQuality", 1080, 1920, 320, 568),
        // Never upscaled; odd sizes become even.
        ("1920x1080", 640, 360, 640, 360), ("1280x720", 33, 17, 32, 16), ("HighestQuality", 1001, 563, 1000, 562),
        // 4:3 into a 16:9 box.
        ("1280x720", 1440, 1080, 960, 720), ("MediumQuality", 640, 480, 426, 320),
    ])
    func outputSizeFitsTheBox(
        _ preset: String, _ width: Int, _ height: Int, _ expectedWidth: Int, _ expectedHeight: Int
    ) async throws {
        let size = try PresetLibrary.shipped.preset(named: preset).outputSize(forDisplayWidth: width, height: height)
        #expect(size.width == expectedWidth && size.height == expectedHeight, "\(preset) \(width)x\(height) → \(size)")
    }

    /// An HDR ladder's SDR rungs take the settings of the H.264 preset with the same box as each HEVC
    /// rung (`HLSLadderHDR1080`: the `HLSLadder1080` rungs' presets), or the default preset's for rungs
    /// given as sizes under an HEVC preset; a ladder preset's `"sdrRungs": false` and `noSdrRungs`
    /// (`--no-sdr-rungs`) leave them out, and without a ladder that option is refused.
    @Test func anHDRLaddersSDRRungsTakeTheH264PresetsOfTheirBoxes() throws {
        let shipped = PresetLibrary.shipped
        let hdr = try #require(try ExportRequest(preset: "HLSLadderHDR1080").resolve(presets: shipped).ladder)
        #expect(hdr.writesSDRRungs && hdr.sdrRungs == true)
        #expect(hdr.sdrRungPresets?.map(\.name) == ["1920x1080", "1280x720", "960x540", "640x480"])
        #expect(hdr.sdrRungPresets?.map { $0.video?.crf } == [21, 21, 22, 22])
        let sized = try #require(
            try ExportRequest(preset: "HEVC1920x1080", ladder: "1280x720,640x360").resolve(presets: shipped).ladder)
        #expect(sized.writesSDRRungs && sized.sdrRungPresets?.map(\.name) == ["1920x1080", "1920x1080"])
        let h264 = try #require(try ExportRequest(preset: "HLSLadder1080").resolve(presets: shipped).ladder)
        #expect(h264.sdrRungPresets == nil)
        let optedOut = try #require(
            try ExportRequest(preset: "HLSLadderHDR1080", noSdrRungs: true).resolve(presets: shipped).ladder)
        #expect(!optedOut.writesSDRRungs)
        #expect {
            _ = try ExportRequest(preset: "HEVC1920x1080", noSdrRungs: true).resolve(presets: shipped)
        } throws: { error in
            (error as! ExportError).message.contains("--no-sdr-rungs go with --type hls")
        }

        let folder = Fixtures.scratchFolder("hdr-ladder-preset")
        let json =
            #"{"name": "HDROnly", "summary": "x", "kind": "ladder", "ladder": {"rungs": ["HEVC1280x720", "HEVC640x480"], "sdrRungs": false}}"#
        try json.write(to: folder.appendingPathComponent("HDROnly.json"), atomically: true, encoding: .utf8)
        let library = try PresetLibrary(userFolder: folder)
        let own = try #require(try ExportRequest(preset: "HDROnly").resolve(presets: library).ladder)
        #expect(!own.writesSDRRungs && own.sdrRungPresets?.map(\.name) == ["1280x720", "640x480"])
    }

    @Test func outputTypesAcceptApplesIdentifiers() {
        #expect(OutputType(name: "public.mpeg-4") == .mp4)
        #expect(OutputType(name: "com.apple.quicktime-movie") == .mov)
        #expect(OutputType(name: "com.apple.m4v-video") == .m4v)
        #expect(OutputType(name: "com.apple.m4a-audio") == .m4a)
        #expect(OutputType(name: ".MOV") == .mov)
        #expect(OutputType(name: "avi") == nil)
    }

    @Test func timeRangesParse() {
        #expect(TimeRange(parsing: "5-12.5") == TimeRange(start: 5, end: 12.5))
        #expect(TimeRange(parsing: "00:01:00-00:02:30") == TimeRange(start: 60, end: 150))
        #expect(TimeRange(parsing: "3-") == TimeRange(start: 3, end: nil))
        #expect(TimeRange(parsing: "abc") == nil)
        #expect(TimeRange(parsing: "1-x") == nil)
    }
}
