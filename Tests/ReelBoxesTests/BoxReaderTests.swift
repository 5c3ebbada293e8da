import Foundation
import ReelBoxes
import ReelSystem
import Synchronization
import TestSupport
import Testing

@Suite("Box reader", .tags(.process, .media), .timeLimit(.minutes(10)))
struct BoxReaderTests {
    typealias W = BoxWriter

    @Test("boxes one after another, 64-bit sizes, size 0 to the end")
    func walk() throws {
        var file: [UInt8] = W.box("ftyp", Array("isom".utf8) + [0, 0, 0, 0])
        file += W.box("free", [1, 2, 3], largeSize: true)
        file += W.be32(0) + Array("mdat".utf8)
        file += [9, 9, 9, 9, 9]
        let reader = BoxReader(BufferSource(file))
        let boxes = try reader.topLevel()
        #expect(boxes.map(\.type) == ["ftyp", "free", "mdat"])
        #expect(boxes[1].usesLargeSize && boxes[1].headerSize == 16 && boxes[1].payloadSize == 3)
        #expect(boxes[2].extendsToEnd && boxes[2].size == 13 && boxes[2].range.upperBound == Int64(file.count))
        #expect(try reader.payload(of: boxes[1]) == [1, 2, 3])
    }

    @Test("paths, full boxes and QuickTime's meta without version")
    func paths() throws {
        var handler: [UInt8] = [0, 0, 0, 0]
        handler += Array("mdta".utf8) + [UInt8](repeating: 0, count: 13)
        let hdlr = W.fullBox("hdlr", handler)
        let quickTimeMeta = W.container("meta", [hdlr, W.box("keys", W.be32(0) + W.be32(0))])
        let isoMeta = W.fullBox("meta", version: 0, flags: 0, hdlr)
        let header = W.fullBox("mvhd", version: 1, flags: 7, [UInt8](repeating: 0, count: 8))
        let file = W.container("moov", [header, quickTimeMeta]) + W.container("other", [isoMeta])
        let reader = BoxReader(BufferSource(file))
        let keys = try #require(try reader.find(["moov", "meta", "keys"]))
        #expect(keys.type == "keys")
        #expect(try reader.find(["other", "meta", "hdlr"]) != nil)
        let mvhd = try #require(try reader.find(["moov", "mvhd"]))
        #expect(try reader.fullBoxHeader(of: mvhd) == FullBoxHeader(version: 1, flags: 7))
        #expect(try reader.find(["moov", "nope"]) == nil)
        #expect(try reader.findAll(["moov", "meta"]).count == 1)
    }

    @Test("a size past the parent, a size under the header and a truncated file throw, never read outside")
    func lies() throws {
        let overlong: [UInt8] = W.be32(1000) + Array("moov".utf8) + W.be32(0)
        #expect(throws: BoxError.self) { try BoxReader(BufferSource(overlong)).topLevel() }
        let tiny: [UInt8] = W.be32(4) + Array("moov".utf8)
        #expect(throws: BoxError.self) { try BoxReader(BufferSource(tiny)).topLevel() }
        let huge64: [UInt8] = W.be32(1) + Array("mdat".utf8) + W.be64(UInt64.max)
        #expect(throws: BoxError.self) { try BoxReader(BufferSource(huge64)).topLevel() }
        // Children that overflow their parent are refused even when the file is larger.
        let child: [UInt8] = W.be32(64) + Array("trak".utf8)
        let parent: [UInt8] = W.box("moov", child) + [UInt8](repeating: 0, count: 100)
        let reader = BoxReader(BufferSource(parent))
        let moov = try #require(try reader.topLevel().first)
        #expect(throws: BoxError.self) { try reader.children(of: moov) }
        let lenient = reader.boxesLeniently(in: reader.fileRange)
        #expect(lenient.boxes.first?.type == "moov")
    }

    @Test("cursors refuse reads past the end and odd field sizes")
    func cursor() throws {
        var cursor = ByteCursor([1, 2, 3])
        #expect(try cursor.u16() == 0x0102)
        #expect(throws: BoxError.self) { try cursor.u32() }
        #expect(throws: BoxError.self) { try cursor.unsigned(size: 3) }
        var little = ByteCursor([1, 0, 0, 0], littleEndian: true)
        #expect(try little.u32() == 1)
    }

    @Test("the writer's boxes read back, and a real movie's tree matches ffprobe's reading of it")
    func realMovie() throws {
        let path = try PhoneFiles.movie
        let reader = BoxReader(try FileSource(path: path))
        let top = try reader.topLevel()
        #expect(top.map(\.type.description).contains("moov"))
        #expect(top.last?.range.upperBound == reader.source.count)
        // exiftool reports MediaDataOffset 36 and MediaDataSize 433771 for this file.
        let mdat = try #require(top.first { $0.type == "mdat" })
        #expect(mdat.payload.lowerBound == 36 && mdat.payloadSize == 433_771)
        // Four tracks, as ffprobe lists four streams.
        #expect(try reader.findAll(["moov", "trak"]).count == 4)
    }

    @Test("seeded mutations of real and written boxes never crash or hang the reader")
    func mutations() async throws {
        // Off Swift's cooperative pool: other suites run beside this one.
        let outside = Mutex(0)
        try await onOwnThread(within: .seconds(600)) { outside.withLock { $0 = Self.mutate() } }
        #expect(outside.withLock { $0 } == 0, "boxes said to lie outside the bytes they were read from")
    }

    /// Walks 5,000 mutated files; returns how many boxes claimed to reach past their file's end.
    static func mutate() -> Int {
        var outside = 0
        var generator = SeededGenerator(seed: 0x5eed_b0c5)
        var brands: [UInt8] = Array("heic".utf8) + [0, 0, 0, 0]
        brands += Array("mif1heic".utf8)
        var handler: [UInt8] = [0, 0, 0, 0]
        handler += Array("pict".utf8) + [UInt8](repeating: 0, count: 13)
        let meta = BoxWriter.fullBox(
            "meta", BoxWriter.fullBox("hdlr", handler) + BoxWriter.fullBox("iinf", BoxWriter.be16(0)))
        let base = BoxWriter.box("ftyp", brands) + meta + BoxWriter.box("mdat", [UInt8](repeating: 7, count: 64))
        for _ in 0..<5_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            }
            let reader = BoxReader(BufferSource(bytes))
            let walked = reader.boxesLeniently(in: reader.fileRange)
            for box in walked.boxes {
                if box.range.upperBound > Int64(bytes.count) { outside += 1 }
                _ = try? reader.children(of: box)
                _ = try? reader.find([box.type, "hdlr"])
            }
        }
        return outside
    }
}

/// A small, fast, reproducible generator (SplitMix64) for mutation tests.
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
