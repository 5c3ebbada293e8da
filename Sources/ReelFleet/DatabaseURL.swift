import Foundation
import NIOSSL
import PostgresNIO
import ReelQueue

/// Where the fleet's database is, read from a libpq-style URL:
/// `postgres://user[:password]@host[:port]/database[?sslmode=…&host=/socket/folder]`.
///
/// - `sslmode`: `disable`, `prefer` (the default: TLS when the server offers it, certificate not
///   checked, as libpq does), `require` (TLS, certificate not checked) or `verify-full` (TLS with the
///   system's trust roots and the host name checked).
/// - A password may come from the URL or from `PGPASSWORD`; the user defaults to `$USER`, the
///   database to the user's name (both read from the `environment` the host passes: the library
///   reads no environment variable itself).
/// - No host (or a `host=` query naming a folder) connects through the server's Unix socket.
public struct DatabaseURL: Sendable, CustomStringConvertible {
    public var user: String
    public var password: String?
    public var database: String
    /// TCP host, or nil for the Unix socket in `socketFolder`.
    public var host: String?
    public var port: Int
    public var socketFolder: String
    public var sslMode: String

    /// Parses a URL; throws `QueueError(.invalid)` naming what is wrong.
    public init(_ text: String, environment: [String: String] = [:]) throws(QueueError) {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else {
            throw QueueError(.invalid, "--store must be a postgres:// URL (postgres://user@host:5432/database)")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        user = components.user?.removingPercentEncoding ?? environment["USER"] ?? "postgres"
        password = components.password?.removingPercentEncoding ?? environment["PGPASSWORD"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? user : (path.removingPercentEncoding ?? path)
        port = components.port ?? Int(query["port"] ?? "") ?? 5432
        sslMode = query["sslmode"] ?? "prefer"
        guard ["disable", "prefer", "require", "verify-full"].contains(sslMode) else {
            throw QueueError(.invalid, "unknown sslmode '\(sslMode)' (use disable, prefer, require or verify-full)")
        }
        let queryHost = query["host"]
        if let queryHost, queryHost.hasPrefix("/") {
            host = nil
            socketFolder = queryHost
        } else if let name = components.host, !name.isEmpty {
            host = name
            socketFolder = "/var/run/postgresql"
        } else {
            host = nil
            socketFolder = "/var/run/postgresql"
        }
    }

    /// The URL without its password, for logs and errors.
    public var description: String {
        let place = host.map { "\($0):\(port)" } ?? "\(socketFolder)/.s.PGSQL.\(port)"
        return "postgres://\(user)@\(place)/\(database)"
    }

    /// The TLS settings libpq's `sslmode` names: none for `disable`; whether TLS is required.
    private var tlsSettings: (configuration: TLSConfiguration, required: Bool)? {
        var unchecked = TLSConfiguration.makeClientConfiguration()
        unchecked.certificateVerification = .none
        switch sslMode {
        case "disable": return nil
        case "require": return (unchecked, true)
        case "verify-full": return (.makeClientConfiguration(), true)
        default: return (unchecked, false)
        }
    }

    /// The pool's TLS setting.
    var tls: PostgresClient.Configuration.TLS {
        guard let settings = tlsSettings else { return .disable }
        return settings.required ? .require(settings.configuration) : .prefer(settings.configuration)
    }

    /// The configuration of one connection of its own (the notification listener, the probe that
    /// tells a refused connection from a slow answer), made as the pool would make it.
    func connectionConfiguration(connectTimeout: Duration, startupParameters: [(String, String)]) throws
        -> PostgresConnection.Configuration
    {
        var configuration: PostgresConnection.Configuration
        if let host {
            var connectionTLS = PostgresConnection.Configuration.TLS.disable
            if let settings = tlsSettings {
                let context = try NIOSSLContext(configuration: settings.configuration)
                connectionTLS = settings.required ? .require(context) : .prefer(context)
            }
            configuration = PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: connectionTLS)
        } else {
            configuration = PostgresConnection.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)", username: user, password: password,
                database: database)
        }
        configuration.options.connectTimeout = TimeAmount(connectTimeout)
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// A pool configuration for this database.
    func clientConfiguration() -> PostgresClient.Configuration {
        if let host {
            return PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        return PostgresClient.Configuration(
            unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)", username: user, password: password,
            database: database)
    }
}
