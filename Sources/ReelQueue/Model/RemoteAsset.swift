import Foundation
import ReelExport

/// A queued job's asset named by URL (`reel submit https://… --network-access`, a manifest line's
/// `asset` with `"networkAccessAllowed": true`): what the worker downloads before it exports.
///
/// The URL's query is often its credential (a presigned signature), so it is kept apart: `url` is
/// the URL without it, which status files, logs, metrics and results show, and `query` is written
/// only where the store keeps the job for its workers (the spool's `jobs/<id>.credential`, mode
/// 0600; the fleet's `spec` column), never in a status file or a printed status.
public struct RemoteAsset: Sendable, Codable {
    /// `scheme://host[:port]/path`.
    public var url: String
    /// The query without its `?`; nil when the URL has none.
    public var query: String?
    /// Whether the URL had a query: a status file that omits it still says one is kept.
    public var hasQuery: Bool
    /// 64 hex digits the downloaded bytes must hash to (SHA-256), checked before any decoding.
    public var sha256: String?
    /// The size the downloaded bytes must have.
    public var size: Int64?

    /// The asset at `url` (its query kept apart), checked: http or https with a host, no user or
    /// password, a well-formed digest (`invalid-argument` otherwise).
    public init(_ url: String, sha256: String? = nil, size: Int64? = nil) throws(ExportError) {
        let parsed = try RemoteURL.parse(url)
        guard let scheme = parsed.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            throw ExportError(.invalidArgument, "\(RemoteURL.redacted(parsed)): only http and https URLs are fetched")
        }
        if parsed.user != nil || parsed.password != nil {
            throw ExportError(
                .urlRefused,
                "\(RemoteURL.redacted(parsed)): a user or password in the URL is refused; presign it instead")
        }
        if let sha256, !(sha256.utf8.count == 64 && sha256.allSatisfy(\.isHexDigit)) {
            throw ExportError(.invalidArgument, "sha256 takes 64 hex digits, not '\(sha256)'")
        }
        if let size, size < 0 { throw ExportError(.invalidArgument, "a size cannot be negative") }
        self.url = RemoteURL.redacted(parsed)
        query = URLComponents(url: parsed, resolvingAgainstBaseURL: false)?.percentEncodedQuery
        hasQuery = query != nil
        self.sha256 = sha256?.lowercased()
        self.size = size
    }

    /// The URL's file name (`IMG_1.MOV`), which outputs are named after.
    public var fileName: String { URL(string: url).map(RemoteURL.fileName) ?? "download" }

    /// The URL to fetch: with its query.
    public var fetchURL: String { query.map { url + "?" + $0 } ?? url }

    /// Whether the query is missing where the URL had one (read from a status file).
    public var lacksQuery: Bool { hasQuery && query == nil }

    /// Where `encoder` writes the query: only where its `userInfo` says the store keeps credentials.
    public static let keepsCredentials = CodingUserInfoKey(rawValue: "reel.keepsCredentials")!

    /// What a store writes a job's spec with (the query kept): the spool's credential file, the
    /// fleet's `spec` column.
    public static var storeEncoder: JSONEncoder {
        let encoder = JSONCoding.lineEncoder
        encoder.userInfo[keepsCredentials] = true
        return encoder
    }

    private enum CodingKeys: String, CodingKey { case url, query, hasQuery, sha256, size }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        url = try c.decode(String.self, forKey: .url)
        query = try c.decodeIfPresent(String.self, forKey: .query)
        hasQuery = try c.decodeIfPresent(Bool.self, forKey: .hasQuery) ?? (query != nil)
        sha256 = try c.decodeIfPresent(String.self, forKey: .sha256)
        size = try c.decodeIfPresent(Int64.self, forKey: .size)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        if encoder.userInfo[Self.keepsCredentials] as? Bool == true { try c.encodeIfPresent(query, forKey: .query) }
        try c.encode(hasQuery, forKey: .hasQuery)
        try c.encode(sha256, forKey: .sha256)
        try c.encode(size, forKey: .size)
    }
}

extension RemoteAsset: Equatable {
    /// The same object: URL, digest and size. The query is left out: a URL signed again names the same
    /// asset (an idempotency key's request submitted with a fresh signature is the same request).
    public static func == (a: RemoteAsset, b: RemoteAsset) -> Bool {
        a.url == b.url && a.hasQuery == b.hasQuery && a.sha256 == b.sha256 && a.size == b.size
    }
}

/// What a worker downloads remote assets with (the `reel` command's, over async-http-client under the
/// worker's network policy); a worker without one fails such jobs in one line.
public protocol RemoteAssetFetcher: Sendable {
    /// The asset's bytes as a local file, checked (digest, size, `limits`' file size) before any
    /// decoding; `progress` gets 0…1 as they arrive. `temporary`: the caller removes the file after
    /// use. Cancelling the task stops the download (what arrived is kept for the next attempt).
    func fetch(_ asset: RemoteAsset, limits: InputLimits, progress: @escaping @Sendable (Double) -> Void)
        async throws(ExportError) -> (path: String, temporary: Bool)
}
