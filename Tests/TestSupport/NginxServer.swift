import Foundation
import Synchronization

/// A private nginx for the remote-asset tests: Debian's nginx on two free loopback ports (plain http
/// and TLS with a certificate from a CA made for the run), serving `root`, logging every request with
/// its `Range` and `If-Range` headers, and stopped when the test process ends however it ends (an
/// `atexit` hook, and a guard shell that outlives a crash), as the fleet's PostgreSQL is.
///
/// Locations the tests use beside the plain files: `?slow=1` limits the rate (100 kB/s) so a download
/// can be stopped half-way; `/nohead/<file>` refuses HEAD (405), as a presigned GET URL does;
/// `/redirect/private`, `/redirect/metadata` and `/redirect/name` answer 302 into loopback on another
/// port, the cloud metadata address and `localhost` on that port; `/redirect/same` to `/clip` on this server;
/// `/put/…` takes uploads (WebDAV's PUT, as a presigned PUT URL), `/readonly/…` refuses them (403).
public final class NginxServer: Sendable {
    public let folder: String
    /// Files served: `http://127.0.0.1:<port>/<name>`.
    public let root: String
    public let port: Int
    public let tlsPort: Int
    /// The CA that signed the TLS certificate (for `127.0.0.1` and `localhost`), PEM.
    public let caFile: String

    public static func shared() async throws -> NginxServer { try await sharedServer.value }
    private static let sharedServer = Task { try await NginxServer.start() }

    private init(folder: String, port: Int, tlsPort: Int) {
        self.folder = folder
        root = folder + "/html"
        self.port = port
        self.tlsPort = tlsPort
        caFile = folder + "/ca.pem"
    }

    public var base: String { "http://127.0.0.1:\(port)" }
    public var tlsBase: String { "https://127.0.0.1:\(tlsPort)" }

    /// The access log's lines: `METHOD URI STATUS range=… ifrange=… sent=…` (the URI without query).
    public func requests() -> [String] {
        let text = (try? String(contentsOfFile: folder + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Requests for `path` (e.g. `/clip.mp4`) logged since the log had `after` lines.
    public func requests(for path: String, after: Int = 0) -> [String] {
        requests().dropFirst(after).filter { $0.split(separator: " ").dropFirst().first.map(String.init) == path }
    }

    /// Puts `data` at `root/name` (replacing it: a new ETag).
    public func publish(_ data: Data, as name: String) throws {
        let path = root + "/" + name
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        chmod(path, 0o644)
    }

    static func start() async throws -> NginxServer {
        var template = Array((NSTemporaryDirectory() + "/reel-nginx-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw ToolFailure(message: "cannot create a folder for nginx") }
        let folder = URL(fileURLWithPath: String(cString: made)).standardizedFileURL.path
        chmod(folder, 0o755)
        let server = NginxServer(
            folder: folder, port: try Tools.freeLoopbackPort(), tlsPort: try Tools.freeLoopbackPort())
        NginxCleanup.register(server)
        try FileManager.default.createDirectory(atPath: server.root, withIntermediateDirectories: true)
        chmod(server.root, 0o755)
        try await server.makeCertificates()
        let metadataPort = try Tools.freeLoopbackPort()
        let user = getuid() == 0 ? "user root;" : ""
        let temps = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map {
            "\($0)_temp_path \(folder)/\($0);"
        }.joined(separator: "\n    ")
        let files = """
                location /nohead/ {
                    if ($request_method = HEAD) { return 405; }
                    alias \(server.root)/;
                }
                location = /redirect/private { return 302 http://127.0.0.1:\(metadataPort)/clip.mp4; }
                location = /redirect/metadata { return 302 http://169.254.169.254/latest/meta-data/; }
                location = /redirect/name { return 302 http://localhost:\(metadataPort)/clip.mp4; }
                location = /redirect/same { return 302 /clip.mp4; }
                location /put/ {
                    dav_methods PUT;
                    create_full_put_path on;
                    client_max_body_size 0;
                }
                location /readonly/ {
                    limit_except GET { deny all; }
                }
                location / {
                    if ($arg_slow) { set $limit_rate 100k; }
                }
            """
        let configuration = """
            \(user)
            worker_processes 1;
            pid \(folder)/nginx.pid;
            error_log \(folder)/error.log;
            events { worker_connections 64; }
            http {
                \(temps)
                log_format reel '$request_method $uri $status range=$http_range ifrange=$http_if_range sent=$body_bytes_sent';
                access_log \(folder)/access.log reel;
                default_type application/octet-stream;
                root \(server.root);
                server {
                    listen 127.0.0.1:\(server.port);
            \(files)
                }
                server {
                    listen 127.0.0.1:\(server.tlsPort) ssl;
                    ssl_certificate \(folder)/server.pem;
                    ssl_certificate_key \(folder)/server.key;
            \(files)
                }
            }
            """
        try configuration.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
        let started = try await Tools.run(
            "/usr/sbin/nginx", ["-p", folder, "-e", folder + "/error.log", "-c", folder + "/nginx.conf"],
            timeLimit: .seconds(30))
        guard started.status == 0 else {
            let log = (try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? ""
            throw ToolFailure(message: "nginx did not start (Scripts/setup installs it): \(started.stderr)\(log)")
        }
        server.startGuard()
        return server
    }

    /// A CA, and a certificate it signs for 127.0.0.1 and localhost.
    private func makeCertificates() async throws {
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Reel test CA",
                "-keyout", folder + "/ca.key", "-out", folder + "/ca.pem",
            ],
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", folder + "/server.key",
                "-out", folder + "/server.csr",
            ],
            [
                "x509", "-req", "-in", folder + "/server.csr", "-CA", folder + "/ca.pem", "-CAkey", folder + "/ca.key",
                "-CAcreateserial", "-days", "2", "-out", folder + "/server.pem", "-extfile", folder + "/san.cnf",
            ],
        ]
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: folder + "/san.cnf", atomically: true, encoding: .utf8)
        for step in steps {
            let result = try await Tools.run("/usr/bin/openssl", step, timeLimit: .seconds(60))
            guard result.status == 0 else {
                throw ToolFailure(message: "openssl \(step[0]) failed: \(result.stderr)")
            }
        }
    }

    /// Stops nginx and removes its folder (synchronous: called at exit).
    func destroy() {
        if let text = try? String(contentsOfFile: folder + "/nginx.pid", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(pid, SIGTERM)
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A shell that waits for this test process to end, then stops nginx and removes its folder.
    private func startGuard() {
        let script = """
            exec </dev/null >/dev/null 2>&1
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            if [ -f '\(folder)/nginx.pid' ]; then kill "$(cat '\(folder)/nginx.pid')"; fi
            sleep 1; rm -rf '\(folder)'
            """
        try? Tools.startDetached("/usr/bin/setsid", ["/bin/bash", "-c", script])
    }
}

/// Stops the servers this process started when it exits.
private enum NginxCleanup {
    private static let servers = Mutex<[NginxServer]>([])
    private static let hook = Atomic<Bool>(false)

    static func register(_ server: NginxServer) {
        servers.withLock { $0.append(server) }
        if !hook.exchange(true, ordering: .relaxed) {
            atexit { NginxCleanup.destroyAll() }
        }
    }

    static func destroyAll() {
        let all = servers.withLock { servers in
            defer { servers = [] }
            return servers
        }
        for server in all { server.destroy() }
    }
}
