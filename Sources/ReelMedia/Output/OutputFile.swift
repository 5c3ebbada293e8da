internal import CFFmpeg
internal import CFFmpegShim
import Foundation
import ReelSystem

/// Owns an output `AVFormatContext` (freed with `avformat_free_context`) and the file it writes.
///
/// The bytes go through Reel's own `AVIOContext` on a file descriptor, so every byte written is
/// counted (progress of the faststart rewrite inside `av_write_trailer`), write errors keep their
/// errno (a full disk is reported as such), and the file is fsynced before it is closed (or, with
/// `backgroundSync`, by `BackgroundSync`'s thread, which the caller waits for before publishing).
final class OutputFile {
    let context: UnsafeMutablePointer<AVFormatContext>
    private let sink: ByteSink
    private var io: UnsafeMutablePointer<AVIOContext>?
    /// What each stream is (kind, copied or encoded), declared before the header is written.
    private var roles: [Int32: (kind: StreamKind, copied: Bool)] = [:]
    /// What went into each stream, by output stream index (from the header on).
    private var recorders: [WrittenStreamRecorder?] = []

    /// Creates `path` (which must not exist) for the named muxer (`mp4`, `mov`). With
    /// `backgroundSync`, writeback and the closing fsync run on a thread of their own
    /// (`BackgroundSync`), and `finish` leaves the fsync running: `pendingSync`.
    init(path: String, muxer: String, backgroundSync: Bool = false) throws(MediaError) {
        FFmpegLog.installIfNeeded()
        var allocated: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(
            avformat_alloc_output_context2(&allocated, nil, muxer, path), "avformat_alloc_output_context2",
            kind: .internalFailure)
        guard let allocated else {
            throw MediaError(kind: .internalFailure, call: "avformat_alloc_output_context2", message: "no context")
        }
        context = allocated
        do {
            sink = try ByteSink(path: path, backgroundSync: backgroundSync)
        } catch {
            avformat_free_context(allocated)
            throw error
        }
        // From here on every stored property is set: on a throw, deinit frees the context.
        // 256 KiB writes: a remux moves its whole input through here.
        let bufferSize: Int32 = 1 << 18
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError(kind: .internalFailure, call: "av_malloc", message: "out of memory")
        }
        guard
            let io = avio_alloc_context(
                buffer, bufferSize, 1, Unmanaged.passUnretained(sink).toOpaque(), nil, byteSinkWrite, byteSinkSeek)
        else {
            av_free(buffer)
            throw MediaError(kind: .internalFailure, call: "avio_alloc_context", message: "out of memory")
        }
        self.io = io
        context.pointee.pb = io
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        // The default (-1) flushes the AVIO buffer after every packet when its minimum packet size is
        // 0, as it is for a custom AVIO: one write(2) per packet. Nothing reads the file while it is
        // written (it is a hidden temporary until the rename), so whole buffers are written instead.
        context.pointee.flush_packets = 0
    }

    deinit {
        if let io {
            av_freep(&io.pointee.buffer)
            var pointer: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&pointer)
        }
        context.pointee.pb = nil
        avformat_free_context(context)
    }

    /// Whether streams must carry their codec headers out of band (`AV_CODEC_FLAG_GLOBAL_HEADER`).
    var wantsGlobalHeader: Bool { (context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER) != 0 }

    /// Whether this container can hold the codec.
    func canHold(_ codec: AVCodecID) -> Bool {
        avformat_query_codec(context.pointee.oformat, codec, FF_COMPLIANCE_NORMAL) == 1
    }

    /// Bytes written so far (header, packets, and the trailer's rewrite).
    var bytesWritten: Int64 { sink.bytesWritten }

    /// Beats on every write to the file.
    var heartbeat: Heartbeat? {
        get { sink.heartbeat }
        set { sink.heartbeat = newValue }
    }

    /// Called with the running byte count on every write.
    var onWrite: ((Int64) -> Void)? {
        get { sink.onWrite }
        set { sink.onWrite = newValue }
    }

    func addStream() throws(MediaError) -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw MediaError(kind: .internalFailure, call: "avformat_new_stream", message: "out of memory")
        }
        return stream
    }

    /// Adds a stream described by an encoder's parameters (`CodecParameters`), before the header is
    /// written; returns its index, for `target(ofStream:)` once the header is written.
    func addStream(describedBy parameters: CodecParameters, timeBase: AVRational, language: String?)
        throws(MediaError) -> Int32
    {
        let stream = try addStream()
        try check(avcodec_parameters_copy(stream.pointee.codecpar, parameters.pointer), "avcodec_parameters_copy")
        stream.pointee.time_base = timeBase
        if let language {
            try check(av_dict_set(&stream.pointee.metadata, "language", language, 0), "av_dict_set")
        }
        return stream.pointee.index
    }

    /// Where packets for stream `index` go. Read it after the header is written: the muxer may change
    /// a stream's time base then, never afterwards.
    func target(ofStream index: Int32) -> StreamTarget {
        StreamTarget(context.pointee.streams[Int(index)]!)
    }

    /// Writes the header with muxer options (e.g. `movflags`); unrecognised options are an error.
    func writeHeader(metadata: [String: String], options: [(String, String)]) throws(MediaError) {
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            try check(av_dict_set(&context.pointee.metadata, key, value, 0), "av_dict_set", context: key)
        }
        let dictionary = try OptionDictionary(options)
        // May return a positive value (AVSTREAM_INIT_IN_*): only negative is a failure.
        let written = avformat_write_header(context, &dictionary.pointer)
        if written < 0, let refusal = refusal(written, "avformat_write_header") { throw refusal }
        try check(written, "avformat_write_header", kind: .outputFailed, context: "cannot write the output header")
        let leftover = dictionary.leftoverKeys
        if !leftover.isEmpty {
            throw MediaError(
                kind: .invalidArgument, call: "avformat_write_header",
                message: "the muxer did not recognise: \(leftover.joined(separator: ", "))")
        }
        // The muxer has fixed the time bases: packets are recorded in them from here on.
        recorders = (0..<Int(context.pointee.nb_streams)).map { index in
            guard let stream = context.pointee.streams[index], let role = roles[Int32(index)] else { return nil }
            return WrittenStreamRecorder(stream: stream, kind: role.kind, copied: role.copied)
        }
    }

    /// Says what stream `index` holds, before the header is written, so what is written to it is
    /// recorded (`written`) for verification.
    func declare(stream index: Int32, kind: StreamKind, copied: Bool) {
        roles[index] = (kind, copied)
    }

    /// What went into each declared stream so far (complete once `finish` returned).
    var written: [WrittenStream] { recorders.compactMap { $0?.written } }

    /// Ends stream `index`'s record at `seconds` (a cut whose edit list ends there).
    func clipWritten(stream index: Int, toSeconds seconds: Double) {
        guard recorders.indices.contains(index) else { return }
        recorders[index]?.clipEnd(toSeconds: seconds)
    }

    /// Holds the file's lock beyond this object's life (`OutputLock`).
    func lock() throws(MediaError) -> OutputLock { try sink.lock() }

    /// Hands a packet to the interleaver; the packet's data then belongs to the muxer.
    func write(_ packet: Packet) throws(MediaError) {
        let index = Int(packet.pointer.pointee.stream_index)
        if recorders.indices.contains(index) { recorders[index]?.record(packet) }
        let written =
            writesDirectly
            ? av_write_frame(context, packet.pointer) : av_interleaved_write_frame(context, packet.pointer)
        if written < 0, let refusal = refusal(written, "av_interleaved_write_frame") { throw refusal }
        try check(written, "av_interleaved_write_frame", kind: .outputFailed, context: "cannot write the output")
    }

    /// Packets go to the muxer as they come (`av_write_frame`), not through the interleaver: for a
    /// file of one track whose fragments the caller cuts (`cutFragment`), where a packet held back
    /// by the interleaver would land in the wrong fragment.
    var writesDirectly = false

    /// The muxer's position: the bytes written plus those still in the I/O buffer.
    var position: Int64 { context.pointee.pb.map { avio_tell($0) } ?? 0 }

    /// Writes the packets given since the last cut as one fragment (`moof` + `mdat`, with
    /// `movflags=+frag_custom`) and returns the position after it. Nothing given, nothing written.
    func cutFragment() throws(MediaError) -> Int64 {
        try check(av_write_frame(context, nil), "av_write_frame", kind: .outputFailed, context: "cannot cut a fragment")
        return position
    }

    /// The muxer refusing what it was given (a codec it cannot write, parameters or timestamps it
    /// rejects), as opposed to the file failing to take the bytes: the same export would fail again,
    /// so it is `unsupportedCodec`, never an output failure worth retrying.
    private func refusal(_ code: Int32, _ call: String) -> MediaError? {
        guard context.pointee.pb?.pointee.error ?? 0 >= 0,
            [reel_averror(EINVAL), reel_averror_patchwelcome(), reel_averror_experimental()].contains(code)
        else { return nil }
        let muxer = String(cString: context.pointee.oformat.pointee.name)
        return MediaError(
            call: call, code: code, kind: .unsupportedCodec, context: "the \(muxer) muxer refused the streams")
    }

    /// The closing fsync, still running, of a file made with `backgroundSync` (set by `finish`): the
    /// file is durable once its `wait()` returns.
    private(set) var pendingSync: PendingSync?

    /// Writes the trailer (the faststart rewrite happens here), flushes and fsyncs the file (or, made
    /// with `backgroundSync`, starts the fsync and leaves it in `pendingSync`). `edit`
    /// runs between the flush and the fsync, with the file's descriptor, for what the muxer cannot
    /// write (a Dolby Vision configuration box). With room reserved for the moov (`moov_size`), the mov
    /// muxer refuses its trailer (EINVAL, the file itself fine) when the moov outgrew the room: that is
    /// `moovReservationTooSmall`, and the caller can write the file again without.
    func finish(reservedMoov: Bool = false, edit: ((Int32) throws(MediaError) -> Void)? = nil) throws(MediaError) {
        let trailer = av_write_trailer(context)
        if reservedMoov, trailer == reel_averror(EINVAL), io?.pointee.error ?? 0 >= 0 {
            throw MediaError(
                kind: .moovReservationTooSmall, call: "av_write_trailer", code: trailer,
                message: "the space reserved for the moov was too small")
        }
        try check(trailer, "av_write_trailer", kind: .outputFailed, context: "cannot finish the output")
        if let io {
            avio_flush(io)
            if io.pointee.error < 0 {
                throw MediaError(
                    call: "avio_flush", code: io.pointee.error, kind: .outputFailed, context: "cannot write the output")
            }
        }
        try edit?(sink.fd)
        if let background = sink.background {
            pendingSync = background.finish()
        } else {
            try sink.sync()
        }
    }
}

/// Where an encoder's packets go: an output stream's index and time base, as values.
struct StreamTarget: Sendable {
    let index: Int32
    let timeBase: AVRational

    init(_ stream: UnsafeMutablePointer<AVStream>) {
        index = stream.pointee.index
        timeBase = stream.pointee.time_base
    }
}

/// The file descriptor behind an `OutputFile`'s `AVIOContext`. Lives on the export's thread.
private final class ByteSink {
    let fd: Int32
    var bytesWritten: Int64 = 0
    /// The file offset after the last write, and the offset up to which writeback has been started.
    var position: Int64 = 0
    var writebackStarted: Int64 = 0
    var onWrite: ((Int64) -> Void)?
    var heartbeat: Heartbeat?
    /// Where writeback is started, when not on the writing thread.
    private(set) var background: BackgroundSync?

    init(path: String, backgroundSync: Bool) throws(MediaError) {
        var created: Int32 = -1
        // Twice at most: a run removing leftovers may take the new file for one before it is locked.
        for _ in 0..<2 {
            // Read-write: a finished file may be edited in place (`finish(edit:)`).
            created = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if created < 0 {
                let code = errno
                throw MediaError(
                    call: "open", code: reel_averror(code), kind: code == ENOSPC ? .noSpace : .outputFailed,
                    context: "cannot create \(path)")
            }
            if OutputLock.lockNewFile(created) { break }
            close(created)
            created = -1
        }
        guard created >= 0 else {
            throw MediaError(
                kind: .outputFailed, call: "flock", message: "cannot create \(path): another run keeps removing it")
        }
        fd = created
        if backgroundSync { background = BackgroundSync(descriptor: created) }
    }

    /// A hold on the file's lock that outlives this sink (verification and publishing come after).
    func lock() throws(MediaError) -> OutputLock {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        if copy < 0 {
            throw MediaError(call: "fcntl", code: reel_averror(errno), kind: .internalFailure, context: "dup")
        }
        return OutputLock(adopting: copy)
    }

    deinit {
        // A file that failed before `finish`: its thread ends without syncing (no-op after `finish`).
        background?.abandon()
        if fd >= 0 { close(fd) }
    }

    /// Writeback is started every this many bytes of sequential writing, so the disk works while
    /// the export does and the closing fsync waits only for the tail (on a 129 MB remux: 64 → 3 ms).
    static let writebackChunk: Int64 = 8 << 20

    func wrote(_ count: Int) {
        position += Int64(count)
        bytesWritten += Int64(count)
        if position - writebackStarted >= Self.writebackChunk {
            if let background {
                background.startWriteback(writebackStarted..<position)
            } else {
                _ = reel_start_writeback(fd, writebackStarted, position - writebackStarted)
            }
            writebackStarted = position
        }
    }

    func sync() throws(MediaError) {
        if fsync(fd) != 0 {
            let code = errno
            throw MediaError(
                call: "fsync", code: reel_averror(code), kind: .outputFailed, context: "cannot write the output")
        }
    }
}

private let byteSinkWrite: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = {
    opaque, buffer, size in
    guard let opaque, let buffer else { return reel_averror(EINVAL) }
    let sink = Unmanaged<ByteSink>.fromOpaque(opaque).takeUnretainedValue()
    var offset = 0
    while offset < Int(size) {
        let written = write(sink.fd, buffer + offset, Int(size) - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return reel_averror(errno)
        }
        offset += written
    }
    sink.wrote(Int(size))
    sink.heartbeat?.beat()
    sink.onWrite?(sink.bytesWritten)
    return size
}

private let byteSinkSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = {
    opaque, offset, whence in
    guard let opaque else { return Int64(reel_averror(EINVAL)) }
    let sink = Unmanaged<ByteSink>.fromOpaque(opaque).takeUnretainedValue()
    if whence & AVSEEK_SIZE != 0 {
        var status = stat()
        return fstat(sink.fd, &status) == 0 ? Int64(status.st_size) : Int64(reel_averror(errno))
    }
    let position = lseek(sink.fd, off_t(offset), whence & ~AVSEEK_FORCE)
    if position < 0 { return Int64(reel_averror(errno)) }
    sink.position = Int64(position)
    // A seek back (the moov rewrite) restarts the writeback window there.
    sink.writebackStarted = min(sink.writebackStarted, sink.position)
    return Int64(position)
}
