import Foundation
import ReelMedia
import ReelSystem
import Synchronization

/// Runs an external program (ffmpeg, ffprobe, mediainfo, reel) and captures its output.
public struct ToolResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public enum Tools {
    /// How long any one tool may run before it is killed and the test fails (a hung tool must not
    /// hang the whole run).
    public static let defaultTimeLimit: Duration = .seconds(300)

    /// Runs `tool` (looked up on PATH) with arguments and waits for it without holding a thread of
    /// Swift's cooperative pool. Never throws for a non-zero exit; throws when it cannot start or
    /// outlives `timeLimit` (it is then killed).
    @discardableResult
    public static func run(
        _ tool: String, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
        timeLimit: Duration = defaultTimeLimit
    ) async throws -> ToolResult {
        // Started with posix_spawn, not Foundation's Process: its run() can crash the test process on
        // Linux (swift-corelibs-foundation #5472), and the tests start thousands of tools.
        let child = try SpawnedProcess.start(
            tool.hasPrefix("/") ? tool : "/usr/bin/env",
            arguments: tool.hasPrefix("/") ? arguments : [tool] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 },
            withInput: input != nil)
        let collected = Mutex((stdout: Data(), stderr: Data(), timedOut: false, status: Int32(-1)))
        let group = DispatchGroup()
        group.enter()
        startThread(named: "reel-test-tool") {
            let status: Int32
            switch child.waitForExit() {
            case .exited(let code): status = code
            case .signalled(let signal): status = 128 + signal
            }
            collected.withLock { $0.status = status }
            group.leave()
        }
        // Both pipes are drained on threads of their own (never the cooperative pool, nor Dispatch's
        // shared threads, which Swift's tasks need too), concurrently, so a chatty tool cannot fill one
        // and block.
        for (handle, isOut) in [(child.output, true), (child.errors, false)] {
            group.enter()
            startThread(named: "reel-test-tool") {
                let data = handle.readDataToEndOfFile()
                collected.withLock { isOut ? ($0.stdout = data) : ($0.stderr = data) }
                group.leave()
            }
        }
        if let toChild = child.input, let input {
            startThread(named: "reel-test-tool") {
                toChild.write(input)
                toChild.close()
            }
        }
        let kill = DispatchWorkItem {
            collected.withLock { $0.timedOut = true }
            child.signal(SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeLimit / .seconds(1), execute: kill)
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
        kill.cancel()
        let (stdout, stderr, timedOut, status) = collected.withLock { ($0.stdout, $0.stderr, $0.timedOut, $0.status) }
        if timedOut {
            throw ToolFailure(
                message: "\(tool) \(arguments.joined(separator: " ")) ran longer than \(timeLimit); killed")
        }
        return ToolResult(
            status: status, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Runs `executable` (a path) and waits for it on the calling thread, its output discarded; for
    /// clean-up where no task can run (`atexit`). Returns its exit status, or nil when it cannot start.
    @discardableResult
    public static func runBlocking(_ executable: String, _ arguments: [String]) -> Int32? {
        guard
            let child = try? SpawnedProcess.start(
                executable, arguments: arguments, environment: ProcessInfo.processInfo.environment, withInput: false)
        else { return nil }
        // Its output is read to the end first, so a chatty child cannot block on a full pipe.
        startThread(named: "reel-test-tool") { _ = child.errors.readDataToEndOfFile() }
        _ = child.output.readDataToEndOfFile()
        switch child.waitForExit() {
        case .exited(let code): return code
        case .signalled(let signal): return 128 + signal
        }
    }

    /// Starts `executable` (a path) and lets it run on its own, its output discarded (a guard that
    /// outlives the test process); never waits for it.
    public static func startDetached(_ executable: String, _ arguments: [String]) throws {
        // Our ends of its output pipes close as the handles go: it must not write to them.
        _ = try SpawnedProcess.start(
            executable, arguments: arguments, environment: ProcessInfo.processInfo.environment, withInput: false)
    }

    /// A TCP port on loopback nobody listens on now (for the servers the tests start).
    public static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolFailure(message: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ToolFailure(message: "cannot find a free port: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs ffmpeg quietly; throws with its stderr when it fails.
    public static func ffmpeg(_ arguments: [String]) async throws {
        let result = try await run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
        if result.status != 0 {
            throw ToolFailure(message: "ffmpeg \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }
}

/// A program started in the background (a worker), whose end can be awaited with a time limit.
public final class BackgroundProcess: Sendable {
    private struct State {
        var ended: (reason: Process.TerminationReason, status: Int32)?
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private final class Shared: Sendable {
        let state = Mutex(State())
    }
    public let pid: Int32
    /// Where its stdout and stderr go, if anywhere.
    public let log: URL?
    private let shared = Shared()
    private let process: SpawnedProcess

    /// Starts `executable`; stdout and stderr go to `log` (a file) or are discarded. It leads a process
    /// group of its own (its id is `pid`), so a test can signal the group as a terminal's Ctrl-C would
    /// without reaching the test process.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, log: URL? = nil
    ) throws {
        let child = try SpawnedProcess.start(
            executable, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }, withInput: false,
            newProcessGroup: true)
        let sink: FileHandle?
        if let log {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            sink = try FileHandle(forWritingTo: log)
        } else {
            sink = nil
        }
        let shared = shared
        // Its output is copied to the log as it comes (or read and dropped), on threads of their own;
        // the end is awaited on another, and reported once both streams are drained.
        let drained = DispatchGroup()
        for handle in [child.output, child.errors] {
            drained.enter()
            startThread(named: "reel-test-tool") {
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    shared.state.withLock { _ in try? sink?.write(contentsOf: chunk) }
                }
                drained.leave()
            }
        }
        startThread(named: "reel-test-tool") {
            let termination = child.waitForExit()
            // (A grandchild that kept its output open must not hold up the end.)
            _ = drained.wait(timeout: .now() + 5)
            let waiters = shared.state.withLock { state in
                switch termination {
                case .exited(let code): state.ended = (.exit, code)
                case .signalled(let signal): state.ended = (.uncaughtSignal, signal)
                }
                defer { state.waiters = [] }
                return state.waiters
            }
            try? sink?.close()
            for waiter in waiters { waiter.resume() }
        }
        pid = child.pid
        process = child
        self.log = log
    }

    /// A process still running when its owner lets go of it (a test that failed half-way) is killed.
    deinit { process.signal(SIGKILL) }

    /// What it has written so far (stdout and stderr), or "" without a log.
    public var output: String {
        log.flatMap { FileManager.default.contents(atPath: $0.path) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Whether it is still running.
    public var isRunning: Bool { shared.state.withLock { $0.ended == nil } }

    /// Sends a signal (through its pidfd: never to another process once it has ended).
    public func signal(_ number: Int32) { process.signal(number) }

    /// Sends a signal to its whole process group, as a terminal's Ctrl-C or `kill -- -PGID` does.
    public func signalGroup(_ number: Int32) { process.signalGroup(number) }

    /// Waits for it to end; kills it and throws when it outlives `timeLimit`.
    @discardableResult
    public func exit(within timeLimit: Duration = .seconds(120)) async throws -> (
        reason: Process.TerminationReason, status: Int32
    ) {
        let deadline = ContinuousClock.now + timeLimit
        let timer = Task {
            try await Task.sleep(until: deadline)
            self.signal(SIGKILL)
        }
        defer { timer.cancel() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.state.withLock { state -> Bool in
                if state.ended != nil { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        let ended = shared.state.withLock { $0.ended }!
        if ContinuousClock.now >= deadline && ended.reason == .uncaughtSignal && ended.status == SIGKILL {
            throw ToolFailure(message: "process \(pid) ran longer than \(timeLimit); killed")
        }
        return ended
    }

    /// Stops it (SIGTERM) and waits for its end, killing it if it does not go within the limit.
    public func stop(within timeLimit: Duration = .seconds(30)) async {
        signal(SIGTERM)
        _ = try? await exit(within: timeLimit)
    }
}

/// Polls `condition` until it returns a value or `timeLimit` passes (then nil), without blocking a thread.
public func eventually<T>(
    within timeLimit: Duration = .seconds(60), every interval: Duration = .milliseconds(50),
    _ condition: () async throws -> T?
) async rethrows -> T? {
    let deadline = ContinuousClock.now + timeLimit
    while true {
        if let value = try await condition() { return value }
        if ContinuousClock.now >= deadline { return nil }
        try? await Task.sleep(for: interval)
    }
}

public struct ToolFailure: Error, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// A reproducible random number generator (SplitMix64) for mutation tests: a failure names its seed,
/// and `REEL_TEST_SEED` replays it.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    /// Seeds from `REEL_TEST_SEED` when set, else from `seed`.
    public init(seed: UInt64) {
        let chosen = ProcessInfo.processInfo.environment["REEL_TEST_SEED"].flatMap { UInt64($0) } ?? seed
        self.seed = chosen
        state = chosen
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
