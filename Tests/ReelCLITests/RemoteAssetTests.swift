import Foundation
import TestSupport
import Testing

/// Assets named by URL, against a real nginx on loopback (`NginxServer`): network access asked for,
/// the policy's refusals (plain http, loopback, redirects into private addresses, the metadata
/// service), a download resumed with `Range`/`If-Range` after a kill, a changed object fetched again
/// whole, a SHA-256 checked before decoding, the cache serving a second request, TLS from a company
/// CA, a server that refuses HEAD, and the signature in a presigned URL's query never shown.
@Suite("Remote assets", .tags(.process, .media), .timeLimit(.minutes(8)))
struct RemoteAssetTests {
    /// What a presigned URL carries: it must appear in no output of Reel's.
    static let secret = "X-Amz-Signature=0123456789abcdefSECRET"

    /// A ~1.5 MB clip (4 s of 640x480 at 3 Mb/s): long enough to stop half-way at 100 kB/s.
    static func bigClip() async throws -> Data {
        let folder = Fixtures.scratchFolder("remote-src")
        let file = folder.appendingPathComponent("big.mp4")
        try await Tools.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30:duration=4", "-c:v", "libx264", "-preset", "ultrafast",
            "-b:v", "3M", "-pix_fmt", "yuv420p", file.path,
        ])
        return try Data(contentsOf: file)
    }

    static func sha256(_ data: Data) async throws -> String {
        let file = Fixtures.scratchFolder("remote-sum").appendingPathComponent("x")
        try data.write(to: file)
        let result = try await Tools.run("sha256sum", [file.path])
        return String(result.stdout.prefix(64))
    }

    /// `reel export <url> … --json` with the server allowed (plain http on its own address and port).
    static func export(
        _ url: String, server: NginxServer, cache: URL, output: URL, extra: [String] = [], allow: Bool = true
    ) async throws -> ToolResult {
        var arguments = [
            "export", url, "--preset", "640x480", "-o", output.path, "--download-cache", cache.path, "--json",
        ]
        if allow {
            arguments += [
                "--network-access", "--allow-http", "--allow-private-address", "127.0.0.1:\(server.port)",
            ]
        }
        let result = try await ReelBinary.run(arguments + extra)
        #expect(!result.stdout.contains("SECRET") && !result.stderr.contains("SECRET"), "the query was shown")
        return result
    }

    /// The `failed` event's error of a `--json` run.
    static func failure(_ result: ToolResult) -> (code: String, message: String)? {
        for line in result.stdout.split(separator: "\n").reversed() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "failed", let error = object["error"] as? [String: Any]
            else { continue }
            return (error["code"] as? String ?? "", error["message"] as? String ?? "")
        }
        return nil
    }

    /// Nothing in the download cache names the query.
    static func cacheHoldsNoSecret(_ cache: URL) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: cache.path)) ?? [] {
            #expect(!name.contains("SECRET"))
            if name.hasSuffix(".json"), let text = try? String(contentsOfFile: cache.path + "/" + name, encoding: .utf8)
            {
                #expect(!text.contains("SECRET"), "\(name): \(text)")
            }
        }
    }

    @Test func aURLNeedsNetworkAccessHTTPSAndAPublicAddress() async throws {
        let server = try await NginxServer.shared()
        try server.publish(try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)), as: "offline/clip.mp4")
        let cache = Fixtures.scratchFolder("remote-cache")
        let output = Fixtures.scratchFolder("remote-out").appendingPathComponent("out.mp4")
        let url = "\(server.base)/offline/clip.mp4?\(Self.secret)"
        let before = server.requests().count

        let offline = try await Self.export(url, server: server, cache: cache, output: output, allow: false)
        #expect(offline.status == 64, "\(offline.stderr)")
        #expect(Self.failure(offline)?.code == "network-access-required", "\(offline.stdout)")

        let http = try await ReelBinary.run([
            "export", url, "--preset", "640x480", "-o", output.path, "--download-cache", cache.path, "--json",
            "--network-access",
        ])
        #expect(http.status == 65 && Self.failure(http)?.code == "url-refused", "\(http.stdout)")
        #expect(Self.failure(http)?.message.contains("--allow-http") == true)

        let loopback = try await ReelBinary.run([
            "export", url, "--preset", "640x480", "-o", output.path, "--download-cache", cache.path, "--json",
            "--network-access", "--allow-http",
        ])
        #expect(loopback.status == 65 && Self.failure(loopback)?.code == "url-refused", "\(loopback.stdout)")
        #expect(Self.failure(loopback)?.message.contains("loopback") == true, "\(loopback.stdout)")
        #expect(!loopback.stdout.contains("SECRET") && !loopback.stderr.contains("SECRET"))
        // Refused before any request reached the server, and no output.
        #expect(server.requests(for: "/offline/clip.mp4", after: before).isEmpty, "\(server.requests())")
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    @Test func aDownloadIsExportedAndServedFromTheCacheTheSecondTime() async throws {
        let server = try await NginxServer.shared()
        let source = try Data(contentsOf: try await Fixtures.url(Fixtures.landscape))
        try server.publish(source, as: "cached/clip.mp4")
        let cache = Fixtures.scratchFolder("remote-cache")
        let outputs = Fixtures.scratchFolder("remote-out")
        let url = "\(server.base)/cached/clip.mp4?\(Self.secret)"
        let before = server.requests().count

        // --allow-root limits the paths a request names; the download cache is Reel's own.
        let first = try await Self.export(
            url, server: server, cache: cache, output: outputs.appendingPathComponent("a.mp4"),
            extra: ["--allow-root", outputs.path])
        #expect(first.status == 0, "\(first.stderr)")
        // The download is a phase of its own in the JSON progress lines.
        #expect(first.stdout.contains("\"phase\":\"downloading\""), "\(first.stdout)")
        let probed = try await ProbedFile.probe(outputs.appendingPathComponent("a.mp4"))
        #expect(probed.video?.width == 640 && probed.video?.height == 360)
        #expect(abs((probed.format.durationSeconds ?? 0) - 1) < 0.1)
        let logged = server.requests(for: "/cached/clip.mp4", after: before)
        #expect(logged.map { $0.split(separator: " ")[0] } == ["HEAD", "GET"], "\(logged)")

        let second = try await Self.export(
            url, server: server, cache: cache, output: outputs.appendingPathComponent("b.mp4"))
        #expect(second.status == 0, "\(second.stderr)")
        let again = server.requests(for: "/cached/clip.mp4", after: before)
        #expect(again.map { $0.split(separator: " ")[0] } == ["HEAD", "GET", "HEAD"], "one download: \(again)")
        Self.cacheHoldsNoSecret(cache)
        let sums = try await Tools.run("sha256sum", [outputs.path + "/a.mp4", outputs.path + "/b.mp4"])
        let digests = sums.stdout.split(separator: "\n").map { $0.prefix(64) }
        #expect(digests.count == 2 && digests[0] == digests[1], "the same export of the same bytes")
    }

    @Test func aStoppedDownloadResumesWithARangeAndAChangedObjectStartsOver() async throws {
        let server = try await NginxServer.shared()
        let clip = try await Self.bigClip()
        try server.publish(clip, as: "resume/big.mp4")
        let cache = Fixtures.scratchFolder("remote-cache")
        let outputs = Fixtures.scratchFolder("remote-out")
        let before = server.requests().count
        let allow = ["--network-access", "--allow-http", "--allow-private-address", "127.0.0.1:\(server.port)"]

        // Slowly (100 kB/s), stopped by SIGKILL once a third has arrived.
        func stopHalfWay(_ name: String) async throws {
            let process = try ReelBinary.start(
                [
                    "export", "\(server.base)/resume/\(name)?slow=1&\(Self.secret)", "--preset", "640x480", "-o",
                    outputs.appendingPathComponent("killed.mp4").path, "--download-cache", cache.path,
                ] + allow)
            let third = await eventually(within: .seconds(60)) { () -> Bool? in
                let names = (try? FileManager.default.contentsOfDirectory(atPath: cache.path)) ?? []
                let arrived = names.contains { name in
                    name.hasSuffix(".partial")
                        && ((try? FileManager.default.attributesOfItem(atPath: cache.path + "/" + name)[.size] as? Int)
                            ?? 0) > clip.count / 3
                }
                return arrived ? true : nil
            }
            #expect(third == true, "a third of the download did not arrive in a minute")
            process.signal(SIGKILL)
            _ = try await process.exit(within: .seconds(30))
        }
        try await stopHalfWay("big.mp4")
        let digest = try await Self.sha256(clip)
        let resumed = try await Self.export(
            "\(server.base)/resume/big.mp4?\(Self.secret)", server: server, cache: cache,
            output: outputs.appendingPathComponent("resumed.mp4"), extra: ["--sha256", digest])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let gets = server.requests(for: "/resume/big.mp4", after: before).filter { $0.hasPrefix("GET") }
        let last = try #require(gets.last)
        // `range=bytes=N-` with N a third or more in, and an If-Range naming the ETag.
        let start = last.firstMatch(of: /range=bytes=([0-9]+)- ifrange=[^\s-]\S*/).flatMap { Int($0.1) }
        #expect((start ?? 0) > clip.count / 3, "the resume: \(gets)")
        #expect(last.contains("206"), "\(last)")
        let probed = try await ProbedFile.probe(outputs.appendingPathComponent("resumed.mp4"), countFrames: true)
        #expect(probed.video?.frames == 120, "every frame of the resumed download")

        // Stopped again, then the object changes: the next run fetches the new one whole.
        try server.publish(clip, as: "resume/changing.mp4")
        try await stopHalfWay("changing.mp4")
        let changed = clip + Data(repeating: 0, count: 1000)  // trailing bytes after the moov: still a clip
        try server.publish(changed, as: "resume/changing.mp4")
        let mark = server.requests().count
        let fresh = try await Self.export(
            "\(server.base)/resume/changing.mp4?\(Self.secret)", server: server, cache: cache,
            output: outputs.appendingPathComponent("fresh.mp4"), extra: ["--sha256", try await Self.sha256(changed)])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        let refetched = server.requests(for: "/resume/changing.mp4", after: mark).filter { $0.hasPrefix("GET") }
        #expect(refetched.count == 1 && refetched[0].contains("range=- "), "whole, from zero: \(refetched)")
        Self.cacheHoldsNoSecret(cache)
    }

    @Test func aWrongChecksumOrSizeFailsBeforeDecodingAndKeepsNothing() async throws {
        let server = try await NginxServer.shared()
        try server.publish(try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)), as: "sum/clip.mp4")
        let cache = Fixtures.scratchFolder("remote-cache")
        let output = Fixtures.scratchFolder("remote-out").appendingPathComponent("out.mp4")
        let wrong = String(repeating: "ab", count: 32)
        let result = try await Self.export(
            "\(server.base)/sum/clip.mp4?\(Self.secret)", server: server, cache: cache, output: output,
            extra: ["--sha256", wrong])
        #expect(result.status == 65, "\(result.stderr)")
        let failure = try #require(Self.failure(result))
        #expect(failure.code == "checksum-mismatch" && failure.message.contains("SHA-256"), "\(failure)")
        #expect(!FileManager.default.fileExists(atPath: output.path))
        let left = ((try? FileManager.default.contentsOfDirectory(atPath: cache.path)) ?? []).filter {
            !$0.hasSuffix(".lock")
        }
        #expect(left.isEmpty, "the bytes are removed: \(left)")

        // An input limit is applied from the declared size, before the body is asked for.
        let big = try await Self.bigClip()
        try server.publish(big, as: "sum/big.mp4")
        let mark = server.requests().count
        let limited = try await Self.export(
            "\(server.base)/sum/big.mp4", server: server, cache: cache, output: output, extra: ["--max-file-size", "1"])
        #expect(Self.failure(limited)?.code == "limit-exceeded", "\(limited.stdout)")
        #expect(server.requests(for: "/sum/big.mp4", after: mark).allSatisfy { $0.hasPrefix("HEAD") })
    }

    @Test func everyRedirectIsCheckedOnTheAddressItLeadsTo() async throws {
        let server = try await NginxServer.shared()
        try server.publish(try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)), as: "clip.mp4")
        let cache = Fixtures.scratchFolder("remote-cache")
        let output = Fixtures.scratchFolder("remote-out").appendingPathComponent("out.mp4")
        for (path, words) in [
            ("/redirect/private", "127.0.0.1"), ("/redirect/metadata", "cloud metadata"),
            ("/redirect/name", "loopback"),
        ] {
            let result = try await Self.export(
                "\(server.base)\(path)?\(Self.secret)", server: server, cache: cache, output: output)
            let failure = Self.failure(result)
            #expect(result.status == 65 && failure?.code == "url-refused", "\(path): \(result.stdout)")
            #expect(failure?.message.contains(words) == true, "\(path): \(failure?.message ?? "")")
        }
        #expect(!FileManager.default.fileExists(atPath: output.path))
        // A redirect to an allowed address is followed.
        let same = try await Self.export("\(server.base)/redirect/same", server: server, cache: cache, output: output)
        #expect(same.status == 0, "\(same.stderr)")
    }

    @Test func httpsWithTheCompanyCAAndAServerThatRefusesHEAD() async throws {
        let server = try await NginxServer.shared()
        try server.publish(try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)), as: "tls/clip.mp4")
        let cache = Fixtures.scratchFolder("remote-cache")
        let outputs = Fixtures.scratchFolder("remote-out")
        let base = [
            "--preset", "640x480", "--download-cache", cache.path, "--json", "--network-access",
            "--allow-private-address", "127.0.0.1:\(server.tlsPort)",
        ]
        let url = "\(server.tlsBase)/tls/clip.mp4?\(Self.secret)"
        let untrusted = try await ReelBinary.run(["export", url, "-o", outputs.path + "/a.mp4"] + base)
        #expect(untrusted.status == 69 && Self.failure(untrusted)?.code == "download-failed", "\(untrusted.stdout)")
        #expect(!untrusted.stdout.contains("SECRET") && !untrusted.stderr.contains("SECRET"))
        let trusted = try await ReelBinary.run(
            ["export", url, "-o", outputs.path + "/b.mp4", "--ca-certificates", server.caFile] + base)
        #expect(trusted.status == 0, "\(trusted.stderr)\(trusted.stdout)")

        // A presigned GET URL refuses HEAD: the size and ETag come from a one-byte ranged GET.
        let mark = server.requests().count
        let headless = try await ReelBinary.run(
            [
                "export", "\(server.tlsBase)/nohead/tls/clip.mp4", "-o", outputs.path + "/c.mp4", "--ca-certificates",
                server.caFile,
            ] + base)
        #expect(headless.status == 0, "\(headless.stderr)")
        let logged = server.requests(for: "/nohead/tls/clip.mp4", after: mark)
        #expect(logged.count == 3 && logged[0].hasPrefix("HEAD /nohead/tls/clip.mp4 405"), "\(logged)")
        #expect(logged.count == 3 && logged[1].contains("range=bytes=0-0"), "\(logged)")
    }

    @Test func probeThumbnailAndImageReadURLsToo() async throws {
        let server = try await NginxServer.shared()
        try server.publish(try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)), as: "tools/clip.mp4")
        let folder = Fixtures.scratchFolder("remote-tools")
        let jpeg = folder.appendingPathComponent("photo.jpg")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=800x600", "-frames:v", "1", jpeg.path])
        try server.publish(try Data(contentsOf: jpeg), as: "tools/photo.jpg")
        let allow = [
            "--network-access", "--allow-http", "--allow-private-address", "127.0.0.1:\(server.port)",
            "--download-cache", Fixtures.scratchFolder("remote-cache").path,
        ]
        func checked(_ arguments: [String]) async throws -> ToolResult {
            let result = try await ReelBinary.run(arguments + allow)
            #expect(result.status == 0, "\(arguments[0]): \(result.stderr)")
            #expect(!result.stdout.contains("SECRET") && !result.stderr.contains("SECRET"), "the query was shown")
            return result
        }

        // probe names the URL (without its query), never the cache's file.
        let probe = try await checked(["probe", "\(server.base)/tools/clip.mp4?\(Self.secret)", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])
        #expect(report["path"] as? String == "\(server.base)/tools/clip.mp4", "\(report["path"] ?? "")")

        // thumbnail names its pictures after the URL's file name.
        let thumbs = folder.appendingPathComponent("thumbs")
        _ = try await checked([
            "thumbnail", "\(server.base)/tools/clip.mp4?\(Self.secret)", "--at", "0.5", "-o", thumbs.path + "/",
        ])
        let made = try FileManager.default.contentsOfDirectory(atPath: thumbs.path)
        #expect(made == ["clip-001.jpg"], "\(made)")
        #expect(try await ProbedFile.probe(thumbs.appendingPathComponent("clip-001.jpg")).video?.width == 640)

        // image renders a photo URL.
        let image = folder.appendingPathComponent("small.jpg")
        _ = try await checked([
            "image", "\(server.base)/tools/photo.jpg?\(Self.secret)", "--size", "200x200", "-o", image.path,
        ])
        let picture = try await ProbedFile.probe(image).video
        #expect(picture?.width == 200 && picture?.height == 150, "\(String(describing: picture))")
    }

    @Test func aQueuedJobDownloadsUnderTheWorkersPolicyAndNoStatusFileHoldsTheSignature() async throws {
        let server = try await NginxServer.shared()
        try server.publish(try Data(contentsOf: try await Fixtures.url(Fixtures.landscape)), as: "queue/clip.mp4")
        let spool = Fixtures.scratchFolder("remote-spool")
        let outputs = Fixtures.scratchFolder("remote-out")
        let cache = Fixtures.scratchFolder("remote-cache")
        let environment = ["REEL_SPOOL": spool.path]
        let url = "\(server.base)/queue/clip.mp4?\(Self.secret)"
        var said = ""
        func reel(_ arguments: [String]) async throws -> ToolResult {
            let result = try await ReelBinary.run(arguments, environment: environment)
            said += result.stdout + result.stderr
            return result
        }
        func submitted(_ result: ToolResult) throws -> String {
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            return try #require(object?["id"] as? String, "\(result.stdout)\(result.stderr)")
        }
        func status(_ id: String) throws -> [String: Any] {
            let data = try Data(contentsOf: spool.appendingPathComponent("status/\(id).json"))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        // The job must allow the download: refused at submit otherwise, as PhotoKit's in-cloud result.
        let refused = try await reel(["submit", url, "--preset", "640x480", "--output-dir", outputs.path, "--json"])
        #expect(refused.status == 64, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stdout.contains("network-access-required"), "\(refused.stdout)")

        // Allowed by the job, refused by a worker whose policy keeps to public https: failed for good.
        let strict = try submitted(
            try await reel([
                "submit", url, "--preset", "640x480", "-o", outputs.path + "/strict.mp4", "--network-access", "--json",
            ]))
        let strictWorker = try await reel(["work", "--drain", "--download-cache", cache.path])
        #expect(strictWorker.status == 0, "\(strictWorker.stderr)")
        let failed = try status(strict)
        #expect(failed["state"] as? String == "failed", "\(failed)")
        #expect((failed["error"] as? [String: Any])?["code"] as? String == "url-refused", "\(failed)")

        // A worker that allows the server: the job downloads (resumable, cached) and completes.
        let good = try submitted(
            try await reel([
                "submit", url, "--preset", "640x480", "--output-dir", outputs.path, "--network-access", "--json",
            ]))
        // A queued thumbnail set of the same URL: its pictures named after the URL's file.
        let thumbs = outputs.appendingPathComponent("thumbs")
        let set = try submitted(
            try await reel([
                "thumbnail", url, "--count", "2", "--submit", "--network-access", "-o", thumbs.path, "--json",
            ]))
        // Its --allow-root is about the paths a request may name: the download cache is the worker's own.
        let worker = try await reel([
            "work", "--drain", "--download-cache", cache.path, "--allow-http", "--allow-private-address",
            "127.0.0.1:\(server.port)", "--allow-root", outputs.path,
        ])
        #expect(worker.status == 0, "\(worker.stderr)")
        let done = try status(good)
        #expect(done["state"] as? String == "completed", "\(done)")
        #expect(done["asset"] as? String == "\(server.base)/queue/clip.mp4")
        let output = try #require(done["output"] as? String)
        #expect(output.hasSuffix("/clip.640x480.\(good).mp4"), "named after the URL's file: \(output)")
        let probed = try await ProbedFile.probe(URL(fileURLWithPath: output))
        #expect(probed.video?.width == 640 && abs((probed.format.durationSeconds ?? 0) - 1) < 0.1)
        let setStatus = try status(set)
        #expect(setStatus["state"] as? String == "completed", "\(setStatus)")
        let pictures = try FileManager.default.contentsOfDirectory(atPath: thumbs.path).sorted()
        #expect(pictures == ["clip-001.jpg", "clip-002.jpg"], "\(pictures)")

        // The signature is in the spool's credential file (mode 0600), in no status file and in no
        // output of any command.
        for name in try FileManager.default.contentsOfDirectory(atPath: spool.path + "/status") {
            let text = try String(contentsOfFile: spool.path + "/status/" + name, encoding: .utf8)
            #expect(!text.contains("SECRET"), "\(name) holds the signature")
        }
        let credential = spool.path + "/jobs/\(good).credential"
        #expect(try String(contentsOfFile: credential, encoding: .utf8) == Self.secret)
        let mode = try FileManager.default.attributesOfItem(atPath: credential)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let shown = try await reel(["status", good, "--json"])
        #expect(shown.status == 0 && shown.stdout.contains("\"hasQuery\":true"), "\(shown.stdout)")
        #expect(!said.contains("SECRET"), "a command showed the signature")
    }

    @Test func anOutputIsUploadedToAPresignedPUTURLAndKeptWhenTheServerRefusesIt() async throws {
        let server = try await NginxServer.shared()
        let source = try await Fixtures.url(Fixtures.landscape).path
        let cache = Fixtures.scratchFolder("remote-cache")
        let allow = [
            "--network-access", "--allow-http", "--allow-private-address", "127.0.0.1:\(server.port)",
            "--download-cache", cache.path, "--json",
        ]
        let put = "\(server.base)/put/up/clip.mp4"
        let sent = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "-o", "\(put)?\(Self.secret)"] + allow)
        #expect(sent.status == 0, "\(sent.stderr)\(sent.stdout)")
        #expect(!sent.stdout.contains("SECRET") && !sent.stderr.contains("SECRET"))
        #expect(sent.stdout.contains("\"phase\":\"uploading\""), "\(sent.stdout)")
        let last = try #require(
            sent.stdout.split(separator: "\n").last.flatMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            })
        #expect(last["output"] as? String == put, "\(last)")
        let upload = try #require(last["upload"] as? [String: Any], "\(last)")
        let stored = server.root + "/put/up/clip.mp4"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: stored)[.size] as? Int)
        #expect(upload["url"] as? String == put && upload["bytes"] as? Int == size, "\(upload)")
        let probed = try await ProbedFile.probe(URL(fileURLWithPath: stored))
        #expect(probed.video?.width == 640 && abs((probed.format.durationSeconds ?? 0) - 1) < 0.1)
        let staged = (FileManager.default.enumerator(atPath: cache.path + "/uploads")?.allObjects as? [String]) ?? []
        #expect(staged.isEmpty, "the staging folder is removed once the server has the file: \(staged)")
        #expect(server.requests(for: "/put/up/clip.mp4").contains { $0.hasPrefix("PUT /put/up/clip.mp4 201") })

        // A server that refuses the upload: upload-failed, and the verified output kept where it says.
        let refused = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "-o", "\(server.base)/readonly/clip.mp4?\(Self.secret)"] + allow)
        #expect(refused.status == 69, "\(refused.stderr)")
        let failure = try #require(Self.failure(refused))
        #expect(failure.code == "upload-failed" && failure.message.contains("403"), "\(failure)")
        #expect(!refused.stdout.contains("SECRET") && !refused.stderr.contains("SECRET"))
        let kept = try #require(failure.message.firstMatch(of: /kept at (\S+)\)/).map { String($0.1) })
        #expect(try await ProbedFile.probe(URL(fileURLWithPath: kept)).video?.width == 640)

        // Without network access nothing is exported.
        let offline = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "-o", put, "--download-cache", cache.path, "--json"])
        #expect(offline.status == 64 && Self.failure(offline)?.code == "network-access-required", "\(offline.stdout)")
    }

    /// A server that fails the first GET and the first PUT of each path with 503 (Python's
    /// http.server, written for the test): what a busy object store does.
    static let flakyServer = """
        import http.server, os, sys, threading
        body = open(sys.argv[1], "rb").read()
        log = open(sys.argv[2], "a", buffering=1)
        seen = {}
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args): pass
            def answer(self, status, data=b"", headers=()):
                path = self.path.split("?")[0]
                log.write(f"{self.command} {path} {status}\\n")
                self.send_response(status)
                for name, value in headers: self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD": self.wfile.write(data)
            def first(self):
                key = (self.command, self.path.split("?")[0])
                with lock:
                    seen[key] = seen.get(key, 0) + 1
                    return seen[key] == 1
            def do_HEAD(self):
                self.answer(200, body, [("ETag", '"v1"'), ("Accept-Ranges", "bytes")])
            def do_GET(self):
                if self.first(): return self.answer(503, b"busy")
                self.answer(200, body, [("ETag", '"v1"'), ("Accept-Ranges", "bytes")])
            def do_PUT(self):
                data = self.rfile.read(int(self.headers["Content-Length"]))
                if self.first(): return self.answer(503, b"busy")
                open(sys.argv[3], "wb").write(data)
                self.answer(201, b"", [("ETag", '"put-1"')])
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        open(sys.argv[4], "w").write(str(server.server_address[1]))
        server.serve_forever()
        """

    @Test func aBusyServerIsAskedAgainAndTheTransferCompletesOnce() async throws {
        let folder = Fixtures.scratchFolder("remote-flaky")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let script = folder.appendingPathComponent("flaky.py")
        try Self.flakyServer.write(to: script, atomically: true, encoding: .utf8)
        let (log, stored, portFile) = (
            folder.path + "/requests.log", folder.path + "/stored.mp4", folder.path + "/port"
        )
        let server = try BackgroundProcess("/usr/bin/python3", [script.path, source, log, stored, portFile])
        defer { server.signal(SIGKILL) }
        let port = try #require(
            await eventually { (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) } },
            "the test server did not start")
        let allow = [
            "--network-access", "--allow-http", "--allow-private-address", "127.0.0.1:\(port)", "--download-cache",
            folder.path + "/cache", "--json",
        ]
        let result = try await ReelBinary.run(
            [
                "export", "http://127.0.0.1:\(port)/flaky.mp4?\(Self.secret)", "--preset", "640x480", "-o",
                "http://127.0.0.1:\(port)/upload.mp4?\(Self.secret)",
            ] + allow)
        #expect(result.status == 0, "\(result.stderr)\(result.stdout)")
        #expect(!result.stdout.contains("SECRET") && !result.stderr.contains("SECRET"))
        let requests = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        // One HEAD, the GET refused then answered, the PUT refused then taken: each done once.
        #expect(
            requests == [
                "HEAD /flaky.mp4 200", "GET /flaky.mp4 503", "GET /flaky.mp4 200", "PUT /upload.mp4 503",
                "PUT /upload.mp4 201",
            ], "\(requests)")
        let last = result.stdout.split(separator: "\n").last.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let upload = last?["upload"] as? [String: Any]
        #expect(upload?["etag"] as? String == "\"put-1\"", "\(String(describing: last))")
        let probed = try await ProbedFile.probe(URL(fileURLWithPath: stored))
        #expect(probed.video?.width == 640 && abs((probed.format.durationSeconds ?? 0) - 1) < 0.1)
    }
}
