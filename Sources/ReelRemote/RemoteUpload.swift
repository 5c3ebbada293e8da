#if Remote
    import AsyncHTTPClient
    import Foundation
    import NIOCore
    import NIOHTTP1
    import ReelExport
    import ReelSystem

    #if canImport(Glibc)
        import Glibc
    #endif

    extension RemoteFetcher {
        /// PUTs the file at `path` to `url` (a presigned PUT URL) under the policy: the address checked
        /// and pinned as for a download, no redirect followed (a PUT's body is not sent twice to
        /// another place), `Content-Length` and `contentType` set, retried after a 5xx, 408, 429 or a
        /// lost connection (`attempts` in all). Done once the server acknowledged it with a 2xx;
        /// `upload-failed` otherwise.
        public func upload(
            _ path: String, to url: URL, contentType: String,
            progress: @escaping @Sendable (DownloadProgress) -> Void = { _ in }
        ) async throws(ExportError) -> UploadResult {
            let shown = RemoteURL.redacted(url)
            try policy.check(url)
            guard let size = Self.fileSize(path) else {
                throw ExportError(.internal, "the output to upload is missing: \(path)")
            }
            var attempt = 1
            while true {
                do {
                    return try await put(path, size: size, to: url, contentType: contentType, progress: progress)
                } catch let error as ExportError
                    where error.code == .uploadFailed && error.isRetryable && attempt < attempts
                {
                    attempt += 1
                    do {
                        try await Task.sleep(for: .milliseconds(250 << attempt))
                    } catch {
                        throw ExportError(.cancelled, "the upload to \(shown) was cancelled")
                    }
                } catch let error as ExportError {
                    throw error
                } catch {
                    let failure = Self.failure(error, shown)
                    if failure.code == .cancelled { throw failure }
                    let retryable = ExportError(.uploadFailed, failure.message, retryable: true)
                    if attempt < attempts {
                        attempt += 1
                        continue
                    }
                    throw retryable
                }
            }
        }

        private func put(
            _ path: String, size: Int64, to url: URL, contentType: String,
            progress: @escaping @Sendable (DownloadProgress) -> Void
        ) async throws -> UploadResult {
            let shown = RemoteURL.redacted(url)
            let client = try await client(for: url)
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .PUT
            request.headers.add(name: "Content-Type", value: contentType)
            request.headers.add(name: "User-Agent", value: "reel")
            request.body = .stream(FileChunks(path: path, size: size, progress: progress), length: .known(size))
            let outcome: Result<UploadResult, any Error>
            do {
                let response = try await client.execute(request, deadline: .distantFuture)
                // What the server says is not needed beyond its status; read it so the connection ends cleanly.
                _ = try? await response.body.collect(upTo: 64 << 10)
                let code = response.status.code
                if (200..<300).contains(code) {
                    outcome = .success(UploadResult(url: shown, bytes: size, etag: Self.strongETag(response.headers)))
                } else {
                    let retryable = code >= 500 || code == 408 || code == 429
                    outcome = .failure(
                        ExportError(
                            .uploadFailed, "\(shown) refused the upload: HTTP \(code) \(response.status.reasonPhrase)",
                            retryable: retryable))
                }
            } catch {
                outcome = .failure(error)
            }
            try? await client.shutdown()
            return try outcome.get()
        }
    }

    /// A file's bytes as 1 MiB buffers, read as the upload asks for them.
    struct FileChunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let path: String
        let size: Int64
        let progress: @Sendable (DownloadProgress) -> Void

        func makeAsyncIterator() -> Iterator { Iterator(path: path, size: size, progress: progress) }

        struct Iterator: AsyncIteratorProtocol {
            let path: String
            let size: Int64
            let progress: @Sendable (DownloadProgress) -> Void
            var descriptor: Int32 = -1
            var sent: Int64 = 0

            init(path: String, size: Int64, progress: @escaping @Sendable (DownloadProgress) -> Void) {
                self.path = path
                self.size = size
                self.progress = progress
            }

            mutating func next() async throws -> ByteBuffer? {
                if descriptor < 0 {
                    descriptor = open(path, O_RDONLY | O_CLOEXEC)
                    guard descriptor >= 0 else { throw ExportError(.internal, "cannot read the output \(path)") }
                }
                guard sent < size else {
                    close(descriptor)
                    return nil
                }
                let fd = descriptor
                let count = Int(Swift.min(Int64(1 << 20), size - sent))
                let chunk: [UInt8]? = await BlockingIO.shared.run {
                    var bytes = [UInt8](repeating: 0, count: count)
                    var filled = 0
                    while filled < count {
                        let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, count - filled) }
                        if got < 0 && errno == EINTR { continue }
                        guard got > 0 else { return nil }
                        filled += got
                    }
                    return bytes
                }
                guard let chunk else {
                    close(descriptor)
                    throw ExportError(.internal, "cannot read the output \(path)")
                }
                sent += Int64(chunk.count)
                progress(DownloadProgress(received: sent, total: size))
                return ByteBuffer(bytes: chunk)
            }
        }
    }
#endif
