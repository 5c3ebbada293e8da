internal import CFFmpeg
internal import CFFmpegShim

/// What still images to take from a video and how, as plain values (decided by ReelExport's
/// `AssetImageGenerator`; ReelMedia only executes it).
public struct ThumbnailRequest: Sendable {
    public var inputPath: String
    /// The bytes of `inputPath` the video occupies (a Motion Photo's embedded MP4, read in place);
    /// nil for the whole file.
    public var byteRange: Range<Int64>?
    public var policy: InputPolicy
    /// Seconds from the asset's start, each within 0...duration, in any order (taken in time order).
    public var times: [Double]
    /// How far before and after a requested time the picture may be (`AVAssetImageGenerator`'s
    /// tolerances): when the nearest keyframe is within them it is taken (one packet decoded), else
    /// the frame shown at the requested time is decoded. Both zero: always that frame.
    public var toleranceBefore: Double
    public var toleranceAfter: Double
    /// The box pictures are fitted into (aspect kept, never enlarged); 0 in a dimension: unbounded.
    public var maximumWidth: Int
    public var maximumHeight: Int
    /// Apply the display matrix (rotation, mirror) to the pixels.
    public var appliesTransform: Bool
    public var format: ImageFormat
    /// 1...100 (JPEG, WebP).
    public var quality: Int
    /// Paste the pictures into sheets of this many columns and rows instead of one file each.
    public var sheet: (columns: Int, rows: Int)?
    /// The video decoder's threads: a queued job's share of the cores (`StageThreads.decoder`); 0
    /// (the default) lets libavcodec use every core.
    public var threads = 0

    public init(
        inputPath: String, policy: InputPolicy = .standard, times: [Double], toleranceBefore: Double = .infinity,
        toleranceAfter: Double = .infinity, maximumWidth: Int = 0, maximumHeight: Int = 0,
        appliesTransform: Bool = true, format: ImageFormat = .jpeg, quality: Int = 90,
        sheet: (columns: Int, rows: Int)? = nil
    ) {
        self.inputPath = inputPath
        self.policy = policy
        self.times = times
        self.toleranceBefore = toleranceBefore
        self.toleranceAfter = toleranceAfter
        self.maximumWidth = maximumWidth
        self.maximumHeight = maximumHeight
        self.appliesTransform = appliesTransform
        self.format = format
        self.quality = quality
        self.sheet = sheet
    }
}

/// One picture taken: where it was asked for and where it came from.
public struct ThumbnailPick: Sendable, Equatable {
    /// Seconds from the asset's start, as requested.
    public var requestedSeconds: Double
    /// The presentation time of the frame used, in seconds from the asset's start.
    public var actualSeconds: Double
    /// Whether that frame is a keyframe.
    public var isKeyframe: Bool
    /// Its place in a sheet (top-left corner, pixels); nil for a picture of its own.
    public var x: Int?
    public var y: Int?
}

/// One image file's bytes: a picture (one pick) or a sprite sheet (one pick per cell, in order).
public struct ThumbnailImage: Sendable {
    public var data: [UInt8]
    public var width: Int
    public var height: Int
    /// The size of one picture (the cell size of a sheet).
    public var pictureWidth: Int
    public var pictureHeight: Int
    public var picks: [ThumbnailPick]
}

/// Reads still pictures from a file's video track for `ThumbnailRequest`s: decodes the source once,
/// in time order, seeking only forward and only when a keyframe lies between where it is and the
/// next picture.
public enum ThumbnailReader {
    /// What a read cost: how often it moved the read position and how many video packets it
    /// decoded.
    public struct Statistics: Sendable, Equatable {
        public var seeks: Int
        public var packetsDecoded: Int
        /// The threads the video decoder ran with, as libavcodec settled them (its `thread_count`
        /// once opened).
        public var decoderThreads: Int
    }

    /// Takes every requested picture, handing each finished image to `deliver` in time order, on
    /// the calling thread (which this blocks). Throws `MediaError` for an input it cannot read, a
    /// time outside 0...duration (`invalidArgument`), an image format this FFmpeg cannot write, or
    /// `cancelled` once `cancel` is raised. `heartbeat` beats for every packet read and every image
    /// made, for a watchdog that tells slow work from stuck work.
    @discardableResult
    public static func read(
        _ request: ThumbnailRequest, cancel: CancellationFlag? = nil, heartbeat: Heartbeat? = nil,
        deliver: (ThumbnailImage) throws(MediaError) -> Void
    ) throws(MediaError) -> Statistics {
        let session = try ThumbnailSession(request, cancel: cancel, heartbeat: heartbeat)
        try session.run(deliver: deliver)
        return Statistics(
            seeks: session.seeks, packetsDecoded: session.packetsDecoded,
            decoderThreads: Int(session.decoder.context.pointee.thread_count))
    }
}

/// One `ThumbnailReader.read`: the input, its decoder, the renderer and encoder.
private final class ThumbnailSession {
    let request: ThumbnailRequest
    let input: InputFile
    let streamIndex: Int
    let stream: UnsafeMutablePointer<AVStream>
    let timeBase: AVRational
    let decoder: Decoder
    let renderer: PictureRenderer
    let encoder: ImageEncoder
    let cancel: CancellationFlag?
    let heartbeat: Heartbeat?
    /// The asset's start in the stream's time base: requested times count from it.
    let startPts: Int64
    let frameDuration: Int64
    /// Keyframe timestamps from the demuxer's index (decode times), ascending; empty when the
    /// container has no index: keyframe mode then seeks to every time, and exact mode seeks when the
    /// next time is more than 5 s ahead.
    let keyframes: [Int64]
    let packet: Packet
    /// The last packet of the stream read, as a decode time (Int64.min: nothing read since a seek).
    var readPosition = Int64.min
    var positioned = false
    var atEnd = false
    /// Exact mode's look-behind and look-ahead: the last frame at or before the last target, and
    /// the first one after it.
    var held: Frame?
    var pending: Frame?
    /// The last keyframe decoded alone, by its index in `keyframes`.
    var lastKey: (index: Int, frame: Frame)?
    private(set) var seeks = 0
    private(set) var packetsDecoded = 0

    init(_ request: ThumbnailRequest, cancel: CancellationFlag?, heartbeat: Heartbeat?) throws(MediaError) {
        self.request = request
        self.cancel = cancel
        self.heartbeat = heartbeat
        // The encoder is checked before the file is even opened: an unavailable format is refused
        // whatever the input.
        guard request.format.isAvailable else {
            throw MediaError(
                kind: .unsupportedCodec, call: "avcodec_find_encoder_by_name",
                message:
                    "this FFmpeg has no \(request.format.encoderName) encoder, so it cannot write \(request.format.rawValue) images"
            )
        }
        input = try InputFile(
            path: request.inputPath, policy: request.policy, interrupt: cancel, byteRange: request.byteRange)
        guard let info = input.info.bestVideoStream, !info.isAttachedPicture else {
            throw MediaError(
                kind: .invalidArgument, call: "thumbnail", message: "\(request.inputPath) has no video track")
        }
        if info.dynamicRange == .dolbyVision, info.baseDynamicRange == nil {
            throw MediaError(
                kind: .unsupportedCodec, call: "thumbnail",
                message:
                    "Dolby Vision profile \(info.dolbyVision?.name ?? "") has no base layer other decoders can show, so its pictures would come out green and purple"
            )
        }
        let duration = input.info.durationSeconds
        for time in request.times where !(time >= 0 && time <= duration + 1e-6) {
            throw MediaError(
                kind: .invalidArgument, call: "thumbnail",
                message: "the time \(formatSeconds(time)) is outside the asset, which lasts \(formatSeconds(duration))")
        }
        streamIndex = info.index
        stream = input.stream(info.index)
        timeBase = stream.pointee.time_base
        decoder = try Decoder(stream: stream, index: info.index, threads: StageThreads(share: request.threads).decoder)
        startPts = av_rescale_q(saneStart(input.info.startSeconds), reel_time_base_q(), timeBase)
        var rate = av_guess_frame_rate(input.context, stream, nil)
        if rate.num <= 0 || rate.den <= 0 { rate = AVRational(num: 30, den: 1) }
        frameDuration = max(1, av_rescale_q(1, av_inv_q(rate), timeBase))
        keyframes = input.keyframeTimestamps(ofStream: info.index)
        let rotation = request.appliesTransform ? (info.rotation ?? 0) : 0
        let mirrored = request.appliesTransform && (info.isMirrored ?? false)
        let size = PictureRenderer.fittedSize(
            codedWidth: info.width ?? 2, codedHeight: info.height ?? 2, sampleAspect: info.sampleAspectRatio,
            rotation: rotation, maximum: (request.maximumWidth, request.maximumHeight))
        renderer = try PictureRenderer(
            width: size.width, height: size.height, rotation: rotation, mirrored: mirrored,
            toneMapping: info.toneMapping)
        let sheetSize = request.sheet.map { (size.width * $0.columns, size.height * $0.rows) } ?? size
        encoder = try ImageEncoder(
            format: request.format, width: sheetSize.0, height: sheetSize.1, quality: request.quality)
        packet = try Packet()
    }

    func run(deliver: (ThumbnailImage) throws(MediaError) -> Void) throws(MediaError) {
        let canvas = try request.sheet.map { sheet throws(MediaError) in
            try SheetCanvas(
                columns: sheet.columns, rows: sheet.rows, cellWidth: renderer.width, cellHeight: renderer.height)
        }
        var sheetPicks: [ThumbnailPick] = []
        let picture = try renderer.makePicture()
        // The same frame asked for twice is rendered once.
        var lastRendered: Int64?
        for requested in request.times.sorted() {
            if cancel?.isRaised == true { throw MediaError.cancelled() }
            let target = startPts + Int64((requested / av_q2d(timeBase)).rounded())
            let (frame, key) = try pick(target)
            let pts = Self.pts(of: frame.pointer) ?? target
            if lastRendered != pts {
                try renderer.render(frame.pointer, into: picture)
                lastRendered = pts
            }
            var chosen = ThumbnailPick(
                requestedSeconds: requested, actualSeconds: seconds(pts - startPts, timeBase), isKeyframe: key)
            if let canvas {
                let corner = try canvas.add(picture)
                (chosen.x, chosen.y) = (corner.x, corner.y)
                sheetPicks.append(chosen)
                if canvas.isFull {
                    try deliver(image(canvas.picture, picks: sheetPicks))
                    sheetPicks = []
                    canvas.clear()
                }
            } else {
                try deliver(image(picture, picks: [chosen]))
            }
        }
        if let canvas, !canvas.isEmpty { try deliver(image(canvas.picture, picks: sheetPicks)) }
    }

    private func image(_ frame: Frame, picks: [ThumbnailPick]) throws(MediaError) -> ThumbnailImage {
        ThumbnailImage(
            data: try encoder.encode(frame.pointer), width: Int(frame.pointer.pointee.width),
            height: Int(frame.pointer.pointee.height), pictureWidth: renderer.width,
            pictureHeight: renderer.height, picks: picks)
    }

    // MARK: - Choosing and decoding frames

    /// The frame for `target` (stream time base) and whether it is a keyframe: the nearest keyframe
    /// when it lies within the tolerances, else the frame shown at `target`.
    private func pick(_ target: Int64) throws(MediaError) -> (Frame, Bool) {
        let tolerant = request.toleranceBefore > 0 || request.toleranceAfter > 0
        if tolerant {
            var candidate: Frame?
            if let key = nearestKeyframe(to: target) {
                if let lastKey, lastKey.index == key.index {
                    candidate = lastKey.frame
                } else {
                    candidate = try decodeKeyframe(at: key.index)
                    lastKey = (key.index, candidate!)
                }
            } else {
                candidate = try decodeKeyframe(atOrBefore: target)
            }
            // Index times are decode times: the keyframe's presentation time decides.
            if let candidate, let pts = Self.pts(of: candidate.pointer) {
                let offset = Double(pts - target) * av_q2d(timeBase)
                if offset >= -request.toleranceBefore, offset <= request.toleranceAfter { return (candidate, true) }
            }
        }
        let frame = try decodeExactly(target)
        return (frame, frame.pointer.pointee.key_frame != 0)
    }

    /// The index keyframe nearest `target` (index times are decode times: near enough to choose).
    private func nearestKeyframe(to target: Int64) -> (index: Int, time: Int64)? {
        guard !keyframes.isEmpty else { return nil }
        let after = firstIndex(atOrAfter: target)
        var best = min(after, keyframes.count - 1)
        if after > 0, after == keyframes.count || target - keyframes[after - 1] <= keyframes[after] - target {
            best = after - 1
        }
        return (best, keyframes[best])
    }

    /// The first index of `keyframes` at or after `time` (count when none).
    private func firstIndex(atOrAfter time: Int64) -> Int {
        var (low, high) = (0, keyframes.count)
        while low < high {
            let middle = (low + high) / 2
            if keyframes[middle] < time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Decodes keyframe `index` of the index alone: read forward to it when it is the next one
    /// after the read position, else seek to it.
    private func decodeKeyframe(at index: Int) throws(MediaError) -> Frame {
        let time = keyframes[index]
        if !positioned || readPosition == Int64.min || index != firstIndex(atOrAfter: readPosition + 1) {
            try seek(to: time)
        }
        return try decodeNextKeyframe(notBefore: time)
    }

    /// Without an index: the keyframe a backward seek to `target` lands on.
    private func decodeKeyframe(atOrBefore target: Int64) throws(MediaError) -> Frame {
        try seek(to: target)
        return try decodeNextKeyframe(notBefore: Int64.min)
    }

    /// Reads to the next keyframe packet with a decode time of at least `time`, skipping the rest
    /// unread by the decoder, and decodes it on its own: sent, then the decoder drained and reset,
    /// so a decoder with frame threads or reordering gives it up at once.
    private func decodeNextKeyframe(notBefore time: Int64) throws(MediaError) -> Frame {
        // Exact mode's frames belong to the decoder state this resets.
        held = nil
        pending = nil
        atEnd = false
        let frame = try Frame()
        while true {
            if cancel?.isRaised == true { throw MediaError.cancelled() }
            guard try readPacket() else {
                throw MediaError(
                    kind: .unreadableInput, call: "thumbnail", message: "no decodable keyframe near the requested time")
            }
            defer { packet.unref() }
            let isKey = packet.pointer.pointee.flags & AV_PKT_FLAG_KEY != 0
            guard isKey, (sane(packet.pointer.pointee.dts) ?? sane(packet.pointer.pointee.pts) ?? time) >= time
            else { continue }
            avcodec_flush_buffers(decoder.context)
            packetsDecoded += 1
            if try decoder.send(packet) == .skipped { continue }
            _ = try decoder.send(nil)
            let result = try decoder.receive(frame)
            avcodec_flush_buffers(decoder.context)
            if result == .produced { return frame }
        }
    }

    /// The frame shown at `target`: the last one presented at or before it (the first frame when
    /// `target` precedes every frame). Decodes forward from where the last target left off, seeking
    /// only when a keyframe lies between there and `target`.
    private func decodeExactly(_ target: Int64) throws(MediaError) -> Frame {
        // Seek aim: a few frames early, since index times are decode times, which run ahead of
        // presentation times by the reordering delay.
        let aim = target - 3 * frameDuration
        var seekNeeded = !positioned || (held == nil && pending == nil)
        if !seekNeeded, !keyframes.isEmpty {
            let index = firstIndex(atOrAfter: aim + 1) - 1
            if index >= 0, keyframes[index] > readPosition { seekNeeded = true }
        } else if !seekNeeded, let current = pending.flatMap({ Self.pts(of: $0.pointer) }),
            Double(target - current) * av_q2d(timeBase) > 5
        {
            seekNeeded = true  // no index: a seek beats decoding more than 5 s
        }
        if seekNeeded {
            try seek(to: aim)
            avcodec_flush_buffers(decoder.context)
            atEnd = false
            lastKey = nil
        }
        while true {
            if pending == nil {
                guard let frame = try nextFrame() else { break }
                pending = frame
            }
            guard let next = pending, (Self.pts(of: next.pointer) ?? target) <= target else { break }
            held = next
            pending = nil
        }
        guard let chosen = held ?? pending else {
            throw MediaError(
                kind: .unreadableInput, call: "thumbnail", message: "no frame could be decoded near the requested time")
        }
        return chosen
    }

    /// The next decoded frame in presentation order, or nil at the end of the stream.
    private func nextFrame() throws(MediaError) -> Frame? {
        let frame = try Frame()
        while true {
            if cancel?.isRaised == true { throw MediaError.cancelled() }
            switch try decoder.receive(frame) {
            case .produced: return frame
            case .endOfStream: return nil
            case .needsMoreInput:
                if atEnd { return nil }
                if try readPacket() {
                    defer { packet.unref() }
                    // The decoder asked for input, so it takes this packet (or skips a corrupt one).
                    packetsDecoded += 1
                    _ = try decoder.send(packet)
                } else {
                    atEnd = true
                    _ = try decoder.send(nil)
                }
            }
        }
    }

    /// Reads the next packet of the video stream into `packet`; false at the end of the file.
    private func readPacket() throws(MediaError) -> Bool {
        while true {
            let more: Bool
            if let cancel {
                more = try input.read(into: packet, unless: cancel)
            } else {
                more = try input.read(into: packet)
            }
            guard more else { return false }
            heartbeat?.beat()
            if packet.streamIndex == streamIndex {
                readPosition = sane(packet.pointer.pointee.dts) ?? sane(packet.pointer.pointee.pts) ?? readPosition
                return true
            }
            packet.unref()
        }
    }

    /// Moves the read position to the keyframe at or before `time` (stream time base).
    private func seek(to time: Int64) throws(MediaError) {
        let code = avformat_seek_file(input.context, Int32(streamIndex), Int64.min, time, time, 0)
        if code < 0 {
            // Before the first keyframe (or a container that cannot seek there): from the start.
            try check(
                avformat_seek_file(input.context, Int32(streamIndex), Int64.min, Int64.min, Int64.max, 0),
                "avformat_seek_file", kind: .unreadableInput, context: "cannot seek in the input")
        }
        positioned = true
        seeks += 1
        readPosition = Int64.min
        held = nil
        pending = nil
    }

    static func pts(of frame: UnsafeMutablePointer<AVFrame>) -> Int64? {
        sane(frame.pointee.best_effort_timestamp) ?? sane(frame.pointee.pts)
    }
}

/// Seconds as `12.345 s`.
private func formatSeconds(_ value: Double) -> String {
    value.isFinite ? "\((value * 1000).rounded() / 1000) s" : "\(value)"
}
