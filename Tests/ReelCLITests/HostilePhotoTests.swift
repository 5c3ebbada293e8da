import Foundation
import TestSupport
import Testing

/// Photos inside the confinement videos have: a fixed set of hostile files, made at test time from
/// photos heif-enc, ffmpeg and vips write (truncations, flipped bytes in the HEIF boxes, headers
/// declaring billions of pixels, an empty file, a PNG with a bad CRC, a WebP with a short RIFF), run
/// through `reel image`, `reel probe` and `reel thumbnail`. Each ends with a documented status and one
/// stderr line, never a signal, and leaves no file at `-o`.
@Suite("Hostile photos", .tags(.process, .media), .timeLimit(.minutes(20)))
struct HostilePhotoTests {
    /// One hostile file: its name (the extension a user would give it), its bytes, and the commands that
    /// must refuse it. A flipped byte a decoder tolerates may render; `reel probe` reads headers only, so
    /// a file cut in its pixels may still be described.
    struct Case: Sendable {
        var name: String
        var data: Data
        var refusedBy: Set<String>
    }

    static let renders: Set<String> = ["image", "thumbnail"]
    static let all: Set<String> = ["image", "probe", "thumbnail"]

    /// Valid photos of each format, 640x480.
    static func seeds(_ folder: URL) async throws -> [String: Data] {
        let source = folder.appendingPathComponent("source.png")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=640x480", "-frames:v", "1", source.path])
        var seeds: [String: Data] = [:]
        func made(_ name: String, _ tool: String, _ arguments: [String]) async throws {
            let result = try await Tools.run(tool, arguments)
            try #require(result.status == 0, "\(tool): \(result.stderr)")
            seeds[name] = try Data(contentsOf: folder.appendingPathComponent(name))
        }
        let out = { (name: String) in folder.appendingPathComponent(name).path }
        try await made("seed.heic", "heif-enc", ["-q", "50", "-t", "160", "-o", out("seed.heic"), source.path])
        try await made("seed.avif", "heif-enc", ["-A", "-q", "50", "-o", out("seed.avif"), source.path])
        try await made("seed.jpg", "ffmpeg", ["-v", "error", "-i", source.path, "-q:v", "3", out("seed.jpg")])
        try await made("progressive.jpg", "vips", ["jpegsave", source.path, out("progressive.jpg"), "--interlace"])
        try await made("seed.png", "ffmpeg", ["-v", "error", "-i", source.path, out("seed.png")])
        try await made("seed.webp", "ffmpeg", ["-v", "error", "-i", source.path, out("seed.webp")])
        try await made("seed.gif", "ffmpeg", ["-v", "error", "-i", source.path, out("seed.gif")])
        return seeds
    }

    /// Where `tag` (a box type or a marker) first occurs in `data`.
    static func find(_ tag: [UInt8], in data: Data) -> Int? {
        let bytes = [UInt8](data)
        guard bytes.count >= tag.count else { return nil }
        return (0...(bytes.count - tag.count)).first { Array(bytes[$0..<$0 + tag.count]) == tag }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }

    static func cases(_ seeds: [String: Data]) throws -> [Case] {
        var cases: [Case] = []
        // Truncations at several offsets: the header alone, part of it, part of the pixels.
        for (name, data) in seeds.sorted(by: { $0.key < $1.key }) {
            let ext = (name as NSString).pathExtension
            let stem = (name as NSString).deletingPathExtension
            for (label, length) in [("16", 16), ("30pc", data.count * 3 / 10), ("70pc", data.count * 7 / 10)] {
                cases.append(Case(name: "\(stem)-cut\(label).\(ext)", data: data.prefix(length), refusedBy: renders))
            }
        }
        // Bit flips inside the HEIF boxes that say what the file holds and where: the brand, the meta
        // box, the image's size, the item locations.
        for name in ["seed.heic", "seed.avif"] {
            let data = try #require(seeds[name])
            let ext = (name as NSString).pathExtension
            for box in ["ftyp", "meta", "ispe", "iloc"] {
                let at = try #require(Self.find(Array(box.utf8), in: data), "\(name) has no \(box)")
                for (index, offset) in [4, 9, 13].enumerated() where at + offset < data.count {
                    var flipped = [UInt8](data)
                    flipped[at + offset] ^= index == 0 ? 0x10 : 0xFF
                    cases.append(Case(name: "flip-\(box)-\(offset).\(ext)", data: Data(flipped), refusedBy: []))
                }
            }
            // An ispe declaring 60000x60000 (3.6 billion pixels).
            let ispe = try #require(Self.find(Array("ispe".utf8), in: data))
            var huge = [UInt8](data)
            huge.replaceSubrange((ispe + 8)..<(ispe + 16), with: Self.bigEndian(60000) + Self.bigEndian(60000))
            cases.append(Case(name: "ispe-60000.\(ext)", data: Data(huge), refusedBy: all))
        }
        // A JPEG whose start of frame (baseline FFC0, progressive FFC2) declares 65000x65000: libjpeg
        // shrinks on load and would render it grey; the pixel limit refuses it from the header.
        for (name, marker) in [("seed.jpg", UInt8(0xC0)), ("progressive.jpg", UInt8(0xC2))] {
            let data = try #require(seeds[name])
            let at = try #require(Self.find([0xFF, marker], in: data), "\(name) has no SOF")
            var huge = [UInt8](data)
            huge.replaceSubrange((at + 5)..<(at + 9), with: [0xFD, 0xE8, 0xFD, 0xE8])
            cases.append(Case(name: "sof-65000-\(name)", data: Data(huge), refusedBy: all))
        }
        cases.append(Case(name: "empty.heic", data: Data(), refusedBy: all))
        cases.append(Case(name: "empty.jpg", data: Data(), refusedBy: all))
        // A PNG whose IHDR chunk's CRC (bytes 29-32) is wrong.
        var png = [UInt8](try #require(seeds["seed.png"]))
        png[30] ^= 0xFF
        cases.append(Case(name: "bad-crc.png", data: Data(png), refusedBy: all))
        // A WebP whose RIFF header says the file is 4 bytes long.
        var webp = [UInt8](try #require(seeds["seed.webp"]))
        webp.replaceSubrange(4..<8, with: [4, 0, 0, 0])
        cases.append(Case(name: "short-riff.webp", data: Data(webp), refusedBy: all))
        return cases
    }

    @Test func hostilePhotosFailInOneLineWithTheirCodeAndLeaveNothing() async throws {
        let folder = Fixtures.scratchFolder("hostile-photos")
        let cases = try Self.cases(try await Self.seeds(folder))
        let documented: Set<Int32> = [0, 65]
        var failures = 0
        for hostile in cases {
            let input = folder.appendingPathComponent(hostile.name)
            try hostile.data.write(to: input)
            let outputs = Fixtures.scratchFolder("hostile-out")
            let image = outputs.appendingPathComponent("image.jpg")
            let thumbnail = outputs.appendingPathComponent("thumbnail.jpg")
            let runs: [(String, [String], URL?)] = [
                ("image", ["image", input.path, "--size", "100x100", "-o", image.path], image),
                ("probe", ["probe", input.path], nil),
                (
                    "thumbnail", ["thumbnail", input.path, "--at", "0", "--max-size", "100x100", "-o", thumbnail.path],
                    thumbnail
                ),
            ]
            for (command, arguments, output) in runs {
                let result = try await ReelBinary.run(arguments, timeLimit: .seconds(120))
                let what = "\(command) \(hostile.name)"
                let lines = result.stderr.split(separator: "\n")
                #expect(result.status < 128, "\(what) died of signal \(result.status - 128): \(result.stderr)")
                #expect(documented.contains(result.status), "\(what): exit \(result.status): \(result.stderr)")
                if hostile.refusedBy.contains(command) {
                    #expect(result.status == 65, "\(what) was not refused: \(result.stdout)")
                }
                if result.status == 0 {
                    #expect(result.stderr.isEmpty, "\(what): \(result.stderr)")
                    if let output {
                        let header = try await Tools.run("vipsheader", [output.path])
                        #expect(header.status == 0, "\(what) wrote an unreadable picture")
                    }
                } else {
                    failures += 1
                    #expect(
                        lines.count == 1 && lines.first?.hasPrefix("reel: error: ") == true, "\(what): \(result.stderr)"
                    )
                    if let output {
                        #expect(!FileManager.default.fileExists(atPath: output.path), "\(what) left \(output.path)")
                    }
                    #expect(try FileManager.default.contentsOfDirectory(atPath: outputs.path).isEmpty, "\(what)")
                }
            }
        }
        #expect(failures >= cases.map(\.refusedBy.count).reduce(0, +))
    }

    /// The policy's photo pixel limit (`--max-megapixels`) is checked from the header by every command: a
    /// 1600x1200 photo (1.9 MP) is refused under 1 MP, naming the limit, and rendered under 2 MP.
    @Test func thePixelLimitComesFromThePolicy() async throws {
        let folder = Fixtures.scratchFolder("photo-limit")
        let big = folder.appendingPathComponent("big.jpg")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1600x1200", "-frames:v", "1", big.path])
        let out = folder.appendingPathComponent("out.jpg")
        for arguments in [
            ["image", big.path, "--size", "100x100", "-o", out.path, "--max-megapixels", "1"],
            ["probe", big.path, "--max-megapixels", "1"],
            ["thumbnail", big.path, "--max-size", "100x100", "-o", out.path, "--max-megapixels", "1"],
        ] {
            let refused = try await ReelBinary.run(arguments)
            #expect(refused.status == 65, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("1600x1200 is over the limit of 1 megapixels"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
        let passes = try await ReelBinary.run([
            "image", big.path, "--size", "100x100", "-o", out.path, "--max-megapixels", "2",
        ])
        #expect(passes.status == 0, "\(passes.stderr)")
        // Confinement applies to photos as to videos: a symlink out of the allowed folder is refused.
        let root = Fixtures.scratchFolder("photo-root")
        let link = root.appendingPathComponent("escape.jpg")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: big)
        let escaped = try await ReelBinary.run([
            "image", link.path, "--size", "100x100", "-o", root.appendingPathComponent("o.jpg").path,
            "--allow-root", root.path,
        ])
        #expect(escaped.status == 65 && escaped.stderr.contains("outside the allowed folders"), "\(escaped.stderr)")
    }
}
