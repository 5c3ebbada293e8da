import Foundation
import ReelBoxes
import TestSupport
import Testing

@testable import ReelLibrary

/// The real phone files committed under `Tests/Fixtures/` (TestSupport's `PhoneFiles`).
enum Media {
    static func path(_ name: String) throws -> String { try PhoneFiles.path(name) }
    static var heic: String { get throws { try PhoneFiles.heic } }
    static var movie: String { get throws { try PhoneFiles.movie } }
    static var motionPhoto: String { get throws { try PhoneFiles.motionPhoto } }
    static var lyingMotionPhoto: String { get throws { try PhoneFiles.lyingMotionPhoto } }
    /// The content identifier in IMG_2927.HEIC's MakerNote (its README).
    static let heicIdentifier = "1745E022-9712-43C7-B024-F308EC6413CB"
}

enum LibraryFixtures {
    /// A fresh folder for one test.
    static func folder(_ name: String) -> URL { Fixtures.scratchFolder("library-\(name)") }

    /// A library in its own folder, outside the scanned ones.
    static func library(_ name: String) throws -> PhotoLibrary {
        try PhotoLibrary(path: folder("db-\(name)").appendingPathComponent("library.sqlite").path)
    }

    /// Copies a file, writable (the shared samples are read-only).
    static func copy(_ source: String, to destination: URL) throws {
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: source, toPath: destination.path)
        chmod(destination.path, 0o644)
    }

    /// A copy of the real HEIC whose MakerNote content identifier exiftool rewrote to `identifier`
    /// (and its capture time, when given, as `YYYY:MM:DD HH:MM:SS`).
    static func still(_ identifier: String?, at destination: URL, captured: String? = nil) async throws {
        try copy(try Media.heic, to: destination)
        var arguments = ["-q", "-overwrite_original"]
        if let identifier {
            arguments.append("-MakerNotes:MediaGroupUUID=\(identifier)")
        } else {
            arguments.append("-MakerNotes:MediaGroupUUID=")
        }
        if let captured { arguments += ["-DateTimeOriginal=\(captured)", "-OffsetTimeOriginal=-04:00"] }
        let result = try await Tools.run("exiftool", arguments + [destination.path])
        try #require(result.status == 0, "exiftool failed: \(result.stderr)")
    }

    /// A short QuickTime movie made by ffmpeg, carrying `identifier` as
    /// `com.apple.quicktime.content.identifier` (and a creation date), with a `mebx`
    /// still-image-time track at `stillSeconds` patched in with ReelBoxes when asked.
    static func movie(
        _ identifier: String?, at destination: URL, seconds: Double = 2, created: String = "2020-05-04T18:39:11-0400",
        stillSeconds: Double? = nil
    ) async throws {
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        var arguments = [
            "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=\(seconds)",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "use_metadata_tags",
            "-metadata", "com.apple.quicktime.creationdate=\(created)",
        ]
        if let identifier { arguments += ["-metadata", "com.apple.quicktime.content.identifier=\(identifier)"] }
        let result = try await Tools.run("ffmpeg", arguments + ["-f", "mov", destination.path])
        try #require(result.status == 0, "ffmpeg failed: \(result.stderr)")
        if let stillSeconds { try addStillImageTimeTrack(destination, seconds: stillSeconds) }
    }

    /// Appends a timed-metadata track like an iPhone's: a `mebx` sample entry whose `keyd` is
    /// `com.apple.quicktime.still-image-time`, one 9-byte sample (`00000009 00000001 ff`), placed at
    /// `seconds` by an empty edit. The movie's `moov` must be its last box (ffmpeg's default).
    static func addStillImageTimeTrack(_ url: URL, seconds: Double) throws {
        typealias W = BoxWriter
        var bytes = [UInt8](try Data(contentsOf: url))
        let reader = BoxReader(BufferSource(bytes))
        let top = try reader.topLevel()
        let moov = try #require(top.last, "no boxes")
        try #require(moov.type == "moov", "moov is not last")
        let scale: UInt32 = 600
        let key = Array("com.apple.quicktime.still-image-time".utf8)
        let keyd = W.box("keyd", Array("mdta".utf8) + key)
        // dtyp: the well-known type namespace (0), type 65 (signed 8-bit integer).
        let dtyp = W.box("dtyp", W.be32(0) + W.be32(65))
        let keys = W.container("keys", [W.container(FourCC(rawValue: 1), [keyd, dtyp])])
        var entry: [UInt8] = [0, 0, 0, 0, 0, 0]
        entry += W.be16(1) + keys
        let mebx = W.box("mebx", entry)
        let stsd = W.fullBox("stsd", W.be32(1) + mebx)
        let stts = W.fullBox("stts", W.be32(1) + W.be32(1) + W.be32(1))
        let stsc = W.fullBox("stsc", W.be32(1) + W.be32(1) + W.be32(1) + W.be32(1))
        let stsz = W.fullBox("stsz", W.be32(0) + W.be32(1) + W.be32(9))
        var matrix: [UInt8] = W.be32(0x10000) + W.be32(0) + W.be32(0)
        matrix += W.be32(0) + W.be32(0x10000) + W.be32(0)
        matrix += W.be32(0) + W.be32(0) + W.be32(0x4000_0000)
        var header: [UInt8] = W.be32(0) + W.be32(0) + W.be32(100) + W.be32(0) + W.be32(1)
        header += [UInt8](repeating: 0, count: 16)
        header += matrix + W.be32(0) + W.be32(0)
        let tkhd = W.fullBox("tkhd", flags: 1, header)
        // Edit durations count in the movie's timescale (mvhd), not the track's.
        let mvhd = try #require(try reader.find(["moov", "mvhd"]))
        var movieHeader = try reader.cursor(of: mvhd)
        let mvhdVersion = try movieHeader.u8()
        try movieHeader.skip(3 + (mvhdVersion == 1 ? 16 : 8))
        let movieScale = Double(try movieHeader.u32())
        let empty = UInt32((seconds * movieScale).rounded())
        var edits: [UInt8] = W.be32(2)
        edits += W.be32(empty) + W.be32(UInt32(bitPattern: -1)) + W.be32(0x10000)
        edits += W.be32(1) + W.be32(0) + W.be32(0x10000)
        let elst = W.fullBox("elst", edits)
        var media: [UInt8] = W.be32(0) + W.be32(0) + W.be32(scale) + W.be32(1)
        media += W.be16(0x55C4) + W.be16(0)
        let mdhd = W.fullBox("mdhd", media)
        var handler: [UInt8] = W.be32(0) + Array("meta".utf8)
        handler += [UInt8](repeating: 0, count: 12)
        handler += Array("Core Media Metadata".utf8) + [0]
        let hdlr = W.fullBox("hdlr", handler)
        let dinf = W.container("dinf", [W.fullBox("dref", W.be32(1) + W.fullBox("url ", flags: 1, []))])
        // The sample goes in a new mdat after the grown moov; its offset is known once the moov's size is.
        func trak(_ chunkOffset: UInt32) -> [UInt8] {
            let stco = W.fullBox("stco", W.be32(1) + W.be32(chunkOffset))
            let stbl = W.container("stbl", [stsd, stts, stsc, stsz, stco])
            let minf = W.container("minf", [W.fullBox("nmhd", []), dinf, stbl])
            return W.container("trak", [tkhd, W.container("edts", [elst]), W.container("mdia", [mdhd, hdlr, minf])])
        }
        let moovPayload = Array(bytes[Int(moov.payload.lowerBound)..<Int(moov.payload.upperBound)])
        let newMoovSize = 8 + moovPayload.count + trak(0).count
        let sampleOffset = UInt32(Int(moov.offset) + newMoovSize + 8)
        let newMoov = W.box("moov", moovPayload + trak(sampleOffset))
        var sample: [UInt8] = W.be32(9) + W.be32(1)
        sample.append(0xFF)
        bytes = Array(bytes[0..<Int(moov.offset)]) + newMoov + W.box("mdat", sample)
        try Data(bytes).write(to: url)
    }

    /// exiftool's reading of `path` as a dictionary (`-n`: numbers, not prose).
    static func exiftool(_ path: String, _ arguments: [String] = []) async throws -> [String: Any] {
        let result = try await Tools.run("exiftool", ["-json", "-n"] + arguments + [path])
        try #require(result.status == 0, "exiftool failed: \(result.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        return try #require(parsed?.first)
    }

    /// ffprobe's format and streams of `path` (a `subfile,,start,…` URL works too).
    static func ffprobe(_ path: String, whitelist: Bool = false) async throws -> [String: Any] {
        let extra = whitelist ? ["-protocol_whitelist", "subfile,file"] : []
        let result = try await Tools.run(
            "ffprobe", ["-v", "error"] + extra + ["-show_format", "-show_streams", "-of", "json", path])
        try #require(result.status == 0, "ffprobe failed: \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }
}
