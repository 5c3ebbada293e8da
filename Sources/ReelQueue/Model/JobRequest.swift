import Foundation
import ReelExport

/// One job as a client asks for it: a manifest line, or `reel submit`'s arguments. Names are as the
/// user wrote them; `resolve` checks everything and turns the request into the `JobSpec` a worker runs.
///
/// The export's own options are an `ExportRequest` (the same names and checks as `reel export`); the
/// rest say where the output goes and how the queue treats the job. As a manifest line, flat:
/// `{"asset": "/media/a.mov", "preset": "960x540", "outputDir": "/srv/out", "timeRange": "0-5"}`;
/// only `asset` and `preset` are required, and a key the request does not know is an error.
public struct JobRequest: Sendable, Codable, Equatable {
    public var asset: String
    /// The export's options: preset, type, output, time range, metadata, …
    public var export: ExportRequest
    /// Default: the working directory.
    public var outputDir: String?
    public var priority: Int?
    /// Idempotency key, 1 to 100 bytes.
    public var key: String?
    /// 1 to 20 (default 3).
    public var maxAttempts: Int?
    /// What a `library:<id>` asset resolved to (`resolveLibraryAsset(in:)`); never read from a
    /// manifest line.
    public var librarySource: LibrarySource?
    /// A set of thumbnails instead of an export (`reel thumbnail --submit`, a manifest line's
    /// `thumbnails` object): the export's options then take only `output` and `overwrite`.
    public var thumbnails: ThumbnailSetRequest?
    /// Library photos to cache instead of an export (`reel library cache --submit`, a manifest line's
    /// `cache` object, which needs no `asset`): the export's options then take none.
    public var cache: PhotoCacheRequest?
    /// For an asset named by URL: the download is allowed (PhotoKit's `isNetworkAccessAllowed`);
    /// without it such a request is refused with `network-access-required`.
    public var networkAccessAllowed: Bool?
    /// For an asset named by URL: the SHA-256 and size its bytes must have, checked before decoding.
    public var sha256: String?
    public var size: Int64?

    public init(
        asset: String, export: ExportRequest, outputDir: String? = nil, priority: Int? = nil, key: String? = nil,
        maxAttempts: Int? = nil
    ) {
        self.asset = asset
        self.export = export
        self.outputDir = outputDir
        self.priority = priority
        self.key = key
        self.maxAttempts = maxAttempts
    }

    public init(
        asset: String, preset: String, type: String? = nil, output: String? = nil, outputDir: String? = nil,
        priority: Int? = nil, key: String? = nil, timeRange: String? = nil, metadata: String? = nil,
        maxAttempts: Int? = nil, forceTranscode: Bool? = nil, overwrite: Bool? = nil, forceExtension: Bool? = nil,
        maxSize: String? = nil, background: String? = nil, allowAudioOnly: Bool? = nil
    ) {
        self.init(
            asset: asset,
            export: ExportRequest(
                preset: preset, type: type, output: output, forceExtension: forceExtension, timeRange: timeRange,
                metadata: metadata, forceTranscode: forceTranscode, allowAudioOnly: allowAudioOnly, maxSize: maxSize,
                background: background, overwrite: overwrite),
            outputDir: outputDir, priority: priority, key: key, maxAttempts: maxAttempts)
    }

    private enum CodingKeys: String, CodingKey {
        case asset, outputDir, priority, key, maxAttempts, thumbnails, cache, networkAccessAllowed, sha256, size
    }

    /// Reads the flat form: the job's own keys and the export's side by side.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        cache = try c.decodeIfPresent(PhotoCacheRequest.self, forKey: .cache)
        // A cache job's photos are the worker's library's: its asset only names the library.
        asset =
            try cache != nil
            ? c.decodeIfPresent(String.self, forKey: .asset) ?? "library" : c.decode(String.self, forKey: .asset)
        export = try ExportRequest(from: decoder)
        outputDir = try c.decodeIfPresent(String.self, forKey: .outputDir)
        priority = try c.decodeIfPresent(Int.self, forKey: .priority)
        key = try c.decodeIfPresent(String.self, forKey: .key)
        maxAttempts = try c.decodeIfPresent(Int.self, forKey: .maxAttempts)
        thumbnails = try c.decodeIfPresent(ThumbnailSetRequest.self, forKey: .thumbnails)
        networkAccessAllowed = try c.decodeIfPresent(Bool.self, forKey: .networkAccessAllowed)
        sha256 = try c.decodeIfPresent(String.self, forKey: .sha256)
        size = try c.decodeIfPresent(Int64.self, forKey: .size)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(asset, forKey: .asset)
        try export.encode(to: encoder)
        try c.encodeIfPresent(outputDir, forKey: .outputDir)
        try c.encodeIfPresent(priority, forKey: .priority)
        try c.encodeIfPresent(key, forKey: .key)
        try c.encodeIfPresent(maxAttempts, forKey: .maxAttempts)
        try c.encodeIfPresent(thumbnails, forKey: .thumbnails)
        try c.encodeIfPresent(cache, forKey: .cache)
        try c.encodeIfPresent(networkAccessAllowed, forKey: .networkAccessAllowed)
        try c.encodeIfPresent(sha256, forKey: .sha256)
        try c.encodeIfPresent(size, forKey: .size)
    }

    /// How much `resolve` checks of the asset.
    public enum Checks: Sendable {
        /// That it is a readable regular file inside the allowed roots and under the size limit.
        case access
        /// Also what `reel export` checks before any work, from a header-only probe: that it is media
        /// Reel accepts, within the limits, and that the preset, output type and time range suit it.
        case plan
    }

    /// For a `library:<id>` asset: asks `library` what it names (with `export.resource`) and keeps
    /// the answer for `resolve`. Nothing for a path. Throws what `AssetLibrary.resolve` throws
    /// (`unknown-asset`, `asset-changed`), or `invalid-argument` when there is no library.
    public mutating func resolveLibraryAsset(in library: (any AssetLibrary)?) async throws(ExportError) {
        try export.checkResource(asset: asset)
        guard let identifier = LibraryReference.identifier(in: asset) else { return }
        guard let library else {
            throw ExportError(.invalidArgument, "\(asset) names a library asset, and no library is open")
        }
        librarySource = try await library.resolve(identifier, resource: export.resource)
    }

    /// Checks the request and returns the spec to queue. Relative paths are taken from
    /// `workingDirectory`. A request that does not choose a metadata policy gets `metadataDefault`,
    /// and without one, the worker's (`JobSpec.metadataChosen`). Throws the `ExportError` that `reel
    /// export` would give for the same export (`unknown-preset`, `invalid-argument`,
    /// `unreadable-input`, `incompatible-preset`, `no-video`, `output-exists`, …), in the same words.
    public func resolve(
        presets: PresetLibrary, limits: InputLimits, workingDirectory: URL, checks: Checks = .plan,
        metadataDefault: MetadataPolicy? = nil
    ) throws(ExportError) -> JobSpec {
        if let cache { return try resolve(cache, workingDirectory: workingDirectory) }
        if let thumbnails {
            return try resolve(thumbnails, limits: limits, workingDirectory: workingDirectory, checks: checks)
        }
        let settings = try export.resolve(presets: presets)
        try export.checkResource(asset: asset)
        let remote = try checkedRemote()
        if remote != nil && settings.saveToLibrary {
            throw ExportError(.invalidArgument, "\(remote?.url ?? ""): saving to the library is for local assets")
        }
        func absolute(_ path: String) -> URL { JobRequest.absolute(path, in: workingDirectory) }
        if LibraryReference.identifier(in: asset) != nil, librarySource == nil {
            throw ExportError(.invalidArgument, "\(asset) names a library asset, and no library resolved it")
        }
        let source = LibraryReference.identifier(in: asset) != nil ? librarySource : nil
        // A URL's output is named after its file name (as `reel export <url>` names it).
        let assetURL =
            source.map { URL(fileURLWithPath: $0.path) } ?? remote.map { absolute($0.fileName) } ?? absolute(asset)
        if let key { try JobSpec.checkKey(key) }
        let attempts = try JobSpec.checkedAttempts(maxAttempts)
        let outputURL: URL
        if let output = export.output {
            if outputDir != nil { throw ExportError(.invalidArgument, "give output or outputDir, not both") }
            // A ladder's output is a folder: `-o out/` names `out`.
            outputURL = absolute(
                settings.ladder != nil && output.count > 1 && output.hasSuffix("/") ? String(output.dropLast()) : output
            )
        } else if let ladder = settings.ladder {
            // As `reel export` names a ladder's folder (`OutputNaming`), with the job's id.
            let folder = outputDir.map(absolute) ?? workingDirectory.standardizedFileURL
            let named = source.map { assetURL.deletingLastPathComponent().appendingPathComponent($0.outputStem) }
            outputURL = folder.appendingPathComponent(
                OutputNaming.ladderFolder(
                    asset: named ?? assetURL, ladder: ladder, preset: settings.preset, tag: "{id}"))
        } else {
            let folder = outputDir.map(absolute) ?? workingDirectory.standardizedFileURL
            // A library asset's output is named after the resource's own name (a Motion Photo's
            // `PXL_….MP4`), not after the file holding it.
            let named = source.map { assetURL.deletingLastPathComponent().appendingPathComponent($0.outputStem) }
            outputURL = folder.appendingPathComponent(
                OutputNaming.file(
                    asset: named ?? assetURL, preset: settings.preset, type: settings.outputType, tag: "{id}"))
        }
        let metadata = settings.metadata ?? metadataDefault
        // The library's answer is checked against the file as it is now, before the file is read.
        try source?.checkUnchanged()
        // A URL's bytes are the worker's to download and check; a file's are checked now.
        switch remote == nil ? checks : nil {
        case nil:
            break
        case .access:
            try Asset.checkAccess(assetURL, limits: limits)
        case .plan:
            let probed = try Asset.header(of: assetURL, byteRange: source?.byteRange?.range, limits: limits)
            if let ladder = settings.ladder {
                try ladder.check(
                    asset: probed, preset: settings.preset, timeRange: settings.timeRange,
                    background: settings.background, limits: limits)
            } else {
                _ = try ExportPlanner.decide(asset: probed, settings: settings, metadataDefault: metadata ?? .keep)
            }
        }
        try OutputPublisher.check(destination: outputURL, asset: assetURL, overwrite: settings.overwrite)
        if settings.poster {
            try PosterOutput.check(video: outputURL, asset: assetURL, overwrite: settings.overwrite)
        }
        var chosen = settings
        chosen.metadata = metadata
        var spec = JobSpec(
            settings: chosen, asset: remote?.url ?? assetURL.path, output: outputURL.path, priority: priority ?? 0,
            key: key, maxAttempts: attempts, library: source)
        spec.remote = remote
        spec.networkAccessAllowed = remote != nil
        return spec
    }

    /// The asset named by URL, checked (`RemoteAsset`), or nil for a path or a library asset; refused
    /// with `network-access-required` unless the request allows the download, and the keys that only
    /// go with a URL refused beside a path.
    func checkedRemote() throws(ExportError) -> RemoteAsset? {
        guard RemoteURL.isRemote(asset) else {
            if sha256 != nil || size != nil || networkAccessAllowed != nil {
                throw ExportError(
                    .invalidArgument, "sha256, size and networkAccessAllowed go with an asset named by URL")
            }
            return nil
        }
        let remote = try RemoteAsset(asset, sha256: sha256, size: size)
        guard networkAccessAllowed == true else {
            throw ExportError(
                .networkAccessRequired,
                "\(remote.url) is remote and network access is not allowed (--network-access, \"networkAccessAllowed\": true)"
            )
        }
        if export.resource != nil {
            throw ExportError(.invalidArgument, "\(remote.url): resources are for library assets")
        }
        return remote
    }

    /// The keys a manifest line may have: the job's own and the export's.
    static let knownKeys = Set([
        "asset", "outputDir", "priority", "key", "maxAttempts", "thumbnails", "cache", "networkAccessAllowed",
        "sha256", "size",
    ]).union(ExportRequest.keys)
}

extension JobRequest {
    /// `path` as a URL, taken from `workingDirectory` when relative, standardized.
    static func absolute(_ path: String, in workingDirectory: URL) -> URL {
        (path.hasPrefix("/") ? URL(fileURLWithPath: path) : workingDirectory.appendingPathComponent(path))
            .standardizedFileURL
    }
}

extension JobSpec {
    /// Attempts a job may be given (`maxAttempts`, `--max-attempts`).
    public static let attemptLimits = 1...20
    public static let defaultAttempts = 3

    /// The attempts a request asks for (the default when none), or `invalid-argument` when outside
    /// `attemptLimits`.
    static func checkedAttempts(_ asked: Int?) throws(ExportError) -> Int {
        let attempts = asked ?? defaultAttempts
        guard attemptLimits.contains(attempts) else {
            throw ExportError(
                .invalidArgument,
                "max attempts must be between \(attemptLimits.lowerBound) and \(attemptLimits.upperBound), not \(attempts)"
            )
        }
        return attempts
    }

    /// Whether `key` is a valid idempotency key: 1 to 100 bytes of UTF-8.
    public static func isValidKey(_ key: String) -> Bool { (1...100).contains(key.utf8.count) }

    /// Throws `invalid-argument` unless `key` is a valid idempotency key.
    public static func checkKey(_ key: String) throws(ExportError) {
        guard isValidKey(key) else {
            throw ExportError(.invalidArgument, "an idempotency key must be 1 to 100 bytes, not \(key.utf8.count)")
        }
    }

    /// What a store answers to a spec whose key is no valid idempotency key (`.invalid`).
    package static func refuseKey(_ key: String) -> QueueError? {
        isValidKey(key) ? nil : QueueError(.invalid, "an idempotency key must be 1 to 100 bytes")
    }
}

/// A JSON-lines file of job requests: `reel submit --manifest`.
public enum Manifest {
    /// Reads every line (blank lines and lines starting with `#` are skipped) and resolves it. Nothing
    /// is returned unless every line is good: otherwise one `ExportError` names every bad line by number
    /// and what is wrong with it, with the first bad line's code.
    public static func resolve(
        _ data: Data, presets: PresetLibrary, limits: InputLimits, workingDirectory: URL,
        checks: JobRequest.Checks = .plan, metadataDefault: MetadataPolicy? = nil
    ) throws(ExportError) -> [JobSpec] {
        let lines = resolveLines(
            data, presets: presets, limits: limits, workingDirectory: workingDirectory, checks: checks,
            metadataDefault: metadataDefault)
        let problems = lines.compactMap { line -> (line: Int, error: ExportError)? in
            if case .failure(let error) = line.spec { return (line.line, error) }
            return nil
        }
        if !problems.isEmpty { throw rejection(problems) }
        if lines.isEmpty { throw ExportError(.invalidArgument, "the manifest has no jobs") }
        return lines.compactMap { try? $0.spec.get() }
    }

    /// The one error a rejected manifest ends with: every bad line by number and what is wrong with
    /// it, with the first bad line's code.
    public static func rejection(_ problems: [(line: Int, error: ExportError)]) -> ExportError {
        ExportError(
            problems.first?.error.code ?? .invalidArgument,
            "manifest rejected, nothing was queued: "
                + problems.map { "line \($0.line): \($0.error.message)" }.joined(separator: "; "))
    }

    /// `resolveLines`, with `library:<id>` assets resolved through `library` first (each line's
    /// refusal its own: an unknown or changed identifier refuses that line).
    public static func resolveLines(
        _ data: Data, presets: PresetLibrary, limits: InputLimits, workingDirectory: URL,
        checks: JobRequest.Checks = .plan, metadataDefault: MetadataPolicy? = nil, library: (any AssetLibrary)?
    ) async -> [(line: Int, asset: String?, spec: Result<JobSpec, ExportError>)] {
        var lines: [(line: Int, asset: String?, spec: Result<JobSpec, ExportError>)] = []
        for (line, result) in requests(data) {
            let asset = (try? result.get().asset).map(RemoteURL.shown)
            do throws(ExportError) {
                var request = try result.get()
                try await request.resolveLibraryAsset(in: library)
                let spec = try request.resolve(
                    presets: presets, limits: limits, workingDirectory: workingDirectory, checks: checks,
                    metadataDefault: metadataDefault)
                lines.append((line, asset, .success(spec)))
            } catch {
                lines.append((line, asset, .failure(error)))
            }
        }
        return lines
    }

    /// Each job line (numbered from 1) resolved to its spec, or the error that refuses it: what
    /// `resolve` throws, line by line, for a caller that reports each refusal on its own.
    public static func resolveLines(
        _ data: Data, presets: PresetLibrary, limits: InputLimits, workingDirectory: URL,
        checks: JobRequest.Checks = .plan, metadataDefault: MetadataPolicy? = nil
    ) -> [(line: Int, asset: String?, spec: Result<JobSpec, ExportError>)] {
        requests(data).map { line, result in
            let asset = (try? result.get().asset).map(RemoteURL.shown)
            return (
                line, asset,
                Result { () throws(ExportError) in
                    try result.get().resolve(
                        presets: presets, limits: limits, workingDirectory: workingDirectory, checks: checks,
                        metadataDefault: metadataDefault)
                }
            )
        }
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
        var unknown = StrictKeys.unknown(in: object, known: JobRequest.knownKeys)
        if let thumbnails = object["thumbnails"] as? [String: Any] {
            unknown += StrictKeys.unknown(in: thumbnails, known: ThumbnailSetRequest.keys, prefix: "thumbnails.")
        }
        if let cache = object["cache"] as? [String: Any] {
            unknown += StrictKeys.unknown(in: cache, known: PhotoCacheRequest.keys, prefix: "cache.")
        }
        if !unknown.isEmpty { throw ExportError(.invalidArgument, unknown.joined(separator: ", ")) }
        do {
            let request = try decoder.decode(JobRequest.self, from: data)
            // A ladder's rungs have a default preset (`Ladder.defaultPreset`), as with `reel export`.
            let ladder = request.export.type?.trimmingCharacters(in: .whitespaces).lowercased() == "hls"
            if request.export.preset == nil && !ladder && request.thumbnails == nil && request.cache == nil {
                throw ExportError(.invalidArgument, "missing \"preset\"")
            }
            return request
        } catch let error as ExportError {
            throw error
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
