import Foundation
import ReelExport
import ReelMedia
import ReelRemote
import TestSupport
import Testing

/// The policy's address ranges and URL rules, address by address, and the SHA-256 a download is
/// checked with against coreutils' `sha256sum`.
@Suite("Network policy", .tags(.process))
struct NetworkPolicyTests {
    static func refusal(_ text: String, _ policy: NetworkPolicy = NetworkPolicy(), port: Int = 443) -> String? {
        guard let address = IPAddress(parsing: text) else {
            Issue.record("not an address: \(text)")
            return nil
        }
        return policy.refusal(of: address, port: port)
    }

    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
        ("172.31.255.254", "private"), ("192.168.1.1", "private"), ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"), ("100.64.0.1", "carrier-grade"), ("0.0.0.0", "this network"),
        ("224.0.0.1", "multicast"), ("255.255.255.255", "broadcast"), ("::1", "loopback"), ("::", "unspecified"),
        ("fc00::1", "unique local"), ("fd00:ec2::254", "unique local"), ("fe80::1", "link-local"),
        ("ff02::1", "multicast"), ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "metadata"), ("::ffff:169.254.169.254", "metadata"),
    ])
    func privateAddressesAreRefused(address: String, words: String) {
        let reason = Self.refusal(address)
        #expect(reason?.contains(words) == true, "\(address): \(reason ?? "allowed")")
    }

    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8",
    ])
    func publicAddressesAreAllowed(address: String) {
        #expect(Self.refusal(address) == nil, "\(address)")
    }

    @Test func allowancesAreByAddressAndPortOrEverything() throws {
        let minio = try #require(AllowedAddress(parsing: "10.0.0.5:9000"))
        let one = NetworkPolicy(allowedAddresses: [minio])
        #expect(Self.refusal("10.0.0.5", one, port: 9000) == nil)
        #expect(Self.refusal("10.0.0.5", one, port: 9001) != nil, "another port of the same host")
        #expect(Self.refusal("10.0.0.6", one, port: 9000) != nil)
        let anyPort = NetworkPolicy(allowedAddresses: [try #require(AllowedAddress(parsing: "fd00::5"))])
        #expect(Self.refusal("fd00::5", anyPort, port: 1) == nil)
        #expect(AllowedAddress(parsing: "[fd00::5]:9000")?.port == 9000)
        #expect(AllowedAddress(parsing: "[fd00::5]:9000")?.description == "[fd00::5]:9000")
        for bad in ["minio.internal", "10.0.0.5:0", "10.0.0.5:70000", "[fd00::5]9000", "10.0.0"] {
            #expect(AllowedAddress(parsing: bad) == nil, "\(bad)")
        }
        #expect(Self.refusal("169.254.169.254", NetworkPolicy(allowsPrivateNetwork: true)) == nil)
    }

    @Test func urlsAreHTTPSWithoutCredentialsAndShownWithoutTheirQuery() throws {
        let policy = NetworkPolicy()
        func code(_ text: String, _ policy: NetworkPolicy = NetworkPolicy()) -> ExportError.Code? {
            do {
                try policy.check(try #require(URL(string: text)))
                return nil
            } catch let error as ExportError {
                return error.code
            } catch {
                return .internal
            }
        }
        #expect(code("https://cdn.example.com/a.mov") == nil)
        #expect(code("http://cdn.example.com/a.mov") == .urlRefused)
        #expect(code("http://cdn.example.com/a.mov", NetworkPolicy(allowsHTTP: true)) == nil)
        #expect(code("ftp://cdn.example.com/a.mov") == .urlRefused)
        #expect(code("https://user:pass@cdn.example.com/a.mov") == .urlRefused)
        _ = policy
        let presigned = try #require(
            URL(string: "https://bucket.s3.amazonaws.com/up/IMG_1.MOV?X-Amz-Signature=abc&X-Amz-Credential=def#x"))
        #expect(RemoteURL.redacted(presigned) == "https://bucket.s3.amazonaws.com/up/IMG_1.MOV")
        #expect(RemoteURL.fileName(presigned) == "IMG_1.MOV")
        #expect(RemoteURL.isRemote("HTTPS://x/y") && !RemoteURL.isRemote("/tmp/https://x"))
    }

    @Test func sha256IsCoreutilsSHA256() async throws {
        var generator = SeededGenerator(seed: 7)
        let bytes = (0..<3_000_001).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let file = Fixtures.scratchFolder("sha").appendingPathComponent("random.bin")
        try Data(bytes).write(to: file)
        let reference = try await Tools.run("sha256sum", [file.path])
        let hasher = SHA256()
        // Fed in uneven pieces, as a download's chunks arrive.
        var index = 0
        var step = 1
        while index < bytes.count {
            let end = min(bytes.count, index + step)
            bytes[index..<end].withUnsafeBytes { hasher.update($0) }
            index = end
            step = step * 3 + 1
        }
        let digest = hasher.finalizeHex()
        #expect(digest == String(reference.stdout.prefix(64)))
        #expect(SHA256.isDigest(digest) && SHA256.isDigest(digest.uppercased()) && !SHA256.isDigest("xyz"))
        let empty = SHA256()
        #expect(empty.finalizeHex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
