import Foundation
import ReelBoxes
import ReelSystem
import TestSupport
import Testing

@testable import ReelLibrary

/// Files built to break parsers: each is recorded (skipped with a reason, or indexed with what could
/// be read) and the scan goes on; nothing crashes, hangs or grows without bound.
@Suite("Hostile files", .tags(.process, .media), .timeLimit(.minutes(10)))
struct HostileFileTests {
    typealias W = BoxWriter

    /// A JPEG header with an Exif block whose Apple MakerNote says `identifier` (tag 0x0011),
    /// declaring `count` bytes for it (its real length unless told), then a frame header and a scan.
    static func jpeg(identifier: String, count: Int? = nil, width: Int = 64, height: Int = 48, salt: Int = 0) -> [UInt8]
    {
        let value: [UInt8] = Array(identifier.utf8) + [0]
        return appleJPEG([(0x0011, 2, UInt32(count ?? value.count), value)], width: width, height: height, salt: salt)
    }

    /// A JPEG header whose Exif block holds an Apple MakerNote with `entries` (tag, TIFF type, count,
    /// value bytes; values of four bytes or fewer sit in the entry, longer ones after the IFD).
    static func appleJPEG(
        _ entries: [(UInt16, UInt16, UInt32, [UInt8])], width: Int = 64, height: Int = 48, salt: Int = 0
    )
        -> [UInt8]
    {
        // MakerNote: signature, version, byte order, the IFD at 14, then the values that do not fit.
        var makerNote: [UInt8] = Array("Apple iOS".utf8)
        makerNote += [0, 0, 1]
        makerNote += Array("MM".utf8)
        makerNote += W.be16(UInt16(entries.count))
        var values: [UInt8] = []
        let valuesStart = 14 + 2 + entries.count * 12 + 4
        for (tag, type, count, value) in entries {
            makerNote += W.be16(tag) + W.be16(type) + W.be32(count)
            if value.count <= 4 {
                makerNote += value + [UInt8](repeating: 0, count: 4 - value.count)
            } else {
                makerNote += W.be32(UInt32(valuesStart + values.count))
                values += value
            }
        }
        makerNote += W.be32(0)
        makerNote += values
        // TIFF: header, IFD0 at 8 (Exif pointer), Exif IFD at 26 (MakerNote), MakerNote at 44.
        var tiff: [UInt8] = Array("MM".utf8)
        tiff += W.be16(42) + W.be32(8)
        tiff += W.be16(1) + W.be16(0x8769) + W.be16(4) + W.be32(1) + W.be32(26) + W.be32(0)
        tiff += W.be16(1) + W.be16(0x927C) + W.be16(7) + W.be32(UInt32(makerNote.count)) + W.be32(44) + W.be32(0)
        tiff += makerNote
        let app1: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        var sof: [UInt8] = [8]
        sof += W.be16(UInt16(height)) + W.be16(UInt16(width))
        sof += [1, 1, 0x11, 0]
        let comment: [UInt8] = Array("salt \(salt)".utf8)
        var out: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE1]
        out += W.be16(UInt16(app1.count + 2)) + app1
        out += [0xFF, 0xFE] + W.be16(UInt16(comment.count + 2)) + comment
        out += [0xFF, 0xC0] + W.be16(UInt16(sof.count + 2)) + sof
        out += [0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 0x3F, 0, 0, 0xFF, 0xD9]
        return out
    }

    @Test("the JPEG builder's MakerNote reads the same in exiftool and in Reel")
    func builderAgreesWithExiftool() async throws {
        let url = LibraryFixtures.folder("builder").appendingPathComponent("built.jpg")
        try Data(Self.jpeg(identifier: "ABCDEF01-2345-6789-ABCD-EF0123456789")).write(to: url)
        let tool = try await LibraryFixtures.exiftool(url.path)
        let mine = try FileInspector.inspect(path: url.path, source: try FileSource(path: url.path), limits: .standard)
        #expect(mine.contentIdentifier == tool["MediaGroupUUID"] as? String && mine.contentIdentifier != nil)
        #expect(mine.pixelWidth == tool["ImageWidth"] as? Int)
    }

    @Test("truncations, lying offsets and lengths, an overflowing mpvd, a huge identifier: recorded, scan goes on")
    func hostileScan() async throws {
        let root = LibraryFixtures.folder("hostile")
        let heic = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.heic)))
        let motion = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.motionPhoto)))
        func write(_ name: String, _ bytes: [UInt8]) throws {
            try Data(bytes).write(to: root.appendingPathComponent(name))
        }
        try LibraryFixtures.copy(try Media.heic, to: root.appendingPathComponent("good.HEIC"))
        try write("truncated.HEIC", Array(heic.prefix(3000)))
        try write("truncated-motion.jpg", Array(motion.prefix(40_000)))
        try write("truncated-header.jpg", Array(motion.prefix(300)))
        // MakerNote count far past the Exif block, and an identifier of 60,000 bytes (over 256: ignored).
        try write("liar.jpg", Self.jpeg(identifier: "X", count: 0x7fff_ffff))
        try write("long-id.jpg", Self.jpeg(identifier: String(repeating: "A", count: 60_000)))
        // An APP1 segment declaring 65,000 bytes in a file of a few hundred.
        var xmpLie: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE1]
        xmpLie += W.be16(65_000)
        xmpLie += Array("http://ns.adobe.com/xap/1.0/".utf8) + [0]
        xmpLie += Array("<x:xmpmeta>".utf8)
        try write("xmp-lie.jpg", xmpLie)
        // An mpvd box whose 64-bit size overflows, after the real HEIC.
        var overflow = heic
        overflow += W.be32(1) + Array("mpvd".utf8)
        overflow += W.be64(UInt64.max - 7) + [0, 0, 0, 0]
        try write("mpvd-overflow.HEIC", overflow)
        // A movie whose content identifier is 10 MB (libavformat reads it; Reel keeps none over 256 bytes).
        let movie = root.appendingPathComponent("huge-id.mov")
        let made = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30:duration=1", "-c:v", "libx264",
                "-preset", "ultrafast", "-f", "mov", movie.path,
            ])
        try #require(made.status == 0)
        try Self.addContentIdentifier(movie, String(repeating: "B", count: 10 << 20))
        let library = try LibraryFixtures.library("hostile")
        let report = try await library.scan([root.path])
        let reasons = Dictionary(
            uniqueKeysWithValues: report.skipped.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        #expect(reasons["truncated.HEIC"] != nil)
        #expect(reasons["truncated-header.jpg"] != nil)
        #expect(reasons["xmp-lie.jpg"] != nil)
        let assets = try await library.fetchAssets()
        let names = Set(assets.map(\.originalFilename))
        #expect(
            names.isSuperset(of: ["good.HEIC", "liar.jpg", "long-id.jpg", "mpvd-overflow.HEIC", "huge-id.mov"]),
            "\(names) \(reasons)")
        for asset in assets { #expect((asset.contentIdentifier?.utf8.count ?? 0) <= 256) }
        #expect(assets.first { $0.originalFilename == "mpvd-overflow.HEIC" }?.pairing == nil)
        #expect(assets.first { $0.originalFilename == "long-id.jpg" }?.contentIdentifier == nil)
        #expect(assets.first { $0.originalFilename == "huge-id.mov" }?.contentIdentifier == nil)
        // A cut Motion Photo keeps its still, not its (now missing) video.
        if let cut = assets.first(where: { $0.originalFilename == "truncated-motion.jpg" }) {
            #expect(cut.pairing == nil)
        }
    }

    /// Adds `moov/meta` (mdta handler, keys, ilst) with one key to a movie whose moov is its last box.
    static func addContentIdentifier(_ url: URL, _ value: String) throws {
        var bytes = [UInt8](try Data(contentsOf: url))
        let moov = try #require(try BoxReader(BufferSource(bytes)).topLevel().last)
        try #require(moov.type == "moov")
        let key = Array("com.apple.quicktime.content.identifier".utf8)
        var handler: [UInt8] = W.be32(0) + Array("mdta".utf8)
        handler += [UInt8](repeating: 0, count: 13)
        let hdlr = W.fullBox("hdlr", handler)
        var table: [UInt8] = W.be32(1) + W.be32(UInt32(key.count + 8))
        table += Array("mdta".utf8) + key
        let keys = W.fullBox("keys", table)
        let data = W.box("data", W.be32(1) + W.be32(0) + Array(value.utf8))
        let ilst = W.container("ilst", [W.container(FourCC(rawValue: 1), [data])])
        let meta = W.container("meta", [hdlr, keys, ilst])
        let payload = Array(bytes[Int(moov.payload.lowerBound)..<Int(moov.payload.upperBound)])
        bytes = Array(bytes[0..<Int(moov.offset)]) + W.box("moov", payload + meta)
        try Data(bytes).write(to: url)
    }

    @Test(
        "ten thousand files claiming one identifier: one pair, every file indexed, bounded work",
        .timeLimit(.minutes(15)))
    func oneIdentifierClaimedByMany() async throws {
        let root = LibraryFixtures.folder("claims")
        let identifier = "D0C5A1E2-0000-4000-8000-0000000000FF"
        // Ten thousand small writes, off Swift's cooperative pool (other suites run beside this one).
        try await onOwnThread(within: .seconds(600)) {
            for index in 0..<10_000 {
                let folder = root.appendingPathComponent("f\(index / 1000)")
                if index % 1000 == 0 {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                }
                let bytes = Self.jpeg(identifier: identifier, salt: index)
                try Data(bytes).write(to: folder.appendingPathComponent("IMG_\(index).jpg"))
            }
        }
        try await LibraryFixtures.movie(identifier, at: root.appendingPathComponent("f3/IMG_3333.MOV"))
        let library = try LibraryFixtures.library("claims")
        let report = try await library.scan([root.path])
        #expect(report.filesRead == 10_001 && report.skipped.isEmpty)
        let live = try await library.fetchAssets(FetchOptions(predicate: "(mediaSubtypes & 8) != 0"))
        #expect(live.count == 1)
        #expect(live.first?.originalFilename == "IMG_3333.jpg", "the same folder and stem win")
        #expect(try await library.countAssets() == 10_000)
    }

    @Test("seeded mutations of real and built files never crash or hang the parsers")
    func mutations() async throws {
        let parsed = try await onOwnThread(within: .seconds(600)) { () throws -> Int in try Self.mutate() }
        #expect(parsed > 100, "mutations should leave many files parseable (\(parsed))")
    }

    /// Parses 1,500 mutated files; returns how many parsed (a crash or hang fails the test).
    static func mutate() throws -> Int {
        var generator = SeededGenerator(seed: 0x11b_7a27)
        let seeds: [(String, [UInt8])] = [
            ("heic", Array([UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.heic))).prefix(8192))),
            ("motion", [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.motionPhoto)))),
            ("mov", [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.movie)))),
            ("jpeg", Self.jpeg(identifier: "SEED")),
        ]
        var parsed = 0
        for round in 0..<1_500 {
            let (kind, seed) = seeds[round % seeds.count]
            var bytes = seed
            // Mutations land in the headers, where the parsers look (the first 8 KB, and a moov at the end).
            let window = kind == "mov" ? max(0, bytes.count - 12_000)..<bytes.count : 0..<min(bytes.count, 8192)
            for _ in 0..<Int.random(in: 1...16, using: &generator) {
                let index = Int.random(in: window, using: &generator)
                bytes[index] = Bool.random(using: &generator) ? UInt8.random(in: 0...255, using: &generator) : 0xFF
            }
            if Int.random(in: 0..<4, using: &generator) == 0 {
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            }
            let source = BufferSource(bytes)
            switch kind {
            case "heic": if (try? HEIFParser.parse(source)) != nil { parsed += 1 }
            case "mov":
                _ = try? QuickTimeParser.stillImageTime(source)
                _ = try? QuickTimeParser.metadata(source)
            default:
                if let header = try? JPEGParser.parse(source) {
                    parsed += 1
                    if let exif = header.exif { _ = ExifParser.parse(exif) }
                    if let xmp = header.xmp { _ = XMPParser.parse(xmp) }
                }
            }
            _ = try? PNGParser.parse(source)
            _ = try? GIFParser.parse(source)
        }
        return parsed
    }
}

/// SplitMix64: reproducible mutations.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
