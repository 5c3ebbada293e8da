import Foundation
import ReelBoxes
public import ReelMedia

extension ExportSession {
    /// What a completed export produced, read back from the file. Encoded as JSON, it carries every
    /// key, `null` where a value is absent (an audio-only file's `width`, `height`, `videoCodec`).
    public struct Result: Sendable, Codable, Equatable {
        /// Size of the file.
        public var bytes: Int64
        /// Media duration of the file, in seconds.
        public var durationSeconds: Double
        /// Picture size (nil for audio-only files).
        public var width: Int?
        public var height: Int?
        /// Codec names as FFmpeg gives them (`h264`, `hevc`, `aac`), nil without such a stream.
        public var videoCodec: String?
        public var audioCodec: String?
        /// Whether the moov atom precedes the media data (plays while downloading).
        public var networkOptimized: Bool
        /// Wall time of the export, in seconds.
        public var elapsedSeconds: Double
        /// How the file was made: `transcode`, `passthrough` or `smart-passthrough`.
        public var method: ExportMethod
        /// Why that method (for video presets: why the source was or was not copied as is).
        public var decision: String
        /// Seconds spent reading the file back to verify it (`OutputVerification`), part of
        /// `elapsedSeconds`.
        public var verificationSeconds: Double? = nil
        /// Encodes made: 2 when a size limit (`fileLengthLimit`) was missed by the first.
        public var encodingPasses: Int? = nil
        /// The part of the source exported (`ExportPlan.timeRange`: the requested range clamped to the
        /// asset), nil for all of it.
        public var timeRange: TimeRange? = nil
        /// The range asked for, when one was: it differs from `timeRange` when it ended past the asset.
        public var requestedTimeRange: TimeRange? = nil
        /// Which location and device keys the file's metadata holds, read back from it.
        public var metadata: WrittenMetadata? = nil
        /// The threads each stage was given (`StageThreads`, from `codecThreads`), for a re-encode;
        /// nil when nothing was encoded (a copy).
        public var threads: StageThreads? = nil
        /// Where the time went (`PhaseSeconds`); nil for ladders and thumbnail sets.
        public var phases: PhaseSeconds? = nil
        /// The poster written beside the video (`writesPoster`), nil without one.
        public var poster: Poster? = nil
        /// How the video met its quality target (`qualityTarget`), measured on the whole output;
        /// nil without a target.
        public var quality: Quality? = nil

        /// A quality target's outcome: the CRF the search chose, the samples' score it expected,
        /// and the score of the whole output, measured as it was encoded (its packets decoded beside
        /// the encoder and compared with the frames that went in: every frame, or every second or
        /// third at 2160p).
        public struct Quality: Sendable, Codable, Equatable {
            public var target: QualityTarget
            public var crf: Double
            /// The samples' score the search expected at `crf`.
            public var predictedScore: Double
            /// The whole output's score in the target's metric.
            public var score: Double?
            /// The whole output's figures (SSIM per plane and together, PSNR, frames compared).
            public var measured: QualityScore?
            /// Whether `score` is at the target or above it (within 0.002 SSIM or 0.2 dB PSNR, the
            /// search's sampling error); false also when the search could not meet it under the cap.
            public var met: Bool
            /// The search's one line (`ExportPlan.QualityPlan.Search.note`).
            public var note: String
            /// Wall time of the search.
            public var searchSeconds: Double

            public init(
                target: QualityTarget, crf: Double, predictedScore: Double, score: Double?, measured: QualityScore?,
                met: Bool, note: String, searchSeconds: Double
            ) {
                self.target = target
                self.crf = crf
                self.predictedScore = predictedScore
                self.score = score
                self.measured = measured
                self.met = met
                self.note = note
                self.searchSeconds = searchSeconds
            }
        }

        /// A poster as written: its file, size in bytes and pixels, and the moment of the export it shows.
        public struct Poster: Sendable, Codable, Equatable {
            public var path: String
            public var bytes: Int64
            public var width: Int?
            public var height: Int?
            /// Seconds into the export.
            public var seconds: Double

            public init(path: String, bytes: Int64, width: Int?, height: Int?, seconds: Double) {
                self.path = path
                self.bytes = bytes
                self.width = width
                self.height = height
                self.seconds = seconds
            }
        }

        /// Where an export's wall time went, in seconds. `probe` + `encode` + `flush` + `verify` +
        /// `publish` is about `elapsedSeconds` (the rest is planning); `startup` and the asset's own
        /// probe come before the session starts and are added by whoever ran it (a queue's runner).
        public struct PhaseSeconds: Sendable, Codable, Equatable {
            /// An isolated job's export process: from its start (the kernel's record of it) to
            /// reading the input; nil in the worker's own process.
            public var startup: Double?
            /// Opening and probing the input: the asset's probe (when a runner measured it) and the
            /// pipeline's own opening of the file.
            public var probe: Double
            /// Reading, decoding, scaling and encoding up to the end of the input.
            public var encode: Double
            /// Draining the encoder (the frames its lookahead held) and writing the trailer.
            public var flush: Double
            /// Reading the file back to verify it (`verificationSeconds`).
            public var verify: Double
            /// The publish gate, the rename into place with its fsyncs, and the summary read back.
            public var publish: Double

            public init(
                startup: Double? = nil, probe: Double, encode: Double, flush: Double, verify: Double, publish: Double
            ) {
                self.startup = startup
                self.probe = probe
                self.encode = encode
                self.flush = flush
                self.verify = verify
                self.publish = publish
            }
        }

        /// The location and device keys found in an output's container metadata.
        public struct WrittenMetadata: Sendable, Codable, Equatable {
            /// Keys that say where the recording was made (`MetadataPolicy.isLocationKey`), sorted.
            public var location: [String]
            /// Keys that name the device or its software (`MetadataPolicy.isDeviceKey`), sorted.
            public var device: [String]
            /// Keys that tie the file to a library, device or person (`MetadataPolicy.isIdentifierKey`),
            /// sorted.
            public var identifiers: [String]

            public init(_ metadata: [String: String]) {
                location = metadata.keys.filter(MetadataPolicy.isLocationKey).sorted()
                device = metadata.keys.filter(MetadataPolicy.isDeviceKey).sorted()
                identifiers = metadata.keys.filter(MetadataPolicy.isIdentifierKey).sorted()
            }

            private enum CodingKeys: String, CodingKey { case location, device, identifiers }

            /// Results written before `identifiers` existed read with an empty list.
            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                location = try c.decode([String].self, forKey: .location)
                device = try c.decode([String].self, forKey: .device)
                identifiers = try c.decodeIfPresent([String].self, forKey: .identifiers) ?? []
            }
        }

        private enum CodingKeys: String, CodingKey {
            case bytes, durationSeconds, width, height, videoCodec, audioCodec, networkOptimized, elapsedSeconds
            case method, decision, verificationSeconds, encodingPasses, timeRange, requestedTimeRange, metadata
            case threads, phases, poster, quality
        }

        public init(
            bytes: Int64, durationSeconds: Double, width: Int?, height: Int?, videoCodec: String?,
            audioCodec: String?, networkOptimized: Bool, elapsedSeconds: Double, method: ExportMethod,
            decision: String, verificationSeconds: Double? = nil, encodingPasses: Int? = nil,
            metadata: WrittenMetadata? = nil
        ) {
            self.bytes = bytes
            self.durationSeconds = durationSeconds
            self.width = width
            self.height = height
            self.videoCodec = videoCodec
            self.audioCodec = audioCodec
            self.networkOptimized = networkOptimized
            self.elapsedSeconds = elapsedSeconds
            self.method = method
            self.decision = decision
            self.verificationSeconds = verificationSeconds
            self.encodingPasses = encodingPasses
            self.metadata = metadata
        }

        public init(from decoder: any Decoder) throws {
            try self.init(from: decoder, methodOtherwise: nil)
        }

        /// Reads a result whose `method` may be absent or a word no `ExportMethod` has, taking
        /// `fallback` then (and an empty `decision` when none is given): a job queue's result of an
        /// output it adopted (`adopted`), and status files written before results had a method.
        package init(from decoder: any Decoder, methodOtherwise fallback: ExportMethod?) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            bytes = try c.decode(Int64.self, forKey: .bytes)
            durationSeconds = try c.decode(Double.self, forKey: .durationSeconds)
            width = try c.decodeIfPresent(Int.self, forKey: .width)
            height = try c.decodeIfPresent(Int.self, forKey: .height)
            videoCodec = try c.decodeIfPresent(String.self, forKey: .videoCodec)
            audioCodec = try c.decodeIfPresent(String.self, forKey: .audioCodec)
            networkOptimized = try c.decode(Bool.self, forKey: .networkOptimized)
            elapsedSeconds = try c.decode(Double.self, forKey: .elapsedSeconds)
            if let fallback {
                method = (try? c.decodeIfPresent(ExportMethod.self, forKey: .method)) ?? fallback
                decision = try c.decodeIfPresent(String.self, forKey: .decision) ?? ""
            } else {
                method = try c.decode(ExportMethod.self, forKey: .method)
                decision = try c.decode(String.self, forKey: .decision)
            }
            verificationSeconds = try c.decodeIfPresent(Double.self, forKey: .verificationSeconds)
            encodingPasses = try c.decodeIfPresent(Int.self, forKey: .encodingPasses)
            timeRange = try c.decodeIfPresent(TimeRange.self, forKey: .timeRange)
            requestedTimeRange = try c.decodeIfPresent(TimeRange.self, forKey: .requestedTimeRange)
            metadata = try c.decodeIfPresent(WrittenMetadata.self, forKey: .metadata)
            threads = try c.decodeIfPresent(StageThreads.self, forKey: .threads)
            phases = try c.decodeIfPresent(PhaseSeconds.self, forKey: .phases)
            poster = try c.decodeIfPresent(Poster.self, forKey: .poster)
            quality = try c.decodeIfPresent(Quality.self, forKey: .quality)
        }

        /// Every key, absent values as `null`: a program reading the JSON finds the same keys in
        /// every result.
        public func encode(to encoder: any Encoder) throws {
            try encode(to: encoder, method: method.rawValue)
        }

        /// Encodes the result with `method` written in place of its own (a job queue's `adopted`).
        package func encode(to encoder: any Encoder, method: String) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(durationSeconds, forKey: .durationSeconds)
            try c.encode(width, forKey: .width)
            try c.encode(height, forKey: .height)
            try c.encode(videoCodec, forKey: .videoCodec)
            try c.encode(audioCodec, forKey: .audioCodec)
            try c.encode(networkOptimized, forKey: .networkOptimized)
            try c.encode(elapsedSeconds, forKey: .elapsedSeconds)
            try c.encode(method, forKey: .method)
            try c.encode(decision, forKey: .decision)
            try c.encode(verificationSeconds, forKey: .verificationSeconds)
            try c.encode(encodingPasses, forKey: .encodingPasses)
            try c.encode(timeRange, forKey: .timeRange)
            try c.encode(requestedTimeRange, forKey: .requestedTimeRange)
            try c.encode(metadata, forKey: .metadata)
            try c.encode(threads, forKey: .threads)
            try c.encode(phases, forKey: .phases)
            try c.encode(poster, forKey: .poster)
            try c.encode(quality, forKey: .quality)
        }
    }

    /// Reads the finished file back to report what it holds. A file that cannot be read is
    /// `output-invalid`, unless the cause was I/O (`OutputVerification.unreadable`); the caller removes it.
    static func summarize(_ url: URL, started: ContinuousClock.Instant) throws(ExportError) -> Result {
        let info: MediaInfo
        do {
            info = try MediaProbe.probeHeader(path: url.path)
        } catch {
            throw OutputVerification.unreadable(error)
        }
        let video = info.bestVideoStream
        let audio = info.bestAudioStream
        return Result(
            bytes: info.fileBytes, durationSeconds: info.durationSeconds, width: video?.displaySize?.width,
            height: video?.displaySize?.height, videoCodec: video?.codec, audioCodec: audio?.codec,
            networkOptimized: (try? MovieAtoms.moovPrecedesMdat(url)) ?? false,
            elapsedSeconds: (ContinuousClock.now - started) / .seconds(1), method: .transcode, decision: "",
            metadata: Result.WrittenMetadata(info.metadata))
    }
}
