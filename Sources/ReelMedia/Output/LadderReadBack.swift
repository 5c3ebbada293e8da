internal import CFFmpeg
internal import CFFmpegShim
import Foundation

/// One media segment of a CMAF rendition as libavformat reads it back, packets only (nothing is
/// decoded).
public struct SegmentReadBack: Sendable, Equatable {
    /// File name inside the rendition's folder.
    public var file: String
    /// Packets whose bytes lie in this file.
    public var packets: Int
    /// Whether its first packet in decode order is a keyframe.
    public var startsWithKeyframe: Bool
    /// Presentation time of that first packet, seconds (edit list applied: an audio track's priming
    /// packet, trimmed by the edit list, is before 0).
    public var firstSeconds: Double?
    /// The earliest presentation time of its packets, seconds.
    public var earliestSeconds: Double?
    /// The latest presentation end of its packets, seconds: the latest pts plus the track's shortest
    /// step between presentation times (a frame at a constant rate, 1024 samples of AAC).
    public var endSeconds: Double?
}

/// A CMAF rendition's files (its init segment followed by its media segments, as a player appends
/// them) read back through libavformat's mp4 demuxer from one stream of bytes that runs through the
/// files in order, so every `moof` is found where the playlists say it is and every packet is
/// attributed to the file its bytes are in. Packet headers only: it costs a read of each file.
public enum LadderReadBack {
    /// Reads `initFile` then `segments` (names inside `folder`). Throws `MediaError` when a file
    /// cannot be opened or read, or when the bytes are not an mp4 FFmpeg can open; a segment whose
    /// fragment FFmpeg cannot find packets in is reported with 0 packets, not thrown.
    public static func read(folder: String, initFile: String, segments: [String]) throws(MediaError)
        -> [SegmentReadBack]
    {
        FFmpegLog.installIfNeeded()
        let source = try ConcatenatedFiles(paths: ([initFile] + segments).map { folder + "/" + $0 })
        // 64 KiB reads: a segment is read once, front to back.
        let bufferSize: Int32 = 1 << 16
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError(kind: .internalFailure, call: "av_malloc", message: "out of memory")
        }
        guard
            var io = avio_alloc_context(
                buffer, bufferSize, 0, Unmanaged.passUnretained(source).toOpaque(), concatenatedRead, nil,
                concatenatedSeek)
        else {
            av_free(buffer)
            throw MediaError(kind: .internalFailure, call: "avio_alloc_context", message: "out of memory")
        }
        defer {
            av_freep(&io.pointee.buffer)
            var pointer: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&pointer)
            io = pointer ?? io
        }
        guard let allocated = avformat_alloc_context() else {
            throw MediaError(kind: .internalFailure, call: "avformat_alloc_context", message: "out of memory")
        }
        allocated.pointee.pb = io
        allocated.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        var context: UnsafeMutablePointer<AVFormatContext>? = allocated
        let opened = avformat_open_input(&context, nil, av_find_input_format("mp4"), nil)
        guard opened >= 0, let context else {
            throw MediaError(
                call: "avformat_open_input", code: opened, kind: .outputFailed,
                context: "\(folder)/\(initFile) and its segments are not an mp4 FFmpeg reads")
        }
        defer {
            var pointer: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&pointer)
        }
        guard context.pointee.nb_streams == 1, let stream = context.pointee.streams[0] else {
            throw MediaError(
                kind: .outputFailed, call: "avformat_open_input",
                message: "\(folder)/\(initFile) has \(context.pointee.nb_streams) tracks, not 1")
        }
        let timeBase = stream.pointee.time_base
        func seconds(_ value: Int64) -> Double { Double(value) * Double(timeBase.num) / Double(timeBase.den) }
        var results = segments.map {
            SegmentReadBack(
                file: $0, packets: 0, startsWithKeyframe: false, firstSeconds: nil, earliestSeconds: nil,
                endSeconds: nil)
        }
        let packet = try Packet()
        let nopts = reel_nopts_value()
        // A frame (or audio packet) is shown until the next one: the track's last lasts as long as
        // the shortest step between presentation times. Neither a packet's duration nor the steps
        // between decode times say it (FFmpeg 5.1's mp4 reader gives a fragmented track's last
        // packet no duration, and with `+cmaf`'s negative composition offsets decode times of
        // B-frames are 1 tick apart).
        var times: [[Int64]] = Array(repeating: [], count: segments.count)
        while true {
            let status = av_read_frame(context, packet.pointer)
            if status == reel_averror_eof() { break }
            if status < 0 {
                // A damaged fragment: what was read so far is the finding, the counts tell the rest.
                if source.failure != 0 {
                    throw MediaError(
                        call: "read", code: reel_averror(source.failure), kind: .outputFailed,
                        context: "cannot read back \(folder)")
                }
                break
            }
            defer { packet.unref() }
            let raw = packet.pointer.pointee
            // File 0 is the init segment: a packet there (or unplaced) belongs to no segment.
            guard raw.pos >= 0, let file = source.file(containing: raw.pos), file > 0 else { continue }
            var result = results[file - 1]
            let pts = raw.pts != nopts ? seconds(raw.pts) : nil
            if result.packets == 0 {
                result.startsWithKeyframe = raw.flags & AV_PKT_FLAG_KEY != 0
                result.firstSeconds = pts
            }
            result.packets += 1
            if let pts {
                result.earliestSeconds = min(result.earliestSeconds ?? pts, pts)
                times[file - 1].append(raw.pts)
            }
            results[file - 1] = result
        }
        let all = times.joined().sorted()
        let step = zip(all.dropFirst(), all).map { $0 - $1 }.filter { $0 > 0 }.min() ?? 0
        for index in results.indices {
            if let last = times[index].max() { results[index].endSeconds = seconds(last + step) }
        }
        return results
    }
}

/// Files read as one stream of bytes, in order (the AVIO source of `LadderReadBack`).
private final class ConcatenatedFiles {
    private var descriptors: [Int32] = []
    /// Where each file starts in the stream; the last entry is the total.
    private(set) var starts: [Int64] = [0]
    var position: Int64 = 0
    /// errno of the first failed read, 0 if none.
    var failure: Int32 = 0

    init(paths: [String]) throws(MediaError) {
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            var status = stat()
            guard fd >= 0, fstat(fd, &status) == 0 else {
                let code = errno
                if fd >= 0 { close(fd) }
                descriptors.forEach { close($0) }
                throw MediaError(
                    call: "open", code: reel_averror(code), kind: .outputFailed, context: "cannot read back \(path)")
            }
            descriptors.append(fd)
            starts.append(starts.last! + Int64(status.st_size))
        }
    }

    deinit { descriptors.forEach { close($0) } }

    var total: Int64 { starts.last! }

    /// The index of the file holding stream offset `offset`.
    func file(containing offset: Int64) -> Int? {
        guard offset >= 0, offset < total else { return nil }
        var low = 0
        var high = descriptors.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// Reads up to `count` bytes at the current position into `buffer`; 0 at the end, -1 on failure.
    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) -> Int {
        guard let index = file(containing: position) else { return 0 }
        let offset = position - starts[index]
        let wanted = min(count, Int(starts[index + 1] - position))
        while true {
            let got = pread(descriptors[index], buffer, wanted, off_t(offset))
            if got < 0 {
                if errno == EINTR { continue }
                failure = errno
                return -1
            }
            // A file shorter than when it was opened: the stream ends there.
            if got == 0 { return 0 }
            position += Int64(got)
            return got
        }
    }
}

private let concatenatedRead: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 =
    { opaque, buffer, size in
        guard let opaque, let buffer else { return reel_averror(EINVAL) }
        let source = Unmanaged<ConcatenatedFiles>.fromOpaque(opaque).takeUnretainedValue()
        let got = source.read(into: buffer, count: Int(size))
        if got < 0 { return reel_averror(source.failure) }
        return got == 0 ? reel_averror_eof() : Int32(got)
    }

private let concatenatedSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = {
    opaque, offset, whence in
    guard let opaque else { return Int64(reel_averror(EINVAL)) }
    let source = Unmanaged<ConcatenatedFiles>.fromOpaque(opaque).takeUnretainedValue()
    if whence & AVSEEK_SIZE != 0 { return source.total }
    let target: Int64
    switch whence & ~AVSEEK_FORCE {
    case SEEK_SET: target = offset
    case SEEK_CUR: target = source.position + offset
    case SEEK_END: target = source.total + offset
    default: return Int64(reel_averror(EINVAL))
    }
    guard target >= 0 else { return Int64(reel_averror(EINVAL)) }
    source.position = target
    return target
}
