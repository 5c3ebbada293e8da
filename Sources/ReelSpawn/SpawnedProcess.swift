import CSpawn
import Foundation

/// A child process started with `posix_spawn`, its standard streams on pipes.
///
/// Foundation's `Process.run()` on Linux (Swift 6.3) can crash the process that calls it: while
/// listing `/proc/self/fd` it copies 256 bytes of every directory entry, reading past glibc's buffer
/// into an unmapped page now and then (swift-corelibs-foundation #5472, fixed after 6.3). A worker
/// that isolates its exports starts a process per job, so it starts them here instead: every
/// descriptor of this process is close-on-exec or closed in the child (`closefrom`), signals are
/// reset to their defaults and unblocked in the child, and the child is reaped by `waitForExit`.
public struct SpawnedProcess: Sendable {
    public let pid: pid_t
    /// The child's standard input (nil when it has none: it reads end-of-file), output and error.
    public let input: FileHandle?
    public let output: FileHandle
    public let errors: FileHandle

    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `executable` (a path; no PATH lookup) with `arguments` and exactly `environment`.
    public static func start(
        _ executable: String, arguments: [String], environment: [String: String], withInput: Bool
    ) throws(Failure) -> SpawnedProcess {
        // One pipe per standard stream: the child has stdin's read end and the write ends of stdout and
        // stderr, this process the others.
        var ends: [(read: Int32, write: Int32)] = []
        func childSide(_ stream: Int) -> Int32 { stream == 0 ? ends[stream].read : ends[stream].write }
        func ourSide(_ stream: Int) -> Int32 { stream == 0 ? ends[stream].write : ends[stream].read }
        // The child's sides are closed here once it has them; a failure closes ours as well.
        defer { for stream in ends.indices { close(childSide(stream)) } }
        func failure(_ message: String) -> Failure {
            for stream in ends.indices { close(ourSide(stream)) }
            return Failure(description: message)
        }
        for _ in 0..<3 {
            var pair: [Int32] = [-1, -1]
            guard reel_pipe_cloexec(&pair) == 0 else {
                throw failure("cannot make a pipe: \(String(cString: strerror(errno)))")
            }
            ends.append((pair[0], pair[1]))
        }
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        let initialised = [posix_spawn_file_actions_init(&actions), posix_spawnattr_init(&attributes)]
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        // The child's ends become its standard streams (dup2 clears their close-on-exec); whatever
        // this process opened without close-on-exec stays out of the child; signals as a new process has.
        var signals = sigset_t()
        sigemptyset(&signals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        let prepared =
            initialised + [
                posix_spawn_file_actions_adddup2(&actions, childSide(0), 0),
                posix_spawn_file_actions_adddup2(&actions, childSide(1), 1),
                posix_spawn_file_actions_adddup2(&actions, childSide(2), 2),
                reel_spawn_add_closefrom(&actions, 3),
                posix_spawnattr_setsigmask(&attributes, &signals),
                posix_spawnattr_setsigdefault(&attributes, &everySignal),
                posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)),
            ]
        if let error = prepared.first(where: { $0 != 0 }) {
            throw failure("cannot prepare a child process: \(String(cString: strerror(error)))")
        }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw failure("cannot start \(executable): \(String(cString: strerror(status)))")
        }
        // Without input the child reads end-of-file at once.
        if !withInput { close(ourSide(0)) }
        return SpawnedProcess(
            pid: pid,
            input: withInput ? FileHandle(fileDescriptor: ourSide(0), closeOnDealloc: true) : nil,
            output: FileHandle(fileDescriptor: ourSide(1), closeOnDealloc: true),
            errors: FileHandle(fileDescriptor: ourSide(2), closeOnDealloc: true))
    }

    /// Waits for the child to end and reaps it. Blocks: call it from a Dispatch thread, never from
    /// Swift's cooperative pool.
    public func waitForExit() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .exited(-1) }
        }
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
