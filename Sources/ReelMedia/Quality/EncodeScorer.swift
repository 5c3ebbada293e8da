internal import CFFmpeg
internal import CFFmpegShim

/// Scores an encode as it happens: keeps a copy of each picture sent to the encoder, decodes the
/// encoder's packets, and compares each decoded picture with the one that went in (`QualityMeter`).
///
/// Pictures come out of the decoder in the order they went into the encoder (presentation order;
/// x264, x265 and SVT-AV1 drop none), so the copies wait in a queue and each decoded picture is
/// paired with the oldest. With `stride` above 1 only every `stride`-th picture is kept and scored,
/// bounding the copies a deep encoder delay holds at large sizes. A reference of another size (a
/// larger ladder rung's picture) is compared with the decoded picture scaled up to it, bicubic, as a
/// player would show it. One thread at a time.
final class EncodeScorer {
    private let decoder: Decoder
    private let decoded: Frame
    private let meter = QualityMeter()
    private let stride: Int
    /// Copies of the pictures sent and not yet decoded, oldest first (`head` onwards).
    private var references: [Frame] = []
    private var head = 0
    private var spare: [Frame] = []
    private var sent = 0
    private var received = 0
    /// Scales decoded pictures to a reference of another size, and the picture it wrote.
    private var upscaler: Scaler?
    private var upscaled: Frame?

    /// `parameters`: the opened encoder's (its extradata); `timeBase`: its packets' clock.
    init(parameters: CodecParameters, timeBase: AVRational, stride: Int = 1) throws(MediaError) {
        decoder = try Decoder(parameters: parameters, timeBase: timeBase, threads: 1)
        decoded = try Frame()
        self.stride = max(1, stride)
    }

    /// Copies kept in flight are bounded by the encoder's and decoder's delay (x264's lookahead,
    /// frame threads and reordering: about 64 pictures); at sizes where 64 copies would pass 384 MB
    /// (2160p) only every second or third picture is scored.
    static func stride(width: Int, height: Int, tenBit: Bool) -> Int {
        let bytes = Double(width * height) * 1.5 * (tenBit ? 2 : 1)
        return max(1, Int((bytes * 64 / 384e6).rounded(.up)))
    }

    /// Pictures scored so far.
    var frames: Int { meter.frames }

    /// Keeps a copy of a picture about to be encoded (every `stride`-th one).
    func keep(_ frame: Frame) throws(MediaError) {
        defer { sent += 1 }
        guard sent % stride == 0 else { return }
        let source = frame.pointer
        let copy: Frame
        if let reused = spare.popLast(),
            reused.pointer.pointee.width == source.pointee.width,
            reused.pointer.pointee.height == source.pointee.height,
            reused.pointer.pointee.format == source.pointee.format
        {
            copy = reused
        } else {
            copy = try Frame(
                width: source.pointee.width, height: source.pointee.height,
                format: AVPixelFormat(rawValue: source.pointee.format))
        }
        try copy.makeWritable()
        try check(av_frame_copy(copy.pointer, source), "av_frame_copy")
        references.append(copy)
    }

    /// Decodes an encoded packet and scores the pictures it completes.
    func take(_ packet: Packet) throws(MediaError) {
        try decoder.feed(packet) { () throws(MediaError) in try drain() }
    }

    /// Decodes what the decoder still holds; returns the score of every picture compared.
    func finish() throws(MediaError) -> QualityScore? {
        try decoder.feed(nil) { () throws(MediaError) in try drain() }
        return meter.score
    }

    private func drain() throws(MediaError) {
        while try decoder.receive(decoded) == .produced {
            defer { decoded.unref() }
            defer { received += 1 }
            guard received % stride == 0 else { continue }
            guard head < references.count else {
                throw MediaError(
                    kind: .internalFailure, call: "quality",
                    message: "the encoder gave back more pictures than it was sent")
            }
            let reference = references[head]
            head += 1
            try meter.add(try sized(like: reference), reference: reference.pointer)
            spare.append(reference)
            if head > 64, head * 2 > references.count {
                references.removeFirst(head)
                head = 0
            }
        }
    }

    /// The decoded picture, or a copy scaled to `reference`'s size when it has another.
    private func sized(like reference: Frame) throws(MediaError) -> UnsafeMutablePointer<AVFrame> {
        let (width, height) = (reference.pointer.pointee.width, reference.pointer.pointee.height)
        let picture = decoded.pointer
        guard picture.pointee.width != width || picture.pointee.height != height else { return picture }
        let format = AVPixelFormat(rawValue: reference.pointer.pointee.format)
        if upscaler == nil || !upscaler!.accepts(picture) {
            upscaler = try Scaler(
                from: picture, toWidth: width, height: height, format: format, matrix: .source, threads: 1)
        }
        let target: Frame
        if let upscaled, upscaled.pointer.pointee.width == width, upscaled.pointer.pointee.height == height {
            target = upscaled
        } else {
            target = try Frame(width: width, height: height, format: format)
            upscaled = target
        }
        try target.makeWritable()
        try upscaler!.scale(picture, into: target.pointer)
        return target.pointer
    }
}
