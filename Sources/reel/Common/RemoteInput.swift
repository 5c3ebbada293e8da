import ArgumentParser
import Foundation
import ReelExport
import ReelQueue
import ReelSystem
import Synchronization

#if Remote
    import ReelRemote
#endif

/// `--network-access`, `--sha256` and the network policy for an asset named by an http(s) URL: what
/// `export`, `image`, `thumbnail` and `probe` share.
struct RemoteOptions: ParsableArguments {
    @Flag(
        name: .long,
        help:
            "Allow an http(s) URL asset to be downloaded (PhotoKit's isNetworkAccessAllowed); without it a URL fails with network-access-required."
    )
    var networkAccess = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The SHA-256 the downloaded bytes must have, checked before any decoding (fails with checksum-mismatch).",
            valueName: "hex"))
    var sha256: String?

    @OptionGroup var policy: NetworkPolicyOptions
}

/// What a download may reach and where it is kept: a command's own, or a worker's for every job it
/// runs (`reel work`), which no job can widen.
struct NetworkPolicyOptions: ParsableArguments {
    @Flag(name: .long, help: "Allow plain http URLs (https only otherwise).")
    var allowHttp = false

    @Flag(
        name: .long,
        help:
            "Allow URLs that lead to loopback, private, link-local or cloud metadata addresses (checked on the address connected to, on every redirect)."
    )
    var allowPrivateNetwork = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Allow this one private address, with or without a port (10.0.0.5:9000, [fd00::5]:9000); repeatable.",
            valueName: "address"))
    var allowPrivateAddress: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where downloads are kept and resumed (env REEL_DOWNLOAD_CACHE; default ~/.cache/reel/downloads).",
            valueName: "dir"))
    var downloadCache: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A PEM file of certificate authorities to trust beside the system's (env REEL_CA_CERTIFICATES).",
            valueName: "file"))
    var caCertificates: String?

    #if Remote
        /// The fetcher these options describe.
        func fetcher() throws -> RemoteFetcher {
            var allowed: [AllowedAddress] = []
            for text in allowPrivateAddress {
                guard let address = AllowedAddress(parsing: text) else {
                    throw CLIFailure(
                        message: "--allow-private-address takes an IP address with an optional port, not '\(text)'",
                        exitStatus: .usage)
                }
                allowed.append(address)
            }
            let policy = NetworkPolicy(
                allowsHTTP: allowHttp, allowsPrivateNetwork: allowPrivateNetwork, allowedAddresses: allowed)
            let environment = ProcessInfo.processInfo.environment
            return RemoteFetcher(
                policy: policy,
                cache: DownloadCache(folder: downloadCache ?? DownloadCache.defaultFolder(environment: environment)),
                trustedCertificates: caCertificates
                    ?? environment["REEL_CA_CERTIFICATES"].flatMap {
                        $0.isEmpty ? nil : $0
                    })
        }
    #endif
}

#if Remote
    /// A worker's downloads: its network policy and cache, for every job that allows network access.
    struct WorkerRemoteFetcher: RemoteAssetFetcher {
        let fetcher: RemoteFetcher

        func fetch(_ asset: RemoteAsset, limits: InputLimits, progress: @escaping @Sendable (Double) -> Void)
            async throws(ExportError) -> (path: String, temporary: Bool)
        {
            let source = try RemoteSource.parse(asset.fetchURL, sha256: asset.sha256, size: asset.size)
            let file = try await fetcher.fetch(source, maximumBytes: limits.maxFileBytes) {
                progress($0.fraction ?? 0)
            }
            return (file.path, file.isTemporary)
        }
    }
#endif

/// An asset argument made local: a URL downloaded (or found in the download cache), anything else
/// as given.
struct LocalInput {
    /// The file to read.
    var path: String
    /// What outputs are named after: the URL's file name in the current folder, or the path.
    var naming: URL
    /// Removed once the command is done (a download the cache cannot keep).
    var temporary: Bool
    /// What messages call it: the URL without its query, or the path.
    var shown: String

    func cleanUp() { if temporary { unlink(path) } }

    /// The input limits for reading `path`: a download is in Reel's own cache, outside any allowed
    /// root (`--allow-root` is about the paths a request may name; a URL is the network policy's).
    func limits(_ limits: InputLimits) -> InputLimits {
        var adjusted = limits
        if path != shown { adjusted.allowedRoots = [] }
        return adjusted
    }

    /// `error` with the download's file named as the URL it came from (without its query).
    func rename(_ error: any Error) -> any Error {
        guard path != shown else { return error }
        if let failure = error as? ExportError {
            return ExportError(
                failure.code, failure.message.replacingOccurrences(of: path, with: shown),
                retryable: failure.isRetryable)
        }
        if var failure = error as? CLIFailure {
            failure.message = failure.message.replacingOccurrences(of: path, with: shown)
            return failure
        }
        return error
    }

    /// `asset` as a local file: a path or `library:` reference unchanged; a URL downloaded under
    /// `remote`'s policy with its progress shown (`--json` lines or the terminal's bar).
    static func resolve(_ asset: String, remote: RemoteOptions, limits: InputLimits, json: Bool) async throws
        -> LocalInput
    {
        guard RemoteURL.isRemote(asset) else {
            if remote.sha256 != nil {
                throw CLIFailure(
                    message: "--sha256 checks a downloaded asset; \(asset) is not a URL", exitStatus: .usage)
            }
            return LocalInput(path: asset, naming: URL(fileURLWithPath: asset), temporary: false, shown: asset)
        }
        #if Remote
            let source = try RemoteSource.parse(asset, sha256: remote.sha256)
            guard remote.networkAccess else {
                throw ExportError(
                    .networkAccessRequired,
                    "\(RemoteURL.redacted(source.url)) is remote and network access is not allowed (--network-access)")
            }
            let fetcher = try remote.policy.fetcher()
            let bar = DownloadBar(json: json, terminal: CLI.stderrIsTerminal)
            // Ctrl-C, SIGTERM and SIGHUP stop the download; what arrived stays for the next run.
            let task = Task { try await fetcher.fetch(source, maximumBytes: limits.maxFileBytes) { bar.show($0) } }
            let interrupts = CLI.onTerminationSignals { task.cancel() }
            defer { interrupts.forEach { $0.cancel() } }
            let file: DownloadedFile
            do {
                file = try await task.value
            } catch {
                bar.finish()
                throw error
            }
            bar.finish()
            let naming = URL(
                fileURLWithPath: FileManager.default.currentDirectoryPath + "/" + RemoteURL.fileName(source.url))
            return LocalInput(path: file.path, naming: naming, temporary: file.isTemporary, shown: file.url)
        #else
            throw CLIFailure(
                message:
                    "this reel was built without remote assets (the Remote trait); \(asset.split(separator: "?")[0]) cannot be fetched",
                exitStatus: .unavailable)
        #endif
    }
}

/// `-o https://…`: the output is exported to a staging folder in the download cache, verified there,
/// then PUT to the URL (a presigned PUT URL). A failed upload keeps the verified file and says where.
struct OutputUpload {
    let url: URL
    /// The folder the output is exported into, and the file.
    let folder: String
    let staged: String
    #if Remote
        let fetcher: RemoteFetcher
    #endif

    /// The upload `output` names, or nil when it is a path. Refused without `--network-access`.
    static func prepare(_ output: String?, remote: RemoteOptions) throws -> OutputUpload? {
        guard let output, RemoteURL.isRemote(output) else { return nil }
        let url = try RemoteURL.parse(output)
        guard remote.networkAccess else {
            throw ExportError(
                .networkAccessRequired,
                "\(RemoteURL.redacted(url)) is remote and network access is not allowed (--network-access)")
        }
        #if Remote
            let fetcher = try remote.policy.fetcher()
            try fetcher.policy.check(url)
            let folder = fetcher.cache.folder + "/uploads/" + AtomicFile.randomTag() + AtomicFile.randomTag()
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ExportError(.outputFailed, "cannot create \(folder): \(error.localizedDescription)")
            }
            return OutputUpload(
                url: url, folder: folder, staged: folder + "/" + RemoteURL.fileName(url), fetcher: fetcher)
        #else
            throw LeftOut.remote.failure
        #endif
    }

    /// Uploads the verified output; the staging folder goes once the server has it. On a failure
    /// the file stays, and the error says where.
    func send(json: Bool) async throws -> UploadResult {
        #if Remote
            let type: String =
                switch URL(fileURLWithPath: staged).pathExtension.lowercased() {
                case "mov": "video/quicktime"
                case "m4v": "video/x-m4v"
                case "m4a": "audio/mp4"
                case "jpg", "jpeg": "image/jpeg"
                default: "video/mp4"
                }
            let bar = DownloadBar(json: json, terminal: CLI.stderrIsTerminal, phase: .uploading)
            do {
                let result = try await fetcher.upload(staged, to: url, contentType: type) { bar.show($0) }
                bar.finish()
                discard()
                return result
            } catch {
                bar.finish()
                guard error.code != .cancelled else {
                    discard()
                    throw error
                }
                throw ExportError(
                    error.code, error.message + " (the verified output is kept at \(staged))",
                    retryable: error.isRetryable)
            }
        #else
            throw LeftOut.remote.failure
        #endif
    }

    /// Removes the staging folder and what it holds.
    func discard() { try? FileManager.default.removeItem(atPath: folder) }
}

#if Remote
    /// A download's progress: `--json` lines in phase `downloading`, or a bar on a terminal.
    final class DownloadBar: Sendable {
        let json: Bool
        let terminal: Bool
        /// `downloading`, or `uploading` for an output sent to its URL.
        let phase: ExportSession.Phase
        private let shown = Mutex<Double>(-1)

        init(json: Bool, terminal: Bool, phase: ExportSession.Phase = .downloading) {
            self.json = json
            self.terminal = terminal
            self.phase = phase
        }

        func show(_ progress: DownloadProgress) {
            let fraction = progress.fraction ?? 0
            // At most one line per 1 % (and the first and the last).
            let due = shown.withLock { last in
                guard last < 0 || fraction >= 1 || fraction - last >= 0.01 else { return false }
                last = fraction
                return true
            }
            guard due else { return }
            if json {
                CLI.printLine(ExportEvent.progress(.init(transferring: fraction, phase: phase)).jsonLine)
            } else if terminal {
                let width = 30
                let filled = Int((fraction * Double(width)).rounded(.down))
                let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
                let megabytes = String(format: "%.1f MB", Double(progress.received) / 1_000_000)
                try? FileHandle.standardError.write(
                    contentsOf: Data(
                        "\r\u{1B}[K\(phase.rawValue) \(bar) \(String(format: "%5.1f%%", fraction * 100))  \(megabytes)"
                            .utf8))
            }
        }

        func finish() {
            if terminal && !json { try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8)) }
        }
    }
#endif
