import Foundation
internal import ReelMedia

/// Why an export (or the set-up of one) failed, in words a person can act on.
///
/// A struct over a growing set of codes, so new codes can be added without breaking callers.
public struct ExportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable reason (`unreadable-input`, `incompatible-preset`, …).
    ///
    /// Every code is declared here and nowhere else spelled out: the documentation's list of codes
    /// is made from these declarations and their comments, and a test fails when a code's string
    /// appears anywhere else in the sources (`DocumentationTests`).
    public struct Code: Hashable, Sendable, CustomStringConvertible, Codable, CaseIterable {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        /// Missing, not a regular file, corrupt, truncated or not media.
        public static let unreadableInput = Code("unreadable-input")
        /// No decoder for the source, or the output type cannot hold a stream.
        public static let unsupportedCodec = Code("unsupported-codec")
        /// The preset, output type and asset do not go together.
        public static let incompatiblePreset = Code("incompatible-preset")
        /// A video preset was given an asset without video, and audio-only output was not allowed
        /// (`ExportSession.allowsAudioOnly`, `--allow-audio-only`).
        public static let noVideo = Code("no-video")
        /// The input exceeds a configured limit.
        public static let limitExceeded = Code("limit-exceeded")
        /// The input is a still photo (HEIC, JPEG, PNG, WebP, AVIF, a one-frame GIF), not a video: a
        /// video preset cannot export it, and the message names the command that renders it. Never
        /// retryable.
        public static let photoNotVideo = Code("photo-not-video")
        /// The destination file system is full.
        public static let noSpace = Code("no-space")
        /// The output could not be written (permissions, missing folder, existing file).
        public static let outputFailed = Code("output-failed")
        /// The finished file failed verification (missing stream, wrong duration, undecodable, truncated)
        /// and was removed.
        public static let outputInvalid = Code("output-invalid")
        /// Cancelled by its owner.
        public static let cancelled = Code("cancelled")
        /// Stopped making progress and was stopped by the watchdog.
        public static let stalled = Code("stalled")
        /// The output file exists and replacing it was not asked for.
        public static let outputExists = Code("output-exists")
        /// No preset of that name.
        public static let unknownPreset = Code("unknown-preset")
        /// A preset file could not be read.
        public static let invalidPreset = Code("invalid-preset")
        /// A setting of the export is invalid (time range, output path).
        public static let invalidArgument = Code("invalid-argument")
        /// A `library:<id>` asset the library does not know, or a resource it does not have.
        public static let unknownAsset = Code("unknown-asset")
        /// The file a `library:<id>` asset resolved to changed or vanished since the library indexed it
        /// (or since the job was submitted): the export would not be of what was asked for. Never
        /// retryable; rescan the library and submit again.
        public static let assetChanged = Code("asset-changed")
        /// Saving the finished output back to the library failed (the output is in place; another
        /// attempt imports it without exporting again).
        public static let saveFailed = Code("save-failed")
        /// The asset is an http(s) URL and network access was not allowed (`--network-access`,
        /// `"networkAccessAllowed"`): PhotoKit's in-cloud result. Never retryable.
        public static let networkAccessRequired = Code("network-access-required")
        /// The network policy refuses the URL: plain http without `--allow-http`, an address that is
        /// loopback, private, link-local or the cloud metadata service (on any redirect) without
        /// `--allow-private-network`, too many redirects, credentials in the URL. Never retryable.
        public static let urlRefused = Code("url-refused")
        /// The download did not finish: the server answered with an error status, the connection failed
        /// or timed out, or the body ended early. What was received is kept, and the next attempt
        /// resumes from it.
        public static let downloadFailed = Code("download-failed")
        /// The downloaded bytes are not the ones the job named (`sha256`, `size`): checked before any
        /// decoding, and the bytes are removed. Never retryable.
        public static let checksumMismatch = Code("checksum-mismatch")
        /// The verified output could not be uploaded to its URL (`-o https://…`, a presigned PUT): the
        /// server refused it or the connection failed after the attempts. The output is kept locally,
        /// and the message says where.
        public static let uploadFailed = Code("upload-failed")
        /// A bug or an unexpected failure inside Reel or FFmpeg.
        public static let `internal` = Code("internal")

        /// Every code, in the order the documentation lists them.
        public static let allCases: [Code] = [
            .unreadableInput, .unsupportedCodec, .incompatiblePreset, .noVideo, .limitExceeded, .photoNotVideo,
            .noSpace, .outputFailed, .outputInvalid, .cancelled, .stalled, .outputExists, .unknownPreset,
            .invalidPreset, .invalidArgument, .unknownAsset, .assetChanged, .saveFailed, .networkAccessRequired,
            .urlRefused, .downloadFailed, .checksumMismatch, .uploadFailed, .internal,
        ]

        /// Whether a failure with this code may pass when the same export runs again, unless its cause
        /// says otherwise (`ExportError.init`): a full disk, an I/O error, a stall, an internal failure, a
        /// save back to the library.
        public var isRetryableByDefault: Bool {
            [.noSpace, .outputFailed, .stalled, .internal, .saveFailed, .downloadFailed, .uploadFailed].contains(self)
        }

        public var description: String { rawValue }
    }

    public let code: Code
    /// One line, saying what happened and, where possible, what to do.
    public let message: String
    /// Whether running the same export again could succeed: a full disk, an I/O error, a stall or an
    /// internal failure may pass; bad input, a missing output folder or a permission never does.
    public let isRetryable: Bool

    /// `retryable` defaults to what the code implies (`no-space`, `output-failed`, `stalled`,
    /// `save-failed` and `internal` are retryable); pass it when the cause says otherwise.
    public init(_ code: Code, _ message: String, retryable: Bool? = nil) {
        self.code = code
        self.message = message
        isRetryable = retryable ?? code.isRetryableByDefault
    }

    public var description: String { message }

    init(_ error: MediaError) {
        let code: Code
        switch error.kind {
        case .unreadableInput: code = .unreadableInput
        case .unsupportedCodec: code = .unsupportedCodec
        case .noSpace: code = .noSpace
        case .outputFailed: code = .outputFailed
        case .cancelled: code = .cancelled
        case .limitExceeded: code = .limitExceeded
        case .photoNotVideo: code = .photoNotVideo
        case .invalidArgument: code = .invalidArgument
        default: code = .internal
        }
        // Writing failed because of where, not when: no permission, a read-only or missing folder.
        // Running it again changes nothing until someone fixes the destination.
        let permanent = [EACCES, EPERM, EROFS, ENOENT, ENOTDIR, EISDIR].map { -$0 }
        let retryable = code == .outputFailed && permanent.contains(error.code) ? false : nil
        self.init(code, error.message, retryable: retryable)
    }
}
