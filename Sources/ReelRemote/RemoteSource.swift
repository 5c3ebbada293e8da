import Foundation
import ReelExport
import ReelMedia

/// An asset named by URL, with what the job knows of its bytes: a SHA-256 and a size, checked
/// before any decoding (an ETag is never taken for an MD5).
public struct RemoteSource: Sendable, Equatable {
    public var url: URL
    /// 64 hex digits, or nil.
    public var sha256: String?
    public var size: Int64?

    public init(url: URL, sha256: String? = nil, size: Int64? = nil) {
        self.url = url
        self.sha256 = sha256?.lowercased()
        self.size = size
    }

    /// The source `text` names, its digest checked for form (`invalid-argument`).
    public static func parse(_ text: String, sha256: String? = nil, size: Int64? = nil) throws(ExportError)
        -> RemoteSource
    {
        let url = try RemoteURL.parse(text)
        if let sha256, !SHA256.isDigest(sha256) {
            throw ExportError(.invalidArgument, "--sha256 takes 64 hex digits, not '\(sha256)'")
        }
        if let size, size < 0 { throw ExportError(.invalidArgument, "a size cannot be negative") }
        return RemoteSource(url: url, sha256: sha256, size: size)
    }
}

/// A remote asset on disk: the download cache's copy (or a temporary file, when the server gave no
/// way to know the object again), with how it got there.
public struct DownloadedFile: Sendable, Equatable {
    /// The local file to read.
    public var path: String
    public var bytes: Int64
    /// The URL without its query, as results and logs may show it.
    public var url: String
    /// The server's strong ETag, when it gave one.
    public var etag: String?
    /// The SHA-256 checked, when the job named one.
    public var sha256: String?
    /// Served from the download cache without a byte of the body fetched.
    public var fromCache: Bool
    /// Where the last request started in the body (0 unless a partial download was resumed).
    public var resumedFrom: Int64
    /// Removed by the caller once used: not in the cache (no ETag and no SHA-256 to key it by).
    public var isTemporary: Bool

    public init(
        path: String, bytes: Int64, url: String, etag: String? = nil, sha256: String? = nil, fromCache: Bool = false,
        resumedFrom: Int64 = 0, isTemporary: Bool = false
    ) {
        self.path = path
        self.bytes = bytes
        self.url = url
        self.etag = etag
        self.sha256 = sha256
        self.fromCache = fromCache
        self.resumedFrom = resumedFrom
        self.isTemporary = isTemporary
    }
}

/// How far a download is.
public struct DownloadProgress: Sendable, Equatable {
    public var received: Int64
    /// Nil when the server did not say.
    public var total: Int64?

    public init(received: Int64, total: Int64?) {
        self.received = received
        self.total = total
    }

    /// 0…1, or nil without a total.
    public var fraction: Double? {
        guard let total, total > 0 else { return nil }
        return min(1, Double(received) / Double(total))
    }
}
