#if Remote
    import AsyncHTTPClient
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOSSL
    import ReelExport
    import ReelSystem

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Downloads remote assets into a `DownloadCache` under a `NetworkPolicy`: the download phase of
    /// an export, image or thumbnail request.
    ///
    /// HEAD first (size, strong ETag, `Accept-Ranges`; a server that refuses HEAD, as a presigned GET
    /// URL does, is asked for its first byte instead); the body goes to a partial file beside a sidecar
    /// naming what it is a prefix of, and a retry resumes it with `Range` and `If-Range` (RFC 9110
    /// §13.1.5, §14). Every hop, redirects included, is resolved here and its addresses checked
    /// against the policy; the connection is then pinned to the address checked (async-http-client's
    /// `dnsOverride`, which keeps TLS on the host name), so a name that resolves differently the second
    /// time (DNS rebinding) cannot reach an address the check refused. The query string of a URL (a
    /// presigned signature) appears in no message.
    public struct RemoteFetcher: Sendable {
        public var policy: NetworkPolicy
        public var cache: DownloadCache
        /// A PEM file of certificate authorities trusted beside the system's (a company's own CA).
        public var trustedCertificates: String?
        /// Attempts of one fetch when the connection fails or a body ends early; each resumes.
        public var attempts = 3

        public init(policy: NetworkPolicy, cache: DownloadCache, trustedCertificates: String? = nil) {
            self.policy = policy
            self.cache = cache
            self.trustedCertificates = trustedCertificates
        }

        /// The asset's bytes on disk: from the cache when it holds them, else downloaded (resuming a
        /// partial download of the same object), checked against the size and SHA-256 the source names
        /// and against `maximumBytes` before the body is read. `progress` is called as bytes arrive.
        /// Cancelling the calling task stops the download and keeps what arrived for the next fetch.
        public func fetch(
            _ source: RemoteSource, maximumBytes: Int64? = nil,
            progress: @escaping @Sendable (DownloadProgress) -> Void = { _ in }
        ) async throws(ExportError) -> DownloadedFile {
            do {
                return try await run(source, maximumBytes: maximumBytes, progress: progress)
            } catch let error as ExportError {
                throw error
            } catch {
                throw Self.failure(error, RemoteURL.redacted(source.url))
            }
        }

        // MARK: The phases

        private func run(
            _ source: RemoteSource, maximumBytes: Int64?, progress: @escaping @Sendable (DownloadProgress) -> Void
        ) async throws -> DownloadedFile {
            let shown = RemoteURL.redacted(source.url)
            try policy.check(source.url)
            try cache.prepare()
            if let sha256 = source.sha256, let hit = cached(DownloadCache.key(sha256: sha256), source, shown) {
                return hit
            }
            let head = try await self.head(source.url)
            if let size = head.size {
                if let maximumBytes, size > maximumBytes {
                    throw ExportError(
                        .limitExceeded, "\(shown) is \(size) bytes, over the input limit of \(maximumBytes)")
                }
                if let named = source.size, named != size {
                    throw ExportError(.checksumMismatch, "\(shown) is \(size) bytes; the job names \(named)")
                }
            }
            // A partial download is the object at this URL with this ETag, whatever the job names: a run
            // that names a SHA-256 resumes the download of one that did not. A complete one is found by
            // either key (hard links).
            let byETag = head.etag.map { DownloadCache.key(url: source.url, etag: $0) }
            let byDigest = source.sha256.map(DownloadCache.key(sha256:))
            if let byETag, let hit = cached(byETag, source, shown) {
                if let byDigest {
                    // Named by digest now: check it once, then keep it under the digest's key too.
                    let digest = try await DownloadCache.sha256(of: hit.path)
                    guard "sha256-" + digest == byDigest else {
                        throw ExportError(
                            .checksumMismatch,
                            "\(shown) has SHA-256 \(digest.prefix(12))…, not the \(byDigest.dropFirst(7).prefix(12))… the job names"
                        )
                    }
                    cache.link(byETag, as: byDigest)
                }
                return hit
            }
            let entry = byETag ?? byDigest ?? "once-" + AtomicFile.randomTag() + AtomicFile.randomTag()
            let lock = try await cache.lock(entry)
            defer { close(lock) }
            // Another process may have finished it while this one waited.
            if byETag != nil || byDigest != nil, let hit = cached(entry, source, shown) { return hit }

            var resumedFrom: Int64 = 0
            var attempt = 1
            while true {
                do {
                    resumedFrom = try await download(
                        entry, head: head, shown: shown, maximumBytes: maximumBytes, progress: progress)
                    break
                } catch let retry as Retry where attempt < attempts {
                    attempt += 1
                    if retry.discard { cache.discardPartial(entry) }
                    do {
                        try await Task.sleep(for: .milliseconds(250 << attempt))
                    } catch {
                        throw ExportError(.cancelled, "the download of \(shown) was cancelled")
                    }
                } catch let retry as Retry {
                    if retry.discard { cache.discardPartial(entry) }
                    throw retry.error
                }
            }
            let received = Self.fileSize(cache.partialPath(entry)) ?? 0
            if let named = source.size, named != received {
                cache.discardPartial(entry)
                throw ExportError(.checksumMismatch, "\(shown) sent \(received) bytes; the job names \(named)")
            }
            if let named = source.sha256 {
                let digest = try await DownloadCache.sha256(of: cache.partialPath(entry))
                guard digest == named else {
                    cache.discardPartial(entry)
                    throw ExportError(
                        .checksumMismatch,
                        "\(shown) has SHA-256 \(digest.prefix(12))…, not the \(named.prefix(12))… the job names")
                }
            }
            try cache.complete(entry)
            if let byDigest, byDigest != entry { cache.link(entry, as: byDigest) }
            cache.evict(keeping: entry)
            return DownloadedFile(
                path: cache.path(entry), bytes: received, url: shown, etag: head.etag, sha256: source.sha256,
                resumedFrom: resumedFrom, isTemporary: byETag == nil && byDigest == nil)
        }

        /// The cache's complete entry `key`, its size checked against the source's.
        private func cached(_ key: String, _ source: RemoteSource, _ shown: String) -> DownloadedFile? {
            guard let size = cache.hit(key), source.size == nil || source.size == size else { return nil }
            return DownloadedFile(
                path: cache.path(key), bytes: size, url: shown, sha256: source.sha256, fromCache: true)
        }

        /// What a server says of an object before its body is read.
        struct Head {
            /// Where the object is, after redirects.
            var url: URL
            var size: Int64?
            /// Strong ETags only: a weak one cannot guard a resume.
            var etag: String?
            var acceptsRanges: Bool
        }

        private func head(_ url: URL) async throws -> Head {
            try await exchange(.HEAD, url) { response, final in
                switch response.status.code {
                case 200:
                    return Head(
                        url: final, size: Self.contentLength(response.headers),
                        etag: Self.strongETag(response.headers),
                        acceptsRanges: response.headers["Accept-Ranges"].contains { $0.lowercased() == "bytes" })
                case 403, 405, 501:
                    // A presigned GET URL refuses HEAD: ask for the first byte instead.
                    return try await firstByte(final)
                default:
                    throw Self.statusFailure(response.status, RemoteURL.redacted(url))
                }
            }
        }

        private func firstByte(_ url: URL) async throws -> Head {
            try await exchange(.GET, url, headers: [("Range", "bytes=0-0")]) { response, final in
                switch response.status.code {
                case 206:
                    let total = response.headers["Content-Range"].first.flatMap { Self.contentRange($0)?.total }
                    return Head(url: final, size: total, etag: Self.strongETag(response.headers), acceptsRanges: true)
                case 200:
                    return Head(
                        url: final, size: Self.contentLength(response.headers),
                        etag: Self.strongETag(response.headers), acceptsRanges: false)
                default:
                    throw Self.statusFailure(response.status, RemoteURL.redacted(url))
                }
            }
        }

        /// A failure the fetch tries again after (resuming unless `discard`).
        struct Retry: Error {
            var error: ExportError
            var discard = false
        }

        /// Downloads (the rest of) the object into the partial file of `entry`; returns where the
        /// request started.
        private func download(
            _ entry: String, head: Head, shown: String, maximumBytes: Int64?,
            progress: @escaping @Sendable (DownloadProgress) -> Void
        ) async throws -> Int64 {
            let partial = cache.partialPath(entry)
            let sidecar = DownloadCache.Sidecar(url: shown, etag: head.etag, size: head.size)
            var offset: Int64 = 0
            if let have = Self.fileSize(partial), have > 0, head.etag != nil, head.acceptsRanges,
                cache.readSidecar(entry) == sidecar, have <= head.size ?? .max
            {
                offset = have
                if have == head.size { return have }
            } else {
                cache.discardPartial(entry)
            }
            try cache.writeSidecar(sidecar, entry)
            var headers: [(String, String)] = []
            if offset > 0, let etag = head.etag {
                headers = [("Range", "bytes=\(offset)-"), ("If-Range", etag)]
            }
            return try await exchange(.GET, head.url, headers: headers) { response, _ in
                var start: Int64 = 0
                switch response.status.code {
                case 206 where offset > 0:
                    guard let range = response.headers["Content-Range"].first.flatMap(Self.contentRange),
                        range.start == offset, range.total == nil || range.total == head.size
                    else {
                        throw Retry(
                            error: ExportError(.downloadFailed, "\(shown) answered a resume with another range"),
                            discard: true)
                    }
                    start = offset
                case 200:
                    start = 0  // the whole object: the resume was refused, or it changed (If-Range)
                case 416 where offset > 0:
                    throw Retry(error: ExportError(.downloadFailed, "\(shown) refused the resume (416)"), discard: true)
                default:
                    let failure = Self.statusFailure(response.status, shown)
                    let code = response.status.code
                    if code >= 500 || code == 408 || code == 429 { throw Retry(error: failure) }
                    throw failure
                }
                if let etag = head.etag, let now = Self.strongETag(response.headers), now != etag {
                    throw Retry(
                        error: ExportError(.downloadFailed, "\(shown) changed during the download"), discard: true)
                }
                let length = Self.contentLength(response.headers).map { $0 + start }
                let total = head.size ?? length
                if let maximumBytes, let total, total > maximumBytes {
                    throw ExportError(
                        .limitExceeded, "\(shown) is \(total) bytes, over the input limit of \(maximumBytes)")
                }
                let fd = open(partial, O_WRONLY | O_CREAT | O_CLOEXEC | (start > 0 ? O_APPEND : O_TRUNC), 0o600)
                guard fd >= 0 else {
                    throw ExportError(
                        .outputFailed, "cannot write to the download cache: \(String(cString: strerror(errno)))")
                }
                defer { close(fd) }
                var received = start
                progress(DownloadProgress(received: received, total: total))
                do {
                    for try await chunk in response.body {
                        received += Int64(chunk.readableBytes)
                        if let total, received > total {
                            throw Retry(
                                error: ExportError(
                                    .downloadFailed, "\(shown) sent more than the \(total) bytes it declared"),
                                discard: true)
                        }
                        if let maximumBytes, received > maximumBytes {
                            cache.discardPartial(entry)
                            throw ExportError(
                                .limitExceeded, "\(shown) sent more than the input limit of \(maximumBytes) bytes")
                        }
                        let written = chunk.withUnsafeReadableBytes { AtomicFile.writeAll(fd, $0) }
                        guard written else {
                            let reason = String(cString: strerror(errno))
                            throw ExportError(
                                errno == ENOSPC ? .noSpace : .outputFailed, "cannot write the download: \(reason)")
                        }
                        progress(DownloadProgress(received: received, total: total))
                    }
                } catch let error as ExportError {
                    throw error
                } catch let retry as Retry {
                    throw retry
                } catch {
                    if Task.isCancelled || error is CancellationError {
                        throw ExportError(.cancelled, "the download of \(shown) was cancelled")
                    }
                    throw Retry(error: Self.failure(error, shown))
                }
                if let total, received < total {
                    throw Retry(
                        error: ExportError(.downloadFailed, "\(shown) ended after \(received) of \(total) bytes"))
                }
                return start
            }
        }

        // MARK: One request, redirects followed under the policy

        /// Sends `method` to `url`, following redirects (each hop checked and pinned), and hands the
        /// final response to `body` while its client lives.
        private func exchange<T>(
            _ method: HTTPMethod, _ url: URL, headers: [(String, String)] = [],
            _ body: (HTTPClientResponse, URL) async throws -> T
        ) async throws -> T {
            var current = url
            for _ in 0...policy.maximumRedirects {
                let client = try await self.client(for: current)
                var request = HTTPClientRequest(url: current.absoluteString)
                request.method = method
                for (name, value) in headers { request.headers.add(name: name, value: value) }
                request.headers.add(name: "User-Agent", value: "reel")
                // The final response's outcome, or where a redirect leads.
                var outcome: Result<T, any Error>?
                var next: URL?
                do {
                    let response = try await client.execute(request, deadline: .distantFuture)
                    if [301, 302, 303, 307, 308].contains(response.status.code) {
                        guard let location = response.headers["Location"].first,
                            let target = URL(string: location, relativeTo: current)?.absoluteURL
                        else {
                            throw ExportError(
                                .downloadFailed, "\(RemoteURL.redacted(current)) redirected without a usable Location")
                        }
                        next = target
                    } else {
                        outcome = .success(try await body(response, current))
                    }
                } catch {
                    outcome = .failure(error)
                }
                try? await client.shutdown()
                if let next {
                    try policy.check(next)
                    current = next
                    continue
                }
                if let outcome { return try outcome.get() }
            }
            throw ExportError(
                .urlRefused, "\(RemoteURL.redacted(url)) redirected more than \(policy.maximumRedirects) times")
        }

        /// A client that connects only to an address of `url`'s host the policy allows.
        func client(for url: URL) async throws -> HTTPClient {
            try policy.check(url)
            let shown = RemoteURL.redacted(url)
            let host = (url.host ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
            let literal = IPAddress(parsing: host)
            var addresses = literal.map { [$0] } ?? []
            if literal == nil { addresses = try await Self.resolve(host, shown: shown) }
            // Every address the name has must be allowed: the connection may use any of them.
            for address in addresses {
                if let reason = policy.refusal(of: address, port: port) {
                    throw ExportError(
                        .urlRefused,
                        "\(shown) leads to \(address), \(reason); refused (--allow-private-network allows it)")
                }
            }
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(
                    connect: .milliseconds(Int64(policy.connectTimeout * 1000)),
                    read: .milliseconds(Int64(policy.idleTimeout * 1000))),
                decompression: .disabled)
            var tls = TLSConfiguration.makeClientConfiguration()
            if let trustedCertificates { tls.additionalTrustRoots = [.file(trustedCertificates)] }
            configuration.tlsConfiguration = tls
            configuration.httpVersion = .http1Only
            if literal == nil, let first = addresses.first { configuration.dnsOverride = [host: first.description] }
            return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }

        /// The addresses `host` resolves to (getaddrinfo, off Swift's pool).
        static func resolve(_ host: String, shown: String) async throws(ExportError) -> [IPAddress] {
            let found: [IPAddress] = await BlockingIO.shared.run {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
                defer { freeaddrinfo(list) }
                var addresses: [IPAddress] = []
                var node: UnsafeMutablePointer<addrinfo>? = first
                while let current = node {
                    if let socket = current.pointee.ai_addr {
                        if current.pointee.ai_family == AF_INET {
                            var v4 = socket.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                            if let address = IPAddress(bytes: withUnsafeBytes(of: &v4) { Array($0) }) {
                                addresses.append(address)
                            }
                        } else if current.pointee.ai_family == AF_INET6 {
                            var v6 = socket.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                                $0.pointee.sin6_addr
                            }
                            if let address = IPAddress(bytes: withUnsafeBytes(of: &v6) { Array($0) }) {
                                addresses.append(address)
                            }
                        }
                    }
                    node = current.pointee.ai_next
                }
                return addresses
            }
            guard !found.isEmpty else { throw ExportError(.downloadFailed, "\(shown): cannot resolve \(host)") }
            var unique: [IPAddress] = []
            for address in found where !unique.contains(address) { unique.append(address) }
            return unique
        }

        // MARK: Headers and failures

        static func contentLength(_ headers: HTTPHeaders) -> Int64? {
            headers["Content-Length"].first.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        }

        /// The ETag when strong (`"…"`); nil for none or a weak one (`W/"…"`).
        static func strongETag(_ headers: HTTPHeaders) -> String? {
            guard let etag = headers["ETag"].first?.trimmingCharacters(in: .whitespaces), etag.hasPrefix("\""),
                etag.count >= 2
            else { return nil }
            return etag
        }

        /// `bytes START-END/TOTAL` (TOTAL may be `*`).
        static func contentRange(_ text: String) -> (start: Int64, end: Int64, total: Int64?)? {
            let value = text.trimmingCharacters(in: .whitespaces)
            guard value.lowercased().hasPrefix("bytes ") else { return nil }
            let parts = value.dropFirst(6).split(separator: "/", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let bounds = parts[0].split(separator: "-", maxSplits: 1)
            guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start <= end else {
                return nil
            }
            return (start, end, Int64(parts[1]))
        }

        static func fileSize(_ path: String) -> Int64? {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            return Int64(status.st_size)
        }

        static func statusFailure(_ status: HTTPResponseStatus, _ shown: String) -> ExportError {
            let retryable = status.code >= 500 || status.code == 408 || status.code == 429
            return ExportError(
                .downloadFailed, "\(shown) answered HTTP \(status.code) \(status.reasonPhrase)", retryable: retryable)
        }

        /// A transport failure in one line, without the URL's query.
        static func failure(_ error: any Error, _ shown: String) -> ExportError {
            if error is CancellationError { return ExportError(.cancelled, "the download of \(shown) was cancelled") }
            if let retry = error as? Retry { return retry.error }
            if let client = error as? HTTPClientError {
                switch client {
                case .cancelled: return ExportError(.cancelled, "the download of \(shown) was cancelled")
                case .connectTimeout: return ExportError(.downloadFailed, "\(shown): the connection timed out")
                case .readTimeout: return ExportError(.downloadFailed, "\(shown): the server stopped sending")
                case .remoteConnectionClosed:
                    return ExportError(.downloadFailed, "\(shown): the server closed the connection")
                default: return ExportError(.downloadFailed, "\(shown): \(client)")
                }
            }
            if let tls = error as? NIOSSLError { return ExportError(.downloadFailed, "\(shown): TLS failed (\(tls))") }
            if let ssl = error as? BoringSSLError {
                return ExportError(.downloadFailed, "\(shown): TLS failed (\(ssl))")
            }
            return ExportError(.downloadFailed, "\(shown): \(error)")
        }
    }
#endif
