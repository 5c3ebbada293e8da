internal import CFFmpeg
import Foundation

/// Says why an input is refused, in words: which container it is when Reel does not accept it, that
/// it is a playlist, or where it was cut short.
enum InputDiagnosis {
    /// The bytes FFmpeg's own probe looks at, at most.
    static let probeBytes = 1 << 20

    /// Why `avformat_open_input` failed for `path`, as a one-line error naming the cause.
    static func openFailure(
        path: String, resolved: String, fileBytes: Int64, policy: InputPolicy, code: Int32
    ) -> MediaError {
        func refuse(_ message: String) -> MediaError {
            MediaError(kind: .unreadableInput, call: "avformat_open_input", code: code, message: "\(path): \(message)")
        }
        let head = readHead(resolved, count: probeBytes)
        // A photo is recognised by its bytes, whatever its name, before FFmpeg's guess (which calls a
        // HEIC a corrupt QuickTime file and a JPEG an image sequence).
        if let photo = PhotoSignature.detect(head) {
            return MediaError(
                kind: .photoNotVideo, call: "avformat_open_input", code: code,
                message:
                    "\(path): a \(photo.name) photo, not a video, so no video preset exports it; render it with `reel thumbnail \(path) --max-size WxH -o <folder>` (`reel probe` describes it)"
            )
        }
        if let playlist = playlistKind(head) {
            return refuse("\(thisFile(path)) is \(playlist); playlists are never followed")
        }
        if let format = probe(head, filename: resolved) {
            if format.names.contains(where: { ["hls", "dash"].contains($0) }) {
                return refuse("\(thisFile(path)) is a \(format.longName) playlist; playlists are never followed")
            }
            if !format.names.contains(where: policy.allowedDemuxers.contains) {
                return refuse(
                    "\(format.longName) (\(format.names.joined(separator: ","))) files are not accepted; accepted containers: \(policy.allowedDemuxers.joined(separator: ", "))"
                )
            }
            if let truncated = truncation(resolved, fileBytes: fileBytes, formatNames: format.names) {
                return refuse(truncated)
            }
            return refuse(
                "a \(format.longName) file that could not be read (corrupt): \(MediaError.string(for: code))")
        }
        let scanned = min(Int64(probeBytes), fileBytes)
        return refuse("not a media file: no container Reel knows in its first \(byteCount(scanned))")
    }

    /// "this .mp4" (the file's extension), or "this file" when it has none.
    private static func thisFile(_ path: String) -> String {
        let name = (path as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension
        return ext.isEmpty || ext.count > 8 ? "this file" : "this .\(ext)"
    }

    /// The first `count` bytes of the file (fewer when it is shorter; empty when it cannot be read).
    static func readHead(_ path: String, count: Int) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        return [UInt8]((try? handle.read(upToCount: count)) ?? Data())
    }

    /// A text playlist or manifest FFmpeg would follow to other files, recognised by its first bytes
    /// whatever the file is named.
    static func playlistKind(_ head: [UInt8]) -> String? {
        var bytes = head.prefix(4096)[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        while let first = bytes.first, [0x20, 0x09, 0x0A, 0x0D].contains(first) { bytes = bytes.dropFirst() }
        let text = String(decoding: bytes, as: UTF8.self)
        if text.hasPrefix("#EXTM3U") {
            return text.contains("#EXT-X-") ? "an HLS playlist" : "an M3U playlist"
        }
        if text.hasPrefix("<"), text.contains("<MPD") { return "a DASH manifest" }
        if text.hasPrefix("ffconcat version") { return "a concat list" }
        return nil
    }

    /// FFmpeg's best guess at the container of `head`, over every demuxer it has (not only the allowed
    /// ones), when it is reasonably sure.
    static func probe(_ head: [UInt8], filename: String) -> (names: [String], longName: String)? {
        guard !head.isEmpty else { return nil }
        var buffer = head + [UInt8](repeating: 0, count: Int(AVPROBE_PADDING_SIZE))
        let format: UnsafePointer<AVInputFormat>? = buffer.withUnsafeMutableBufferPointer { bytes in
            filename.withCString { name in
                var data = AVProbeData()
                data.filename = name
                data.buf = bytes.baseAddress
                data.buf_size = Int32(head.count)
                var score: Int32 = 0
                let found = av_probe_input_format3(&data, 1, &score)
                return score >= AVPROBE_SCORE_EXTENSION ? found : nil
            }
        }
        guard let format else { return nil }
        let names = String(cString: format.pointee.name).split(separator: ",").map(String.init)
        let longName = format.pointee.long_name.map { String(cString: $0) } ?? names.joined(separator: ",")
        return (names, longName)
    }

    /// "ends after 6 KB of the 172 KB its header declares: truncated" when the container's own sizes
    /// (MP4/QuickTime top-level boxes, the Matroska segment) say the file goes on past its end. With
    /// `start`, the media is the `fileBytes` bytes from there (a byte range of a larger file).
    static func truncation(_ path: String, fileBytes: Int64, formatNames: [String], start: Int64 = 0) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let declared: Int64?
        if formatNames.contains("mov") {
            declared = movDeclaredEnd(handle, fileBytes: fileBytes, start: start)
        } else if formatNames.contains("matroska") {
            guard (try? handle.seek(toOffset: UInt64(start))) != nil else { return nil }
            declared = matroskaDeclaredEnd(handle)
        } else {
            declared = nil
        }
        guard let declared, declared > fileBytes else { return nil }
        return "ends after \(byteCount(fileBytes)) of the \(byteCount(declared)) its header declares: truncated"
    }

    /// Where the last top-level box that runs past the end of the file says it ends (nil when every
    /// box fits).
    private static func movDeclaredEnd(_ handle: FileHandle, fileBytes: Int64, start: Int64) -> Int64? {
        var offset: Int64 = 0
        for _ in 0..<100_000 {
            guard offset + 8 <= fileBytes, (try? handle.seek(toOffset: UInt64(start + offset))) != nil,
                let header = try? handle.read(upToCount: 16), header.count >= 8
            else { return nil }
            let bytes = [UInt8](header)
            var size = Int64(bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            // A box type is four printable characters; anything else is not a box walk to trust.
            guard bytes[4..<8].allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
            if size == 1 {
                guard bytes.count >= 16 else { return nil }
                size = Int64(bitPattern: bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            } else if size == 0 {
                return nil  // runs to the end of the file, whatever its length
            }
            guard size >= 8 else { return nil }
            let (end, overflow) = offset.addingReportingOverflow(size)
            if overflow { return nil }
            if end > fileBytes { return end }
            if end == fileBytes { return nil }
            offset = end
        }
        return nil
    }

    /// Where the Matroska segment ends by its declared size (nil when the size is unknown, as live
    /// recordings leave it).
    private static func matroskaDeclaredEnd(_ handle: FileHandle) -> Int64? {
        guard let data = try? handle.read(upToCount: 4096) else { return nil }
        let bytes = [UInt8](data)
        var position = 0
        /// Reads an EBML variable-length integer; `marker` keeps the length marker (element IDs do).
        func vint(marker: Bool) -> (value: UInt64, unknown: Bool)? {
            guard position < bytes.count, bytes[position] != 0 else { return nil }
            let length = bytes[position].leadingZeroBitCount + 1
            guard position + length <= bytes.count else { return nil }
            var value = UInt64(marker ? bytes[position] : bytes[position] & (0xFF >> length))
            var allOnes = value == UInt64(0xFF >> length)
            for index in 1..<length {
                value = value << 8 | UInt64(bytes[position + index])
                allOnes = allOnes && bytes[position + index] == 0xFF
            }
            position += length
            return (value, allOnes)
        }
        guard let headerID = vint(marker: true), headerID.value == 0x1A45_DFA3,
            let headerSize = vint(marker: false), !headerSize.unknown
        else { return nil }
        position += Int(clamping: headerSize.value)
        guard let segmentID = vint(marker: true), segmentID.value == 0x1853_8067,
            let segmentSize = vint(marker: false), !segmentSize.unknown, segmentSize.value < UInt64(Int64.max / 2)
        else { return nil }
        return Int64(position) + Int64(segmentSize.value)
    }

    /// "6 KB", "1.4 MB": sizes in binary kilobytes and megabytes, as a person reads them.
    static func byteCount(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) bytes" }
        if bytes < 1 << 20 { return "\((bytes + 512) / 1024) KB" }
        if bytes < 1 << 30 { return String(format: "%.1f MB", Double(bytes) / Double(1 << 20)) }
        return String(format: "%.2f GB", Double(bytes) / Double(1 << 30))
    }
}
