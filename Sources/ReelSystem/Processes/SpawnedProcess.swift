import CReelSystem
import Foundation
import Synchronization

/// A child process started with `posix_spawn`, its standard streams connected to this process.
///
/// Foundation's `Process.run()` on Linux (Swift 6.3) can crash the process that calls it: while
/// listing `/proc/self/fd` it copies 256 bytes of every directory entry, reading past glibc's buffer
/// into an unmapped page now and then (swift-corelibs-foundation #5472, fixed after 6.3). A worker
/// that isolates its exports starts a process per job, so it starts them here instead: every
/// descriptor of this process is close-on-exec or closed in the child (`closefrom`), signals are
/// reset to their defaults and unblocked in the child.
///
/// The child is named by a pidfd (`pidfd_open`), signalled through it (`pidfd_send_signal`) and
/// reaped through it (`waitid(P_PIDFD)`): a signal sent after the child ended fails with ESRCH
/// instead of reaching whichever process took its number. Its standard input is a socket that this
/// process writes without SIGPIPE (`writeInput`), so a host that does not ignore SIGPIPE survives a
/// child that exits before reading. With `newProcessGroup`, the child leads a process group of its
/// own: a terminal's Ctrl-C or `kill -- -PGID` aimed at this process's group does not reach it.
public final class SpawnedProcess: Sendable {
    public let pid: pid_t
    /// The child's standard input (nil when it has none: it reads end-of-file).
    public let input: Input?
    /// The child's standard output and error.
    public let output: FileHandle
    public let errors: FileHandle
    private let handle: ProcessHandle

    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private init(pid: pid_t, handle: ProcessHandle, input: Input?, output: FileHandle, errors: FileHandle) {
        self.pid = pid
        self.handle = handle
        self.input = input
        self.output = output
        self.errors = errors
    }

    /// Starts `executable` (a path; no PATH lookup) with `arguments` and exactly `environment`. With
    /// `newProcessGroup` the child leads a process group of its own.
    public static func start(
        _ executable: String, arguments: [String], environment: [String: String], withInput: Bool,
        newProcessGroup: Bool = false
    ) throws(Failure) -> SpawnedProcess {
        // The child's standard input is a socket (written with MSG_NOSIGNAL), its output and error
        // pipes: the child has one end of each, this process the other.
        var ends: [(read: Int32, write: Int32)] = []
        func childSide(_ stream: Int) -> Int32 { stream == 0 ? ends[stream].read : ends[stream].write }
        func ourSide(_ stream: Int) -> Int32 { stream == 0 ? ends[stream].write : ends[stream].read }
        // The child's sides are closed here once it has them; a failure closes ours as well.
        defer { for stream in ends.indices { close(childSide(stream)) } }
        func failure(_ message: String) -> Failure {
            for stream in ends.indices { close(ourSide(stream)) }
            return Failure(description: message)
        }
        for stream in 0..<3 {
            var pair: [Int32] = [-1, -1]
            let made = stream == 0 ? reel_socketpair_cloexec(&pair) : reel_pipe_cloexec(&pair)
            guard made == 0 else {
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
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup { flags |= POSIX_SPAWN_SETPGROUP }
        let prepared =
            initialised + [
                posix_spawn_file_actions_adddup2(&actions, childSide(0), 0),
                posix_spawn_file_actions_adddup2(&actions, childSide(1), 1),
                posix_spawn_file_actions_adddup2(&actions, childSide(2), 2),
                reel_spawn_add_closefrom(&actions, 3),
                posix_spawnattr_setsigmask(&attributes, &signals),
                posix_spawnattr_setsigdefault(&attributes, &everySignal),
                // Group 0: the child's own pid becomes its group's id.
                posix_spawnattr_setpgroup(&attributes, 0),
                posix_spawnattr_setflags(&attributes, Int16(flags)),
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
        // Named at once: until it is reaped (only through this handle), its number stays its own.
        let handle = ProcessHandle(pid: pid)
        // Without input the child reads end-of-file at once.
        if !withInput { close(ourSide(0)) }
        return SpawnedProcess(
            pid: pid, handle: handle, input: withInput ? Input(descriptor: ourSide(0)) : nil,
            output: FileHandle(fileDescriptor: ourSide(1), closeOnDealloc: true),
            errors: FileHandle(fileDescriptor: ourSide(2), closeOnDealloc: true))
    }

    /// Sends `signal` to the child; false (and nothing sent) once it has ended. Never reaches another
    /// process, whenever it is called.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool { handle.signal(signal) }

    /// Sends `signal` to the child's process group (when it leads one: `newProcessGroup`), so that
    /// what it started goes too; false once the child has been reaped.
    @discardableResult
    public func signalGroup(_ signal: Int32) -> Bool { handle.signalGroup(signal) }

    /// Waits for the child to end and reaps it. Blocks: call it from a thread of its own, never from
    /// Swift's cooperative pool. Every later call returns the same termination.
    public func waitForExit() -> Termination { handle.waitForExit() }

    /// The child's standard input: a socket written without SIGPIPE.
    public final class Input: Sendable {
        private let descriptor: Mutex<Int32>

        init(descriptor: Int32) { self.descriptor = Mutex(descriptor) }

        deinit { close() }

        /// Writes all of `data`; false when the child stopped reading (it exited or closed its input)
        /// or the input was closed.
        @discardableResult
        public func write(_ data: Data) -> Bool {
            descriptor.withLock { fd in
                guard fd >= 0 else { return false }
                return data.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let sent = reel_send_nosignal(fd, buffer.baseAddress! + offset, UInt(buffer.count - offset))
                        if sent < 0 {
                            if errno == EINTR { continue }
                            return false
                        }
                        offset += sent
                    }
                    return true
                }
            }
        }

        /// Closes it: the child reads end-of-file. Safe to call more than once.
        public func close() {
            descriptor.withLock { fd in
                if fd >= 0 { Glibc.close(fd) }
                fd = -1
            }
        }
    }
}

/// Owns the pidfd of one child: signals and the reaping go through it. Where the kernel has no pidfd
/// (before 5.3, or a container that forbids it), the child is waited for without reaping
/// (`WNOWAIT`) and then reaped under the same lock that every signal takes, so a signal can still
/// never reach a process that reused its number.
private final class ProcessHandle: Sendable {
    let pid: pid_t
    private struct State {
        var pidfd: Int32
        var ended: SpawnedProcess.Termination?
    }
    private let state: Mutex<State>

    init(pid: pid_t) {
        self.pid = pid
        state = Mutex(State(pidfd: reel_pidfd_open(pid), ended: nil))
    }

    deinit {
        state.withLock { if $0.pidfd >= 0 { close($0.pidfd) } }
    }

    func signal(_ signal: Int32) -> Bool {
        state.withLock { state in
            guard state.ended == nil else { return false }
            if state.pidfd >= 0 { return reel_pidfd_send_signal(state.pidfd, signal) == 0 }
            return kill(pid, signal) == 0
        }
    }

    func signalGroup(_ signal: Int32) -> Bool {
        // The group's id is the child's pid, which cannot be reused while the child is unreaped; the
        // lock keeps the reaping out until the signal is sent.
        state.withLock { state in
            guard state.ended == nil else { return false }
            return kill(-pid, signal) == 0
        }
    }

    func waitForExit() -> SpawnedProcess.Termination {
        let pidfd = state.withLock { state -> Int32? in state.ended == nil ? state.pidfd : nil }
        guard let pidfd else { return state.withLock { $0.ended! } }
        // Waits for the end without reaping (the zombie keeps its number, so a group signal sent
        // meanwhile still reaches only its own group), then reaps under the lock every signal takes.
        if pidfd >= 0 {
            var exited: Int32 = 0
            var value: Int32 = 0
            _ = reel_pidfd_wait(pidfd, 1, &exited, &value)
        } else {
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        }
        return state.withLock { state in
            if let ended = state.ended { return ended }
            let termination: SpawnedProcess.Termination
            if pidfd >= 0 {
                var exited: Int32 = 0
                var value: Int32 = 0
                termination =
                    reel_pidfd_wait(pidfd, 0, &exited, &value) == 0
                    ? (exited != 0 ? .exited(value) : .signalled(value)) : .exited(-1)
            } else {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                let signal = status & 0x7f
                termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            }
            state.ended = termination
            return termination
        }
    }
}
