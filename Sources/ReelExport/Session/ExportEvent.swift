import Foundation

/// One line of an export's JSON report: what `reel export --json` prints, and what an isolated
/// export process tells the worker that started it. One definition, so the two sides cannot drift.
///
/// Each event encodes as one flat JSON object whose `event` field names its kind, with every key
/// present (`null` where a value is absent):
/// `{"event":"progress","status":"exporting","phase":"transcoding","progress":0.42,"frames":120,"fps":61.5,"etaSeconds":3.1}`,
/// `{"event":"completed","output":…,"preset":…,"type":…,"result":{…}}`,
/// `{"event":"failed","error":{"code":…,"message":…,"retryable":…}}`.
public enum ExportEvent: Sendable, Equatable, Codable {
    case progress(Progress)
    case completed(Completion)
    case failed(Failure)

    /// Where a running export stands.
    public struct Progress: Sendable, Equatable, Codable {
        public var status: ExportSession.Status
        public var phase: ExportSession.Phase
        /// 0…1, rounded to 0.001.
        public var progress: Double
        public var frames: Int
        /// Rounded to 0.1.
        public var fps: Double
        public var etaSeconds: Double?
        /// A ladder export's renditions, fractions rounded to 0.001 (`ExportSession.RenditionProgress`);
        /// nil, and no key, for other exports.
        public var renditions: [ExportSession.RenditionProgress]?

        public init(_ update: ExportSession.Progress) {
            status = update.status
            phase = update.phase
            progress = (update.fraction * 1000).rounded() / 1000
            frames = update.frames
            fps = (update.framesPerSecond * 10).rounded() / 10
            etaSeconds = update.secondsRemaining.map { ($0 * 10).rounded() / 10 }
            renditions = update.renditions.isEmpty ? nil : ExportSession.RenditionProgress.rounded(update.renditions)
        }

        /// Progress of work that is no export session's (a thumbnail set: `fraction` of its pictures
        /// made), exporting, phase `transcoding`.
        public init(fraction: Double, frames: Int) {
            status = .exporting
            phase = .transcoding
            progress = (fraction * 1000).rounded() / 1000
            self.frames = frames
            fps = 0
        }

        /// A transfer's progress: a remote asset's download (`downloading`) or an output's upload
        /// (`uploading`), `fraction` of its bytes.
        public init(transferring fraction: Double, phase: ExportSession.Phase) {
            status = .exporting
            self.phase = phase
            progress = (fraction * 1000).rounded() / 1000
            frames = 0
            fps = 0
        }

        private enum CodingKeys: String, CodingKey {
            case status, phase, progress, frames, fps, etaSeconds, renditions
        }

        /// Every key, `etaSeconds` as `null` until it can be estimated; `renditions` only for a ladder.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(status, forKey: .status)
            try c.encode(phase, forKey: .phase)
            try c.encode(progress, forKey: .progress)
            try c.encode(frames, forKey: .frames)
            try c.encode(fps, forKey: .fps)
            try c.encode(etaSeconds, forKey: .etaSeconds)
            try c.encodeIfPresent(renditions, forKey: .renditions)
        }
    }

    /// A finished export: where it went and what it holds.
    public struct Completion: Sendable, Equatable, Codable {
        public var output: String
        public var preset: String
        public var type: String
        public var result: ExportSession.Result
        /// What a `library:<id>` asset resolved to (absent for a path).
        public var source: LibrarySource? = nil
        /// The new asset's local identifier, when the output was saved to the library.
        public var savedLocalIdentifier: String? = nil
        /// A ladder's renditions, playlists and measured bit rates (type `hls`; the output is its folder).
        public var ladder: LadderResult? = nil
        /// A thumbnail set's pictures and files (type `thumbnails`; the output is its folder).
        public var thumbnails: ThumbnailSetExport.Result? = nil
        /// A cache job's counts and problems (type `cache`; the output is the job's report).
        public var cache: PhotoCacheResult? = nil
        /// Where the output was uploaded (`-o https://…`); `output` is then that URL without its query.
        public var upload: UploadResult? = nil

        public init(
            output: String, preset: String, type: String, result: ExportSession.Result, source: LibrarySource? = nil,
            savedLocalIdentifier: String? = nil, ladder: LadderResult? = nil
        ) {
            self.output = output
            self.preset = preset
            self.type = type
            self.result = result
            self.source = source
            self.savedLocalIdentifier = savedLocalIdentifier
            self.ladder = ladder
        }
    }

    /// A failed export.
    public struct Failure: Sendable, Equatable, Codable {
        public struct Reason: Sendable, Equatable, Codable {
            /// Why it failed (`unreadable-input`, …), as its stable string in JSON.
            public var code: ExportError.Code
            public var message: String
            /// Whether running the same export again could succeed.
            public var retryable: Bool
        }
        public var error: Reason

        public init(code: ExportError.Code, message: String, retryable: Bool) {
            error = Reason(code: code, message: message, retryable: retryable)
        }

        public init(_ error: ExportError) {
            self.init(code: error.code, message: error.message, retryable: error.isRetryable)
        }
    }

    private enum Kind: String, Codable { case progress, completed, failed }
    private enum CodingKeys: String, CodingKey { case event }

    public init(from decoder: any Decoder) throws {
        switch try decoder.container(keyedBy: CodingKeys.self).decode(Kind.self, forKey: .event) {
        case .progress: self = .progress(try Progress(from: decoder))
        case .completed: self = .completed(try Completion(from: decoder))
        case .failed: self = .failed(try Failure(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .progress(let value):
            try container.encode(Kind.progress, forKey: .event)
            try value.encode(to: encoder)
        case .completed(let value):
            try container.encode(Kind.completed, forKey: .event)
            try value.encode(to: encoder)
        case .failed(let value):
            try container.encode(Kind.failed, forKey: .event)
            try value.encode(to: encoder)
        }
    }

    /// The event as one line of JSON (sorted keys, no trailing newline).
    public var jsonLine: String {
        guard let data = try? JSONCoding.lineEncoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads one line; nil when it is not an event.
    public init?(jsonLine: some DataProtocol) {
        guard let event = try? JSONCoding.decoder.decode(ExportEvent.self, from: Data(jsonLine)) else { return nil }
        self = event
    }
}

/// The one JSON configuration Reel writes and reads with: sorted keys, unescaped slashes, ISO 8601
/// dates (status files, JSON lines, reports).
public enum JSONCoding {
    /// One object per line.
    public static var lineEncoder: JSONEncoder { encoder(pretty: false) }
    /// Indented, for files people read (status files, `--json` reports of one object).
    public static var prettyEncoder: JSONEncoder { encoder(pretty: true) }
    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    static func encoder(pretty: Bool) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
