import Foundation
import ReelExport

#if canImport(Glibc)
    import Glibc
#endif

/// What a download may reach: PhotoKit's `isNetworkAccessAllowed` and a server's guard against URLs
/// that point inside its own network (SSRF). A queued job may ask for network access; the worker's
/// policy decides what it may reach, and a job can never widen it.
public struct NetworkPolicy: Sendable, Equatable {
    /// Plain `http://` URLs (HTTPS only unless set).
    public var allowsHTTP: Bool
    /// Every loopback, private, link-local and metadata address (`AddressRange.refusal`).
    public var allowsPrivateNetwork: Bool
    /// Private addresses allowed one by one (an object store inside the company's network), each with
    /// or without a port.
    public var allowedAddresses: [AllowedAddress]
    /// Redirects followed, each checked as the first URL (5, as browsers stop at 20 and S3 needs 1).
    public var maximumRedirects: Int
    /// Seconds to connect, and seconds a response may send nothing before it counts as lost.
    public var connectTimeout: Double
    public var idleTimeout: Double

    public init(
        allowsHTTP: Bool = false, allowsPrivateNetwork: Bool = false, allowedAddresses: [AllowedAddress] = [],
        maximumRedirects: Int = 5, connectTimeout: Double = 10, idleTimeout: Double = 30
    ) {
        self.allowsHTTP = allowsHTTP
        self.allowsPrivateNetwork = allowsPrivateNetwork
        self.allowedAddresses = allowedAddresses
        self.maximumRedirects = maximumRedirects
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
    }

    /// Refuses a URL Reel must not fetch at all (`url-refused`): a scheme other than https (or http
    /// when allowed), user and password in the URL (they would reach logs), no host.
    public func check(_ url: URL) throws(ExportError) {
        let shown = RemoteURL.redacted(url)
        switch url.scheme?.lowercased() {
        case "https": break
        case "http":
            guard allowsHTTP else {
                throw ExportError(.urlRefused, "\(shown): plain http is refused; use https (or --allow-http)")
            }
        default:
            throw ExportError(.urlRefused, "\(shown): only https URLs (and http with --allow-http) are fetched")
        }
        guard let host = url.host, !host.isEmpty else {
            throw ExportError(.urlRefused, "\(shown): the URL has no host")
        }
        if url.user != nil || url.password != nil {
            throw ExportError(.urlRefused, "\(shown): a user or password in the URL is refused; presign it instead")
        }
    }

    /// Why connecting to `address` on `port` is refused, or nil when it is allowed.
    public func refusal(of address: IPAddress, port: Int) -> String? {
        guard let reason = AddressRange.refusal(of: address) else { return nil }
        if allowsPrivateNetwork { return nil }
        if allowedAddresses.contains(where: { $0.address == address && ($0.port == nil || $0.port == port) }) {
            return nil
        }
        return reason
    }
}

/// An address `--allow-private-address` lets through: `10.0.0.5`, `10.0.0.5:9000`, `[fd00::5]:9000`.
public struct AllowedAddress: Sendable, Equatable, CustomStringConvertible {
    public var address: IPAddress
    public var port: Int?

    public init(address: IPAddress, port: Int? = nil) {
        self.address = address
        self.port = port
    }

    /// Reads `ADDRESS[:PORT]` (an IPv6 address with a port in brackets); nil when it is neither.
    public init?(parsing text: String) {
        var host = text
        var port: Int?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = Int(rest.dropFirst()), (1...65535).contains(value) else {
                    return nil
                }
                port = value
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let value = Int(text[text.index(after: colon)...]), (1...65535).contains(value) else { return nil }
            port = value
        }
        guard let address = IPAddress(parsing: host) else { return nil }
        self.address = address
        self.port = port
    }

    public var description: String {
        guard let port else { return address.description }
        return address.bytes.count == 16 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A dotted IPv4 or a textual IPv6 address (`inet_pton`); nil for anything else, a name included.
    public init?(parsing text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let shown = bytes.withUnsafeBytes {
            inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &text, socklen_t(text.count))
        }
        guard shown != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The address ranges a fetch refuses unless allowed: everything that is not a public unicast address.
public enum AddressRange {
    /// Why `address` is not a public address (`"a loopback address"`), or nil when it is one. IPv6
    /// forms that carry an IPv4 address (mapped, compatible, NAT64) are judged by that address.
    public static func refusal(of address: IPAddress) -> String? {
        let b = address.bytes
        if b.count == 4 { return v4(b[0], b[1], b[2], b[3]) }
        let zeros = b[0..<10].allSatisfy { $0 == 0 }
        if zeros && b[10] == 0xff && b[11] == 0xff { return v4(b[12], b[13], b[14], b[15]) }  // ::ffff:a.b.c.d
        if zeros && b[10] == 0 && b[11] == 0 {
            if b[12...].allSatisfy({ $0 == 0 }) { return "the unspecified address" }
            if b[12..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return "a loopback address" }
            return v4(b[12], b[13], b[14], b[15])  // ::a.b.c.d, deprecated but routed by some stacks
        }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) {
            return v4(b[12], b[13], b[14], b[15])  // 64:ff9b::/96, NAT64
        }
        if b[0] & 0xfe == 0xfc { return "a unique local (private) address" }  // fc00::/7
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return "a link-local address" }  // fe80::/10
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return "a site-local address" }  // fec0::/10
        if b[0] == 0xff { return "a multicast address" }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8 { return "a documentation address" }
        return nil
    }

    private static func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> String? {
        switch (a, b) {
        case (0, _): return "a 'this network' address"
        case (10, _): return "a private address"
        case (100, 64...127): return "a shared (carrier-grade NAT) address"
        case (127, _): return "a loopback address"
        case (169, 254): return c == 169 && d == 254 ? "the cloud metadata address" : "a link-local address"
        case (172, 16...31): return "a private address"
        case (192, 0) where c == 0: return "an IETF protocol address"
        case (192, 0) where c == 2: return "a documentation address"
        case (192, 168): return "a private address"
        case (198, 18...19): return "a benchmarking address"
        case (198, 51) where c == 100, (203, 0) where c == 113: return "a documentation address"
        case (224...239, _): return "a multicast address"
        case (240...255, _): return "a reserved or broadcast address"
        default: return nil
        }
    }
}
