import Foundation

/// URLs as Reel shows them: never the query (a presigned URL's signature is its credential), never a
/// user or password.
public enum RemoteURL {
    /// `scheme://host[:port]/path`: what logs, status files, errors, metrics and results may carry.
    public static func redacted(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(a URL)" }
        parts.query = nil
        parts.fragment = nil
        parts.user = nil
        parts.password = nil
        return parts.string ?? "(a URL)"
    }

    /// An asset argument as messages show it: a URL without its query, anything else as written.
    public static func shown(_ text: String) -> String {
        guard isRemote(text) else { return text }
        return URL(string: text).map(redacted) ?? String(text.prefix { $0 != "?" })
    }

    /// Whether `text` names a remote asset: an `http://` or `https://` URL (any case).
    public static func isRemote(_ text: String) -> Bool {
        let lower = text.prefix(8).lowercased()
        return lower.hasPrefix("https://") || lower.hasPrefix("http://")
    }

    /// The URL `text` names, or `invalid-argument` in one line (the text redacted).
    public static func parse(_ text: String) throws(ExportError) -> URL {
        guard let url = URL(string: text), url.host != nil else {
            let shown = text.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
            throw ExportError(.invalidArgument, "cannot read the URL '\(shown)'")
        }
        return url
    }

    /// The name a download is known by in outputs: its path's last component (`clip.mov`), or `download`.
    public static func fileName(_ url: URL) -> String {
        let name = url.lastPathComponent
        return name.isEmpty || name == "/" ? "download" : name
    }
}

/// An output uploaded to a URL (`-o https://…`, a presigned PUT): where (without the query), how many
/// bytes, and the server's ETag when it gave one.
public struct UploadResult: Sendable, Equatable, Codable {
    public var url: String
    public var bytes: Int64
    public var etag: String?

    public init(url: String, bytes: Int64, etag: String? = nil) {
        self.url = url
        self.bytes = bytes
        self.etag = etag
    }
}
