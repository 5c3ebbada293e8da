import ReelBoxes

/// Reads a QuickTime/MP4 movie's own boxes for what libavformat does not expose: the still moment
/// of a Live Photo's movie (a `mebx` timed-metadata track whose `keyd` is
/// `com.apple.quicktime.still-image-time`), and the movie's `moov/meta` keys and values.
enum QuickTimeParser {
    static let stillImageTimeKey = "com.apple.quicktime.still-image-time"
    static let maxTracks = 256

    /// Seconds into the movie at which its still was taken, when a track declares the
    /// still-image-time key; nil when no track does.
    static func stillImageTime(_ source: any ByteSource, range: Range<Int64>? = nil) throws(BoxError) -> Double? {
        let reader = BoxReader(source)
        guard let moov = try reader.find(["moov"], in: range ?? reader.fileRange) else { return nil }
        let moovChildren = try reader.children(of: moov)
        var movieTimescale: UInt32 = 0
        if let mvhd = moovChildren.first(where: { $0.type == "mvhd" }) {
            var cursor = try reader.cursor(of: mvhd, limit: 256)
            let version = try cursor.u8()
            try cursor.skip(3 + (version == 1 ? 16 : 8))
            movieTimescale = try cursor.u32()
        }
        for trak in moovChildren.filter({ $0.type == "trak" }).prefix(maxTracks) {
            guard let mdia = try reader.child("mdia", of: trak),
                let stsd = try reader.find(["minf", "stbl", "stsd"], in: try reader.childrenRange(of: mdia)),
                let mebx = try reader.children(of: stsd).first, mebx.type == "mebx",
                try declaresStillImageTime(reader, mebx)
            else { continue }
            return try firstSampleTime(reader, trak: trak, mdia: mdia, movieTimescale: movieTimescale)
        }
        return nil
    }

    /// Whether a `mebx` sample entry's `keys` table holds a `keyd` of the still-image-time key.
    static func declaresStillImageTime(_ reader: BoxReader, _ mebx: Box) throws(BoxError) -> Bool {
        guard let keys = try reader.child("keys", of: mebx) else { return false }
        for entry in try reader.children(of: keys) {
            guard let keyd = try reader.child("keyd", of: entry) else { continue }
            let payload = try reader.payload(of: keyd, limit: 4096)
            guard payload.count > 4 else { continue }
            if String(decoding: payload[4...], as: UTF8.self) == stillImageTimeKey { return true }
        }
        return false
    }

    /// Presentation time of a track's first sample, in seconds of the movie: empty edits first, then
    /// the sample's composition offset, less the first edit's media time.
    static func firstSampleTime(_ reader: BoxReader, trak: Box, mdia: Box, movieTimescale: UInt32) throws(BoxError)
        -> Double?
    {
        guard let mdhd = try reader.child("mdhd", of: mdia) else { return nil }
        var header = try reader.cursor(of: mdhd, limit: 256)
        let version = try header.u8()
        try header.skip(3 + (version == 1 ? 16 : 8))
        let mediaTimescale = try header.u32()
        guard mediaTimescale > 0 else { return nil }
        var compositionOffset: Int64 = 0
        if let ctts = try reader.find(["minf", "stbl", "ctts"], in: try reader.childrenRange(of: mdia)) {
            var cursor = try reader.cursor(of: ctts, limit: 1 << 20)
            let cttsVersion = try cursor.u8()
            try cursor.skip(3)
            if try cursor.u32() > 0 {
                _ = try cursor.u32()
                let raw = try cursor.u32()
                compositionOffset = cttsVersion == 1 ? Int64(Int32(bitPattern: raw)) : Int64(raw)
            }
        }
        var emptySeconds = 0.0
        var mediaStart: Int64 = 0
        if let elst = try reader.find(["edts", "elst"], in: try reader.childrenRange(of: trak)), movieTimescale > 0 {
            var cursor = try reader.cursor(of: elst, limit: 1 << 20)
            let elstVersion = try cursor.u8()
            try cursor.skip(3)
            let count = min(Int(try cursor.u32()), 1_000)
            for _ in 0..<count {
                let duration = elstVersion == 1 ? try cursor.u64() : UInt64(try cursor.u32())
                let mediaTime =
                    elstVersion == 1 ? Int64(bitPattern: try cursor.u64()) : Int64(Int32(bitPattern: try cursor.u32()))
                try cursor.skip(4)
                if mediaTime == -1 {
                    emptySeconds += Double(duration) / Double(movieTimescale)
                } else {
                    mediaStart = mediaTime
                    break
                }
            }
        }
        let seconds = emptySeconds + Double(compositionOffset - mediaStart) / Double(mediaTimescale)
        return seconds.isFinite ? max(0, seconds) : nil
    }

    /// The `moov/meta` keys and their string values (`com.apple.quicktime.content.identifier`),
    /// read with ReelBoxes: at most 1,000 keys, each value at most `maxValue` bytes.
    static func metadata(_ source: any ByteSource, range: Range<Int64>? = nil, maxValue: Int = 4096) throws(BoxError)
        -> [String: String]
    {
        let reader = BoxReader(source)
        guard let meta = try reader.find(["moov", "meta"], in: range ?? reader.fileRange) else { return [:] }
        let children = try reader.children(of: meta)
        guard let keysBox = children.first(where: { $0.type == "keys" }),
            let ilst = children.first(where: { $0.type == "ilst" })
        else { return [:] }
        var cursor = try reader.cursor(of: keysBox, limit: 1 << 20)
        try cursor.skip(4)
        let count = min(Int(try cursor.u32()), 1_000)
        var keys: [String] = []
        for _ in 0..<count {
            let size = Int(try cursor.u32())
            guard size >= 8 else { break }
            try cursor.skip(4)
            keys.append(String(decoding: try cursor.bytes(size - 8), as: UTF8.self))
        }
        var values: [String: String] = [:]
        for item in try reader.children(of: ilst) {
            let index = Int(item.type.rawValue)
            guard index >= 1, index <= keys.count, let data = try reader.child("data", of: item),
                data.payloadSize >= 8, data.payloadSize - 8 <= Int64(maxValue)
            else { continue }
            let payload = try reader.payload(of: data, limit: maxValue + 8)
            values[keys[index - 1]] = String(decoding: payload[8...], as: UTF8.self)
        }
        return values
    }
}
