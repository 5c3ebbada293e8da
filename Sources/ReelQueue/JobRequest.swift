import Foundation
import ReelExport

/// One job as a client asks for it: a manifest line, or `reel submit`'s arguments. Names are as the
/// user wrote them; `resolve` checks everything and turns the request into the `JobSpec` a worker runs.
///
/// As a manifest line: `{"asset": "/media/a.mov", "preset": "960x540", "outputDir": "/srv/out"}`; only
/// `asset` and `preset` are required, and a key the request does not know is an error.
public struct JobRequest: Sendable, Codable, Equatable {
    public var asset: String
    public var preset: String
    /// `mp4`, `mov`, `m4v`, `m4a` or an Apple type identifier; default from `output`'s extension, else
    /// the preset's.
    public var type: String?
    /// The output file; without it, `<asset>.<preset>.<job id>.<type>` in `outputDir`.
    public var output: String?
    /// Default: the working directory.
    public var outputDir: String?
    public var priority: Int?
    /// Idempotency key, 1 to 100 bytes.
    public var key: String?
    /// `start-end`, in seconds or `[hh:]mm:ss`.
    public var timeRange: String?
    /// `keep`, `sharing` or `strip`.
    public var metadata: String?
    /// 1 to 20 (default 3).
    public var maxAttempts: Int?
    public var forceTranscode: Bool?
    /// Replace an existing output file.
    public var overwrite: Bool?
    /// Keep `output`'s extension even though it is not the type's (needs `type`).
    public var forceExtension: Bool?
    /// The largest file to write: `16MB`, `8MiB`, `500KB` or bytes (`SizeLimit.parseBytes`).
    public var maxSize: String?
    /// What transparent pixels of an animated GIF or APNG become: `#rrggbb`, `black` (default) or `white`.
    public var background: String?

    public init(
        asset: String, preset: String, type: String? = nil, output: String? = nil, outputDir: String? = nil,
        priority: Int? = nil, key: String? = nil, timeRange: String? = nil, metadata: String? = nil,
        maxAttempts: Int? = nil, forceTranscode: Bool? = nil, overwrite: Bool? = nil, forceExtension: Bool? = nil,
        maxSize: String? = nil, background: String? = nil
    ) {
        self.background = background
        self.maxSize = maxSize
        self.asset = asset
        self.preset = preset
        self.type = type
        self.output = output
        self.outputDir = outputDir
        self.priority = priority
        self.key = key
        self.timeRange = timeRange
        self.metadata = metadata
        self.maxAttempts = maxAttempts
        self.forceTranscode = forceTranscode
        self.overwrite = overwrite
        self.forceExtension = forceExtension
    }

    /// How much `resolve` checks of the asset.
    public enum Checks: Sendable {
        /// That it is a readable regular file inside the allowed roots and under the size limit.
        case access
        /// Also what `reel export` checks before any work, from a header-only probe: that it is media
        /// Reel accepts, within the limits, and that the preset, output type and time range suit it.
        case plan
    }

    /// Checks the request and returns the spec to queue. Relative paths are taken from
    /// `workingDirectory`. Throws the `ExportError` that `reel export` would give for the same export
    /// (`unknown-preset`, `invalid-argument`, `unreadable-input`, `incompatible-preset`, …).
    public func resolve(
        presets: PresetLibrary, limits: InputLimits, workingDirectory: URL, checks: Checks = .plan
    ) throws(ExportError) -> JobSpec {
        let preset = try presets.preset(named: self.preset)
        func absolute(_ path: String) -> URL {
            (path.hasPrefix("/") ? URL(fileURLWithPath: path) : workingDirectory.appendingPathComponent(path))
                .standardizedFileURL
        }
        let assetURL = absolute(asset)
        let outputType = try OutputType.infer(
            explicit: type, outputPath: output, preset: preset, forceExtension: forceExtension ?? false)
        var range: TimeRange?
        if let text = timeRange {
            guard let parsed = TimeRange(parsing: text) else {
                throw ExportError(
                    .invalidArgument,
                    "cannot read the time range '\(text)'; write start-end, e.g. 5-12.5 or 00:01:00-00:02:30")
            }
            range = parsed
        }
        guard let metadataPolicy = MetadataPolicy(rawValue: metadata ?? MetadataPolicy.keep.rawValue) else {
            throw ExportError(
                .invalidArgument, "unknown metadata policy '\(metadata ?? "")'; use keep, sharing or strip")
        }
        var limit: Int64?
        if let maxSize {
            guard let bytes = SizeLimit.parseBytes(maxSize) else {
                throw ExportError(.invalidArgument, "cannot read the size '\(maxSize)'; write e.g. 16MB, 8MiB or 500KB")
            }
            limit = bytes
        }
        var colour = RGBColor.black
        if let background {
            guard let parsed = RGBColor(parsing: background) else {
                throw ExportError(.invalidArgument, RGBColor.unreadable(background))
            }
            colour = parsed
        }
        if let key { try JobSpec.checkKey(key) }
        let attempts = maxAttempts ?? JobSpec.defaultAttempts
        guard JobSpec.attemptLimits.contains(attempts) else {
            throw ExportError(
                .invalidArgument,
                "max attempts must be between \(JobSpec.attemptLimits.lowerBound) and \(JobSpec.attemptLimits.upperBound), not \(attempts)"
            )
        }
        let outputURL: URL
        if let output {
            if outputDir != nil { throw ExportError(.invalidArgument, "give output or outputDir, not both") }
            outputURL = absolute(output)
        } else {
            let folder = outputDir.map(absolute) ?? workingDirectory.standardizedFileURL
            outputURL = folder.appendingPathComponent(
                OutputType.defaultFileName(asset: assetURL, preset: preset, type: outputType, tag: "{id}"))
        }
        switch checks {
        case .access:
            try Asset.checkAccess(assetURL, limits: limits)
        case .plan:
            let probed = try Asset.header(of: assetURL, limits: limits)
            _ = try ExportPlanner.decide(
                asset: probed, preset: preset, type: outputType, timeRange: range, metadata: metadataPolicy,
                optimizeForNetwork: true, forceTranscode: forceTranscode ?? false, fileLengthLimit: limit,
                background: colour)
        }
        let folder = outputURL.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw ExportError(.outputFailed, "the output folder \(folder.path) does not exist", retryable: false)
        }
        if outputURL.resolvingSymlinksInPath().path == assetURL.resolvingSymlinksInPath().path {
            throw ExportError(.invalidArgument, "the output would replace the asset itself")
        }
        if overwrite != true, FileManager.default.fileExists(atPath: outputURL.path) {
            throw ExportError(.outputExists, "\(outputURL.path) already exists (submit with --overwrite to replace it)")
        }
        return JobSpec(
            asset: assetURL.path, preset: preset.name, outputType: outputType, output: outputURL.path,
            priority: priority ?? 0, key: key, timeRange: range, metadata: metadataPolicy, maxAttempts: attempts,
            forceTranscode: forceTranscode ?? false, overwrite: overwrite ?? false, fileLengthLimit: limit,
            background: colour)
    }

    /// The keys a manifest line may have.
    static let knownKeys = StrictKeys.propertyNames(of: JobRequest(asset: "", preset: ""))
}

extension JobSpec {
    /// Attempts a job may be given (`maxAttempts`, `--max-attempts`).
    public static let attemptLimits = 1...20
    public static let defaultAttempts = 3

    /// Whether `key` is a valid idempotency key: 1 to 100 bytes of UTF-8.
    public static func isValidKey(_ key: String) -> Bool { (1...100).contains(key.utf8.count) }

    /// Throws `invalid-argument` unless `key` is a valid idempotency key.
    public static func checkKey(_ key: String) throws(ExportError) {
        guard isValidKey(key) else {
            throw ExportError(.invalidArgument, "an idempotency key must be 1 to 100 bytes, not \(key.utf8.count)")
        }
    }
}

/// A JSON-lines file of job requests: `reel submit --manifest`.
public enum Manifest {
    /// Reads every line (blank lines and lines starting with `#` are skipped) and resolves it. Nothing
    /// is returned unless every line is good: otherwise one `ExportError` names every bad line by number
    /// and what is wrong with it, with the first bad line's code.
    public static func resolve(
        _ data: Data, presets: PresetLibrary, limits: InputLimits, workingDirectory: URL,
        checks: JobRequest.Checks = .plan
    ) throws(ExportError) -> [JobSpec] {
        var specs: [JobSpec] = []
        var problems: [(line: Int, error: ExportError)] = []
        for (line, result) in requests(data) {
            do throws(ExportError) {
                specs.append(
                    try result.get().resolve(
                        presets: presets, limits: limits, workingDirectory: workingDirectory, checks: checks))
            } catch {
                problems.append((line, error))
            }
        }
        if let first = problems.first {
            throw ExportError(
                first.error.code,
                "manifest rejected, nothing was queued: "
                    + problems.map { "line \($0.line): \($0.error.message)" }.joined(separator: "; "))
        }
        if specs.isEmpty { throw ExportError(.invalidArgument, "the manifest has no jobs") }
        return specs
    }

    /// Each job line (numbered from 1) as a request, or why it is not one.
    public static func requests(_ data: Data) -> [(line: Int, request: Result<JobRequest, ExportError>)] {
        let decoder = JSONDecoder()
        var lines: [(Int, Result<JobRequest, ExportError>)] = []
        for (number, raw) in String(decoding: data, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        ).enumerated() {
            let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty || text.hasPrefix("#") { continue }
            lines.append((number + 1, Result { () throws(ExportError) in try request(text, decoder: decoder) }))
        }
        return lines
    }

    static func request(_ text: String, decoder: JSONDecoder) throws(ExportError) -> JobRequest {
        let data = Data(text.utf8)
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ExportError(.invalidArgument, "not a JSON object")
        }
        let unknown = StrictKeys.unknown(in: object, known: JobRequest.knownKeys)
        if !unknown.isEmpty { throw ExportError(.invalidArgument, unknown.joined(separator: ", ")) }
        do {
            return try decoder.decode(JobRequest.self, from: data)
        } catch DecodingError.keyNotFound(let key, _) {
            throw ExportError(.invalidArgument, "missing \"\(key.stringValue)\"")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            throw ExportError(
                .invalidArgument,
                "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type")
        } catch {
            throw ExportError(.invalidArgument, "not a valid job")
        }
    }
}
