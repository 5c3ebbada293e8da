internal import CFFmpegShim

/// A failed FFmpeg call (or a check Reel makes around one), with the call's name and FFmpeg's message.
///
/// EAGAIN and end-of-file are never reported through this type: they are normal results of the
/// send/receive loop (see `ReceiveResult`).
public struct MediaError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is, so callers can classify it without parsing messages.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case unreadableInput, unsupportedCodec, invalidArgument, noSpace, outputFailed, cancelled,
                limitExceeded, photoNotVideo, internalFailure
            // Internal: control flow between ReelMedia's own parts, never seen outside it.
            case pipelineStopped, moovReservationTooSmall
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        /// The input could not be opened, probed or demuxed (missing, corrupt, truncated, not media).
        public static let unreadableInput = Kind(.unreadableInput)
        /// No decoder or encoder exists for a stream, or the container cannot hold it.
        public static let unsupportedCodec = Kind(.unsupportedCodec)
        /// A parameter was refused by FFmpeg.
        public static let invalidArgument = Kind(.invalidArgument)
        /// The destination file system is full.
        public static let noSpace = Kind(.noSpace)
        /// Writing the output failed for another reason (permissions, I/O error).
        public static let outputFailed = Kind(.outputFailed)
        /// The operation was cancelled by its owner.
        public static let cancelled = Kind(.cancelled)
        /// The input exceeds a configured limit (size, duration, dimensions, streams).
        public static let limitExceeded = Kind(.limitExceeded)
        /// The input is a still photo (HEIC, JPEG, PNG, WebP, a one-frame GIF, AVIF), not a video:
        /// FFmpeg's demuxers refuse it, and the message names the command that renders it.
        public static let photoNotVideo = Kind(.photoNotVideo)
        /// Anything else: a bug or an out-of-memory condition.
        public static let internalFailure = Kind(.internalFailure)
        /// The other thread of a pipeline gave up (its own error is the cause): what a `BoundedQueue`
        /// throws once aborted.
        static let pipelineStopped = Kind(.pipelineStopped)
        /// A remux's moov did not fit the space reserved for it; the remux is redone without a
        /// reservation.
        static let moovReservationTooSmall = Kind(.moovReservationTooSmall)
        public var description: String { value.rawValue }
    }

    /// The classification of the failure.
    public let kind: Kind
    /// The FFmpeg function (or Reel step) that failed, e.g. `avformat_open_input`.
    public let call: String
    /// FFmpeg's return code, or 0 when the failure is Reel's own check.
    public let code: Int32
    /// A one-line, human-readable explanation.
    public let message: String

    public init(kind: Kind, call: String, code: Int32 = 0, message: String) {
        self.kind = kind
        self.call = call
        self.code = code
        self.message = message
    }

    /// Builds an error from an FFmpeg return code, taking FFmpeg's message for it.
    init(call: String, code: Int32, kind: Kind? = nil, context: String? = nil) {
        let text = MediaError.string(for: code)
        var kind = kind ?? .internalFailure
        if code == reel_averror(ENOSPC) || code == reel_averror(EDQUOT) {
            kind = .noSpace
        } else if code == reel_averror_exit() {
            kind = .cancelled
        }
        self.init(
            kind: kind, call: call, code: code,
            message: context.map { "\($0): \(text)" } ?? text)
    }

    /// FFmpeg's text for a return code (`av_strerror`).
    public static func string(for code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        buffer.withUnsafeMutableBufferPointer { reel_error_string(code, $0.baseAddress, $0.count) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { "\(message) (\(call))" }

    /// Whether the failure came from the moment rather than from the file: an I/O error, a device or
    /// network handle gone, a full disk, no memory or file descriptors left, an interrupted read.
    /// Reading the same file again may succeed.
    public var isTransientIO: Bool { MediaError.transientCodes.contains(code) }

    /// `AVERROR(e)` of the errno values `isTransientIO` accepts.
    static let transientCodes: Set<Int32> = Set(
        [EIO, ENXIO, ENOSPC, EDQUOT, ESTALE, ETIMEDOUT, ENOMEM, EMFILE, ENFILE, EINTR, EAGAIN].map(reel_averror))

    static func cancelled() -> MediaError {
        MediaError(kind: .cancelled, call: "cancel", message: "the export was cancelled")
    }

    static func pipelineStopped() -> MediaError {
        MediaError(kind: .pipelineStopped, call: "pipeline", message: "the pipeline stopped")
    }
}

/// Throws a `MediaError` when an FFmpeg call returned a negative code; returns the code otherwise.
@discardableResult
func check(
    _ code: Int32, _ call: String, kind: MediaError.Kind? = nil, context: String? = nil
) throws(MediaError) -> Int32 {
    if code < 0 { throw MediaError(call: call, code: code, kind: kind, context: context) }
    return code
}
