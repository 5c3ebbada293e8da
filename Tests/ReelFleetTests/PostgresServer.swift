import Foundation
import Synchronization
import TestSupport

/// A private PostgreSQL 15 cluster for the tests: `initdb` into a fresh folder under the system's
/// temporary folder, started with `pg_ctl` on a free loopback port (fsync off: nothing here needs to
/// survive a power cut), and removed when the test process ends, however it ends:
/// - an `atexit` hook stops it (immediate shutdown) and deletes its folder when the process exits;
/// - a guard process started beside it does the same once the test process is gone (killed, crashed),
///   so no server or folder is left behind.
///
/// PostgreSQL refuses to run as root: as root (CI), the server runs as Debian's `postgres` user
/// (`runuser`), which owns the cluster's folder; clients connect over TCP with trust authentication.
final class PostgresServer: Sendable {
    let folder: String
    let port: Int
    let binaries: String
    /// The superuser clients connect as.
    let user = "reel"
    private let databases = Atomic<Int>(0)

    /// The server most tests share (started on first use).
    static func shared() async throws -> PostgresServer { try await sharedServer.value }
    private static let sharedServer = Task { try await PostgresServer.start(label: "shared") }

    private init(folder: String, port: Int, binaries: String) {
        self.folder = folder
        self.port = port
        self.binaries = binaries
    }

    var dataFolder: String { folder + "/data" }

    /// A URL for database `name` on this server.
    func url(_ name: String) -> String { "postgres://\(user)@127.0.0.1:\(port)/\(name)?sslmode=disable" }

    /// Creates an empty database and returns its URL.
    func makeDatabase() async throws -> String {
        let name = "reel_\(databases.add(1, ordering: .relaxed).newValue)"
        try await psql("postgres", "CREATE DATABASE \(name)")
        return url(name)
    }

    /// Runs SQL with psql (for set-up and inspection; the store under test uses its own client).
    @discardableResult
    func psql(_ database: String, _ sql: String) async throws -> String {
        let result = try await Tools.run(
            "/usr/bin/psql",
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", user,
                "-d", database, "-c", sql,
            ],
            timeLimit: .seconds(60))
        guard result.status == 0 else { throw ToolFailure(message: "psql: \(sql): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: - Starting and stopping

    /// Starts a new cluster.
    static func start(label: String) async throws -> PostgresServer {
        TestLog.bootstrap()
        let binaries = try findBinaries()
        var template = Array((NSTemporaryDirectory() + "/reel-pg-\(label)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw ToolFailure(message: "cannot create a folder for PostgreSQL") }
        let folder = URL(fileURLWithPath: String(cString: made)).standardizedFileURL.path
        let server = PostgresServer(folder: folder, port: try Tools.freeLoopbackPort(), binaries: binaries)
        Cleanup.register(server)
        if getuid() == 0 {
            // The postgres user must own the cluster's folder and reach it.
            guard let account = getpwnam("postgres") else {
                throw ToolFailure(message: "running as root needs Debian's postgres user (Scripts/setup installs it)")
            }
            chown(folder, account.pointee.pw_uid, account.pointee.pw_gid)
            chmod(folder, 0o700)
        }
        try await server.run(
            "initdb",
            [
                "-D", server.dataFolder, "-U", server.user, "--auth=trust", "-E", "UTF8", "--no-sync",
                "--no-instructions",
            ])
        try await server.startServer()
        server.startGuard()
        return server
    }

    /// Starts (or restarts) the server process on its port and waits until it accepts connections.
    func startServer() async throws {
        let settings = [
            "-p \(port)", "-k \(folder)", "-c listen_addresses=127.0.0.1", "-c fsync=off",
            "-c full_page_writes=off", "-c max_connections=300", "-c shared_buffers=64MB",
        ].joined(separator: " ")
        try await run(
            "pg_ctl", ["-D", dataFolder, "-l", folder + "/server.log", "-o", settings, "-w", "-t", "60", "start"])
    }

    /// Stops the server at once (as a crash would), keeping its data.
    func stopServer() async throws {
        try await run("pg_ctl", ["-D", dataFolder, "-m", "immediate", "-w", "-t", "60", "stop"])
    }

    /// Runs one of the server's programs as the user that owns the cluster. (The server outlives it: it
    /// inherits no descriptor of this process but its log, as `Tools.run` closes every other one in
    /// the child, so it keeps no other tool's pipe open.)
    private func run(_ program: String, _ arguments: [String]) async throws {
        let path = binaries + "/" + program
        let command =
            getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments : [path] + arguments
        let result = try await Tools.run(command[0], Array(command.dropFirst()), timeLimit: .seconds(120))
        guard result.status == 0 else {
            throw ToolFailure(message: "\(program) failed: \(result.stderr)\(result.stdout)")
        }
    }

    /// Stops the server and removes its folder (synchronous: called at exit).
    func destroy() {
        let pgctl = binaries + "/pg_ctl"
        let arguments = ["-D", dataFolder, "-m", "immediate", "-w", "-t", "20", "stop"]
        if getuid() == 0 {
            Tools.runBlocking("/usr/sbin/runuser", ["-u", "postgres", "--", pgctl] + arguments)
        } else {
            Tools.runBlocking(pgctl, arguments)
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A shell that waits for this test process to end, then stops the server and removes its folder.
    private func startGuard() {
        let pgctl = getuid() == 0 ? "runuser -u postgres -- '\(binaries)/pg_ctl'" : "'\(binaries)/pg_ctl'"
        let script = """
            exec </dev/null >/dev/null 2>&1
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            if [ -d '\(folder)' ]; then \(pgctl) -D '\(dataFolder)' -m immediate -w -t 20 stop; rm -rf '\(folder)'; fi
            """
        try? Tools.startDetached("/usr/bin/setsid", ["/bin/bash", "-c", script])
    }

    /// Debian keeps the server's programs out of PATH, in /usr/lib/postgresql/<version>/bin.
    private static func findBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw ToolFailure(message: "no PostgreSQL server in \(root) (Scripts/setup installs postgresql-15)")
    }
}

/// Stops every server this process started when it exits.
private enum Cleanup {
    private static let servers = Mutex<[PostgresServer]>([])
    private static let hook = Atomic<Bool>(false)

    static func register(_ server: PostgresServer) {
        servers.withLock { $0.append(server) }
        if !hook.exchange(true, ordering: .relaxed) {
            atexit { Cleanup.destroyAll() }
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
