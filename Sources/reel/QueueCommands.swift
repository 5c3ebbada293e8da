import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract:
            "Run queued jobs until stopped (SIGINT/SIGTERM: finish running jobs; a second signal hands them back).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var spoolOptions: SpoolOptions
    @OptionGroup var input: InputOptions

    @Option(name: .long, help: "Jobs at once (default: one per core, at most 8).")
    var jobs: Int?

    @Flag(name: .long, help: "Exit 0 once nothing is waiting or running.")
    var drain = false

    @Option(
        name: .long,
        help: ArgumentHelp("Fail a job as stalled after this many seconds without progress.", valueName: "seconds"))
    var stallTimeout: Double = 120

    @Flag(
        name: .long, inversion: .prefixedNo,
        help:
            "Run each export in a child process (the default), so a crash inside a codec fails only that job; --no-isolate runs exports in this process (about 50-80 ms less per job)."
    )
    var isolate = true

    func run() async throws {
        let presets = try global.prepare(logLevel: .info)
        let store = try spoolOptions.open()
        let pool = WorkerPool(
            store: store,
            configuration: WorkerPool.Configuration(
                jobs: jobs ?? WorkerPool.defaultJobs, drain: drain, presets: presets, limits: input.limits,
                stallTimeout: stallTimeout, isolation: isolate ? try isolation() : nil))
        let sources = CLI.onTerminationSignals { pool.stop() }
        defer { sources.forEach { $0.cancel() } }
        // The pool blocks; run it on its own thread so no cooperative thread waits on it.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                pool.run()
                continuation.resume()
            }
            thread.start()
        }
    }
}

extension WorkCommand {
    /// This executable and the arguments that give a child the same limits and presets.
    func isolation() throws -> Isolation {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw CLIFailure(message: "cannot find this executable to run isolated exports")
        }
        let limits = input.limits
        var arguments = [
            "--max-file-size", String(max(1, limits.maxFileBytes >> 20)), "--max-duration",
            String(limits.maxDurationSeconds),
            "--max-dimension", String(limits.maxDimension), "--max-streams", String(limits.maxStreams),
        ]
        for root in input.allowedRoots { arguments += ["--allow-root", root] }
        if let folder = global.presetsDirectory { arguments += ["--presets-dir", folder] }
        return Isolation(executable: executable, arguments: arguments)
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show jobs' status (all jobs when no id is given).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var spoolOptions: SpoolOptions

    @Argument(help: "Job ids.")
    var ids: [String] = []

    @Flag(name: .long, help: "Print each status file's JSON, one per line.")
    var json = false

    func run() async throws {
        _ = try global.prepare()
        let store = try spoolOptions.open()
        let statuses: [JobStatus]
        if ids.isEmpty {
            statuses = store.all()
        } else {
            statuses = try ids.map { id in
                guard let status = try store.status(id) else { throw CLIFailure(message: "no job \(id)") }
                return status
            }
        }
        JobPrinter.print(statuses, json: json, table: false)
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List jobs, oldest first.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var spoolOptions: SpoolOptions

    @Option(name: .long, help: "Only jobs in this state: waiting, exporting, completed, failed, cancelled.")
    var state: String?

    @Flag(name: .long, help: "Print JSON, one job per line.")
    var json = false

    func validate() throws {
        if let state, JobState(rawValue: state) == nil {
            throw ValidationError("unknown state '\(state)'; use waiting, exporting, completed, failed or cancelled")
        }
    }

    func run() async throws {
        _ = try global.prepare()
        let store = try spoolOptions.open()
        let wanted = state.flatMap(JobState.init(rawValue:))
        let statuses = store.all().filter { wanted == nil || $0.state == wanted }
        JobPrinter.print(statuses, json: json, table: isatty(STDOUT_FILENO) == 1)
    }
}

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait", abstract: "Wait until jobs end; exit 0 only if every one completed.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var spoolOptions: SpoolOptions

    @Argument(help: "Job ids.")
    var ids: [String]

    @Option(name: .long, help: "Give up after this many seconds (exit 2).")
    var timeout: Double?

    @Flag(name: .long, help: "Print the final statuses as JSON lines.")
    var json = false

    func run() async throws {
        _ = try global.prepare()
        let store = try spoolOptions.open()
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while true {
            let statuses = try ids.map { id in
                guard let status = try store.status(id) else { throw CLIFailure(message: "no job \(id)") }
                return status
            }
            if statuses.allSatisfy({ $0.state.isTerminal }) {
                JobPrinter.print(statuses, json: json, table: false)
                if statuses.allSatisfy({ $0.state == .completed }) { return }
                throw CLIFailure(message: "not every job completed", exitCode: 1)
            }
            if let deadline, Date() >= deadline {
                JobPrinter.print(statuses, json: json, table: false)
                throw CLIFailure(
                    message:
                        "timed out waiting for \(statuses.filter { !$0.state.isTerminal }.map(\.id).joined(separator: ", "))",
                    exitCode: 2)
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel jobs: a waiting job never starts; a running one stops and leaves no output.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var spoolOptions: SpoolOptions

    @Argument(help: "Job ids.")
    var ids: [String]

    func run() async throws {
        _ = try global.prepare()
        let store = try spoolOptions.open()
        var missing: [String] = []
        for id in ids {
            switch try store.cancel(id) {
            case .cancelled: CLI.printLine("\(id)  cancelled")
            case .requested: CLI.printLine("\(id)  cancelling (its worker stops it)")
            case .alreadyEnded(let state): CLI.printLine("\(id)  already \(state.rawValue)")
            case .notFound: missing.append(id)
            }
        }
        if !missing.isEmpty { throw CLIFailure(message: "no job \(missing.joined(separator: ", "))") }
    }
}

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Queue failed or cancelled jobs again, with fresh attempts.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var spoolOptions: SpoolOptions

    @Argument(help: "Job ids.")
    var ids: [String]

    func run() async throws {
        _ = try global.prepare()
        let store = try spoolOptions.open()
        for id in ids {
            do {
                guard try store.retry(id) != nil else { throw CLIFailure(message: "no job \(id)") }
                CLI.printLine("\(id)  waiting")
            } catch let failure as CLIFailure {
                throw failure
            } catch {
                throw CLIFailure(message: "\(error)")
            }
        }
    }
}

/// Prints statuses as JSON lines, a table, or plain lines.
enum JobPrinter {
    static func print(_ statuses: [JobStatus], json: Bool, table: Bool) {
        if json {
            for status in statuses { CLI.printLine(CLI.jsonLine(status)) }
            return
        }
        if table {
            CLI.printLine("ID                  STATE      PROGRESS  TRIES  PRESET              OUTPUT / ERROR")
        }
        for status in statuses {
            let progress = String(format: "%5.1f%%", status.progress * 100)
            let detail = status.error.map { "\($0.code): \($0.message)" } ?? status.output
            let preset = status.preset.padding(toLength: 18, withPad: " ", startingAt: 0)
            CLI.printLine(
                "\(status.id.padding(toLength: 18, withPad: " ", startingAt: 0))  \(status.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))  \(progress)    \(status.attempts)/\(status.maxAttempts)    \(preset)  \(detail)"
            )
        }
    }
}
