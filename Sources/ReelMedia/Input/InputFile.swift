internal import CFFmpeg
internal import CFFmpegShim
import Foundation

/// Owns an input `AVFormatContext` (closed with `avformat_close_input`), opened under an `InputPolicy`.
///
/// Not `Sendable`: FFmpeg contexts are not thread-safe; each export keeps its own on its own thread.
final class InputFile {
    private(set) var context: UnsafeMutablePointer<AVFormatContext>
    let info: MediaInfo
    /// Beats on every packet read.
    var heartbeat: Heartbeat?
    /// Kept alive as long as FFmpeg's interrupt callback may read it.
    private let interrupt: CancellationFlag?

    /// Opens and probes a file. Throws `.unreadableInput` when the file is missing, not a regular file,
    /// not a permitted container, or not media FFmpeg can read; `.limitExceeded` past the policy.
    /// `analyze: .headerSuffices` skips `avformat_find_stream_info` (which decodes the first frames of
    /// every stream) for containers whose header fully describes their streams (MP4/QuickTime,
    /// Matroska): for copying packets, and for reading back a file Reel just wrote.
    enum Analysis { case full, headerSuffices }

    /// `byteRange`, when given, opens only those bytes of the file as a media file of their own (a
    /// Motion Photo's embedded MP4) through FFmpeg's `subfile` protocol over the resolved path: the
    /// range must lie inside the file, FFmpeg reads nothing outside it, and `info.fileBytes` is the
    /// range's length.
    ///
    /// `demuxer` names the demuxer to open with instead of probing every one FFmpeg has (probing was
    /// about half of opening a small MP4 header, perf): for a caller that recognised the format from
    /// the first bytes. The allowlist still decides: a demuxer it does not name is refused, and an
    /// unknown name probes as usual.
    init(
        path: String, policy: InputPolicy, interrupt: CancellationFlag? = nil, analysis: Analysis = .full,
        demuxerOptions: [(String, String)] = [], byteRange: Range<Int64>? = nil, demuxer: String? = nil
    ) throws(MediaError) {
        FFmpegLog.installIfNeeded()
        let (resolved, wholeFileBytes) = try InputFile.checkRegularFile(path, policy: policy)
        var url = resolved
        var protocols = "file"
        var fileBytes = wholeFileBytes
        if let byteRange {
            url = try InputFile.subfileURL(path: path, resolved: resolved, byteRange: byteRange, fileBytes: fileBytes)
            protocols = "subfile,file"
            fileBytes = Int64(byteRange.count)
        }

        guard let allocated = avformat_alloc_context() else {
            throw MediaError(kind: .internalFailure, call: "avformat_alloc_context", message: "out of memory")
        }
        var context: UnsafeMutablePointer<AVFormatContext>? = allocated
        interrupt?.interrupts(allocated)
        let options = try OptionDictionary(
            [
                ("protocol_whitelist", protocols),
                ("format_whitelist", policy.allowedDemuxers.joined(separator: ",")),
                // Do not follow QuickTime data references to other files.
                ("enable_drefs", "0"),
                // Refuse files declaring absurd stream counts before probing them all.
                ("max_streams", String(policy.maxStreams)),
            ] + demuxerOptions)
        // Open the resolved path, so a symlink swapped after the check cannot redirect the open.
        let format = demuxer.flatMap { av_find_input_format($0) }
        let opened = avformat_open_input(&context, url, format, &options.pointer)
        // On failure avformat_open_input frees the context and sets it to NULL.
        guard opened >= 0, let context else {
            if opened == reel_averror(ENOMEM) {
                // What the demuxer returns when a file declares more than `max_streams` streams.
                throw MediaError(
                    kind: .limitExceeded, call: "avformat_open_input", code: opened,
                    message: "\(path) declares more streams than the limit of \(policy.maxStreams)")
            }
            if let byteRange {
                throw MediaError(
                    call: "avformat_open_input", code: opened, kind: .unreadableInput,
                    context:
                        "\(path): bytes \(byteRange.lowerBound)..<\(byteRange.upperBound) are not media FFmpeg reads")
            }
            throw InputDiagnosis.openFailure(
                path: path, resolved: resolved, fileBytes: fileBytes, policy: policy, code: opened)
        }
        // Until every property is set, deinit will not run: close the input on every early exit.
        func fail(_ error: MediaError) -> MediaError {
            var pointer: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&pointer)
            return error
        }
        if interrupt?.isRaised == true { throw fail(MediaError.cancelled()) }
        let formatNames = String(cString: context.pointee.iformat.pointee.name).split(separator: ",").map(String.init)
        // A file cut short opens (its header is complete) but is refused: what it would export is not
        // what its sender meant.
        if let truncated = InputDiagnosis.truncation(
            resolved, fileBytes: fileBytes, formatNames: formatNames, start: byteRange?.lowerBound ?? 0)
        {
            throw fail(MediaError(kind: .unreadableInput, call: "truncation", message: "\(path): \(truncated)"))
        }
        let found =
            analysis == .headerSuffices && InputFile.headerDescribesStreams(context, formatNames: formatNames)
            ? 0 : avformat_find_stream_info(context, nil)
        if found < 0 {
            throw fail(
                MediaError(
                    call: "avformat_find_stream_info", code: found, kind: .unreadableInput,
                    context: "\(path): could not read the streams"))
        }
        let described = InputFile.describe(context, path: path, fileBytes: fileBytes)
        do {
            try InputFile.checkLimits(described, policy: policy)
        } catch {
            throw fail(error)
        }
        self.context = context
        self.interrupt = interrupt
        info = described
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&pointer)
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }

    /// The `language` tag of stream `index`, if it has one.
    func language(ofStream index: Int) -> String? { readDictionary(stream(index).pointee.metadata)["language"] }

    /// Reads the next packet. Returns `false` at end of file.
    func read(into packet: Packet) throws(MediaError) -> Bool {
        let code = av_read_frame(context, packet.pointer)
        heartbeat?.beat()
        if code == reel_averror_eof() { return false }
        try check(code, "av_read_frame", kind: .unreadableInput, context: "could not read the input")
        return true
    }

    /// Reads the next packet unless `cancel` is raised; any read failure after a cancel is reported as
    /// the cancel it is (the interrupt callback makes reads fail).
    func read(into packet: Packet, unless cancel: CancellationFlag) throws(MediaError) -> Bool {
        if cancel.isRaised { throw MediaError.cancelled() }
        do {
            return try read(into: packet)
        } catch  where error.kind == .cancelled || cancel.isRaised {
            throw MediaError.cancelled()
        }
    }

    /// Seeks so the next packets start at or before `target` microseconds of source time (on a keyframe).
    func seek(toMicroseconds target: Int64) throws(MediaError) {
        try check(
            avformat_seek_file(context, -1, Int64.min, target, target, 0), "avformat_seek_file",
            kind: .unreadableInput)
    }

    /// Whether the header alone gives what copying the streams needs. Only MP4/QuickTime qualifies:
    /// its sample tables carry decode timestamps and its sample entries the codecs' configurations.
    /// Matroska does not: it stores presentation times only, so without the first frames decoded
    /// FFmpeg cannot give B-frame video decode timestamps the MP4 muxer accepts. Even in MP4, a video
    /// stream the header leaves without a size (MPEG-4 Part 2's `esds`), or VP9 without the pixel
    /// format its `vpcC` box is written from, needs the frames looked at.
    private static func headerDescribesStreams(
        _ context: UnsafeMutablePointer<AVFormatContext>, formatNames: [String]
    ) -> Bool {
        guard formatNames.contains("mov"), context.pointee.nb_streams > 0 else { return false }
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let parameters = context.pointee.streams[index]?.pointee.codecpar.pointee else { return false }
            switch parameters.codec_type {
            case AVMEDIA_TYPE_VIDEO:
                if parameters.width <= 0 || parameters.height <= 0 { return false }
                if parameters.codec_id == AV_CODEC_ID_VP9 && parameters.format < 0 { return false }
            case AVMEDIA_TYPE_AUDIO:
                if parameters.sample_rate <= 0 || parameters.ch_layout.nb_channels <= 0 { return false }
            default:
                break
            }
        }
        return true
    }

    // MARK: - Checks before opening

    /// FFmpeg's name for bytes `byteRange` of the file at `resolved`, once the range is known to lie
    /// inside its `fileBytes`. Throws `.unreadableInput` naming `path` otherwise.
    static func subfileURL(path: String, resolved: String, byteRange: Range<Int64>, fileBytes: Int64)
        throws(MediaError) -> String
    {
        guard byteRange.lowerBound >= 0, !byteRange.isEmpty, byteRange.upperBound <= fileBytes else {
            throw MediaError(
                kind: .unreadableInput, call: "byte range",
                message:
                    "\(path): bytes \(byteRange.lowerBound)..<\(byteRange.upperBound) are not inside its \(fileBytes)")
        }
        // subfile's options end at the first ",,", so such a path cannot be named this way.
        guard !resolved.contains(",,") else {
            throw MediaError(kind: .unreadableInput, call: "byte range", message: "\(path): a path with ',,' in it")
        }
        return "subfile,,start,\(byteRange.lowerBound),end,\(byteRange.upperBound),,:file:\(resolved)"
    }

    /// Only regular files are opened: devices, FIFOs, sockets and directories are refused before
    /// FFmpeg sees them (a FIFO or `/dev/urandom` would block or never end).
    /// Returns the path with symlinks resolved, and the file's size.
    static func checkRegularFile(_ path: String, policy: InputPolicy) throws(MediaError) -> (String, Int64) {
        guard let real = realpath(path, nil) else {
            let failure = errno
            throw MediaError(
                kind: .unreadableInput, call: "realpath", code: -failure,
                message: "cannot open \(path): \(String(cString: strerror(failure)))")
        }
        let resolved = String(cString: real)
        free(real)
        if !policy.allowedRoots.isEmpty {
            let inside = policy.allowedRoots.contains { root in
                guard let realRoot = realpath(root, nil) else { return false }
                defer { free(realRoot) }
                let folder = String(cString: realRoot)
                return resolved.hasPrefix(folder == "/" ? "/" : folder + "/")
            }
            guard inside else {
                throw MediaError(
                    kind: .unreadableInput, call: "allowed roots",
                    message: "\(path) is outside the allowed folders (\(policy.allowedRoots.joined(separator: ":")))")
            }
        }
        var status = stat()
        guard stat(resolved, &status) == 0 else {
            let failure = errno
            throw MediaError(
                kind: .unreadableInput, call: "stat", code: -failure,
                message: "cannot open \(path): \(String(cString: strerror(failure)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw MediaError(
                kind: .unreadableInput, call: "stat", message: "\(path) is not a regular file")
        }
        guard status.st_size > 0 else {
            throw MediaError(kind: .unreadableInput, call: "stat", message: "\(path) is empty")
        }
        guard Int64(status.st_size) <= policy.maxFileBytes else {
            throw MediaError(
                kind: .limitExceeded, call: "stat",
                message: "\(path) is \(status.st_size) bytes, over the limit of \(policy.maxFileBytes)")
        }
        guard access(path, R_OK) == 0 else {
            throw MediaError(kind: .unreadableInput, call: "access", message: "cannot read \(path): permission denied")
        }
        return (resolved, Int64(status.st_size))
    }

    static func checkLimits(_ info: MediaInfo, policy: InputPolicy) throws(MediaError) {
        func fail(_ message: String) -> MediaError {
            MediaError(kind: .limitExceeded, call: "limits", message: message)
        }
        if info.streams.count > policy.maxStreams {
            throw fail("the input has \(info.streams.count) streams, over the limit of \(policy.maxStreams)")
        }
        if info.durationSeconds > policy.maxDurationSeconds {
            throw fail(
                "the input lasts \(Int(info.durationSeconds)) s, over the limit of \(Int(policy.maxDurationSeconds)) s")
        }
        for stream in info.streams where stream.kind == .video {
            if let width = stream.width, let height = stream.height,
                max(width, height) > policy.maxDimension
            {
                throw fail(
                    "stream \(stream.index) is \(width)x\(height), over the limit of \(policy.maxDimension) pixels")
            }
        }
    }
}
