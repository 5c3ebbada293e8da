import Foundation
import TestSupport

/// A spool to submit to and poll, as a client sees it.
struct Queue {
    let spool = Fixtures.scratchFolder("spool")
    let outputs = Fixtures.scratchFolder("outputs")

    var environment: [String: String] { ["REEL_SPOOL": spool.path] }

    /// Submits a job; returns its id.
    func submit(_ asset: String, preset: String, extra: [String] = []) async throws -> String {
        let result = try await ReelBinary.run(
            ["submit", asset, "--preset", preset, "--output-dir", outputs.path, "--json"] + extra,
            environment: environment)
        guard result.status == 0,
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let id = json["id"] as? String
        else { throw ToolFailure(message: "submit failed: \(result.stderr)\(result.stdout)") }
        return id
    }

    /// A job that fails with `unreadable-input` however much checking submit does: its asset (a copy of
    /// a fixture) is deleted once it is submitted. Submit it before a worker starts.
    func submitVanishing(preset: String, extra: [String] = []) async throws -> String {
        let copy = Fixtures.scratchFolder("vanishing").appendingPathComponent("gone.mp4")
        try FileManager.default.copyItem(at: try await Fixtures.url(Fixtures.landscape), to: copy)
        let id = try await submit(copy.path, preset: preset, extra: extra)
        try FileManager.default.removeItem(at: copy)
        return id
    }

    /// A job's status file.
    func status(_ id: String) -> [String: Any]? {
        FileManager.default.contents(atPath: spool.appendingPathComponent("status/\(id).json").path)
            .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    func state(_ id: String) -> String? { status(id)?["state"] as? String }
    func progress(_ id: String) -> Double { status(id)?["progress"] as? Double ?? 0 }
}

/// A `reel work --metrics-port 0` worker on a queue, with its HTTP side found from its log.
struct ServedWorker {
    let queue: Queue
    let process: BackgroundProcess
    let port: Int

    var spool: URL { queue.spool }

    /// Starts a worker on `queue` and waits for its HTTP side.
    static func start(
        queue: Queue = Queue(), _ extra: [String] = [], environment: [String: String] = [:],
        statsInterval: String = "0.2"
    ) async throws -> ServedWorker {
        let process = try ReelBinary.start(
            ["work", "--metrics-port", "0", "--stats-interval", statsInterval] + extra,
            environment: environment.merging(queue.environment) { $1 })
        let port = await eventually(within: .seconds(60)) { () -> Int? in
            guard let range = process.output.range(of: "url=http://127.0.0.1:") else { return nil }
            return Int(process.output[range.upperBound...].prefix { $0.isNumber })
        }
        guard let port else {
            throw ToolFailure(message: "the worker did not say where it serves; it wrote:\n\(process.output)")
        }
        return ServedWorker(queue: queue, process: process, port: port)
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// GETs `path` with curl: the status code and body.
    func get(_ path: String) async throws -> (status: Int, body: String) {
        let result = try await Tools.run(
            "curl", ["-s", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", url(path)],
            timeLimit: .seconds(30))
        guard result.status == 0, let newline = result.stdout.lastIndex(of: "\n") else {
            throw ToolFailure(message: "curl \(url(path)) failed (\(result.status)): \(result.stderr)")
        }
        return (Int(result.stdout[result.stdout.index(after: newline)...]) ?? 0, String(result.stdout[..<newline]))
    }

    func submit(_ asset: String, preset: String, extra: [String] = []) async throws -> String {
        try await queue.submit(asset, preset: preset, extra: extra)
    }
    func status(_ id: String) -> [String: Any]? { queue.status(id) }
    func state(_ id: String) -> String? { queue.state(id) }
    func progress(_ id: String) -> Double { queue.progress(id) }

    /// Ends the worker at once: SIGTERM, then (once it says it is stopping) SIGINT to hand jobs back.
    func stop() async {
        process.signal(SIGTERM)
        _ = await eventually(within: .seconds(10)) { process.output.contains("stopping") ? true : nil }
        process.signal(SIGINT)
        _ = try? await process.exit(within: .seconds(60))
    }
}

/// One sample of Prometheus' text format.
struct Sample: CustomStringConvertible {
    var name: String
    var labels: [String: String]
    var value: Double
    var description: String { "\(name)\(labels) \(value)" }
}

/// Parses Prometheus' text exposition format (the subset a registry writes: no timestamps).
enum PrometheusText {
    static func parse(_ text: String) throws -> [Sample] {
        var samples: [Sample] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
            var rest = Substring(line)
            let name = String(rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" })
            rest = rest.dropFirst(name.count)
            var labels: [String: String] = [:]
            if rest.first == "{" {
                rest = rest.dropFirst()
                while rest.first != "}" {
                    let key = String(rest.prefix { $0 != "=" })
                    rest = rest.dropFirst(key.count)
                    guard rest.hasPrefix("=\"") else { throw ToolFailure(message: "bad label in: \(line)") }
                    rest = rest.dropFirst(2)
                    var value = ""
                    while let character = rest.first, character != "\"" {
                        if character == "\\", let next = rest.dropFirst().first {
                            value.append(next == "n" ? "\n" : next)
                            rest = rest.dropFirst(2)
                        } else {
                            value.append(character)
                            rest = rest.dropFirst()
                        }
                    }
                    rest = rest.dropFirst()
                    labels[key] = value
                    if rest.first == "," { rest = rest.dropFirst() }
                    guard !rest.isEmpty else { throw ToolFailure(message: "unterminated labels in: \(line)") }
                }
                rest = rest.dropFirst()
            }
            let field = rest.trimmingCharacters(in: .whitespaces)
            let number = field == "+Inf" ? Double.infinity : field == "-Inf" ? -Double.infinity : Double(field)
            guard !name.isEmpty, let number else { throw ToolFailure(message: "cannot read the sample: \(line)") }
            samples.append(Sample(name: name, labels: labels, value: number))
        }
        return samples
    }
}

extension [Sample] {
    /// The value of the one sample with this name and these labels (nil when there is none).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        first { $0.name == name && $0.labels == labels }?.value
    }

    /// Samples of a family whose labels include `labels`.
    func family(_ name: String, matching labels: [String: String] = [:]) -> [Sample] {
        filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }
}

/// Debian's Chromium, headless: loads a page, runs its scripts, and returns the rendered DOM.
enum Chromium {
    static var executable: String? {
        ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// The DOM of `url` after its scripts have run for `budget` of (virtual) time.
    static func dom(_ url: String, budget: Duration = .seconds(3)) async throws -> String {
        guard let executable else {
            throw ToolFailure(message: "no Chromium; Scripts/setup installs Debian's chromium package")
        }
        let profile = Fixtures.scratchFolder("chromium")
        let result = try await Tools.run(
            executable,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--user-data-dir=\(profile.path)",
                "--virtual-time-budget=\(Int(budget / .milliseconds(1)))", "--dump-dom", url,
            ], timeLimit: .seconds(90))
        try? FileManager.default.removeItem(at: profile)
        guard result.status == 0, result.stdout.contains("</html>") else {
            throw ToolFailure(
                message: "chromium could not load \(url) (\(result.status)): \(result.stderr.suffix(2000))")
        }
        return result.stdout
    }
}

/// Small readings of a serialized DOM.
enum DOM {
    /// The `<tr …data-job="id"…>…</tr>` row of a table section, if present.
    static func row(_ html: String, table: String, job: String) -> String? {
        guard let start = html.range(of: "<table id=\"\(table)\"") else { return nil }
        let tableHTML = html[start.lowerBound...]
        guard let end = tableHTML.range(of: "</table>") else { return nil }
        let body = tableHTML[..<end.lowerBound]
        guard let rowStart = body.range(of: "data-job=\"\(job)\"") else { return nil }
        guard let rowEnd = body[rowStart.upperBound...].range(of: "</tr>") else { return nil }
        return String(body[rowStart.lowerBound..<rowEnd.upperBound])
    }

    /// The value of `attribute="…"` after `marker` in `html`.
    static func attribute(_ attribute: String, in html: String, after marker: String = "") -> String? {
        guard let from = marker.isEmpty ? html.startIndex : html.range(of: marker)?.upperBound,
            let start = html[from...].range(of: "\(attribute)=\"")
        else { return nil }
        return String(html[start.upperBound...].prefix { $0 != "\"" })
    }

    /// The text of the first element with `class="…name…"` in `html` (tags removed).
    static func text(ofClass name: String, in html: String) -> String? {
        guard let classAt = html.range(of: "class=\"[^\"]*\\b\(name)\\b[^\"]*\"", options: .regularExpression),
            let open = html[classAt.upperBound...].firstIndex(of: ">"),
            let close = html[open...].range(of: "</")
        else { return nil }
        return String(html[html.index(after: open)..<close.lowerBound])
            .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
    }
}

/// A Unix datagram socket standing in for systemd's notification socket (`NOTIFY_SOCKET`).
final class NotifySocket: Sendable {
    let path: String
    private let descriptor: Int32

    init() throws {
        path = Fixtures.scratchFolder("notify").appendingPathComponent("notify.sock").path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard descriptor >= 0, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ToolFailure(message: "cannot make a socket at \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw ToolFailure(message: "cannot bind \(path)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// The next message, waiting at most `timeLimit` (polling in 0.1 s reads off the cooperative pool).
    func next(within timeLimit: Duration) async -> String? {
        await eventually(within: timeLimit, every: .milliseconds(10)) { () -> String? in
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let count = recv(self.descriptor, &buffer, buffer.count, 0)
                    continuation.resume(returning: count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil)
                }
            }
        }
    }
}
