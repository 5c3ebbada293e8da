import Foundation

/// A program run on a pseudo-terminal of its own (Python's `pty.fork`: it leads a new session whose
/// controlling terminal is the pty), whose terminal can then be hung up as closing a terminal window
/// or losing an SSH session does: the master side is closed, the kernel sends SIGHUP to the session,
/// and every later write to the terminal fails (EIO). What the program showed is kept in `screen`.
public final class Terminal: Sendable {
    /// The Python side: copies the terminal's output to SCREEN until TRIGGER exists (or the program
    /// closes the terminal by ending), closes the master, reaps the program and prints how it ended.
    static let script = #"""
        import os, pty, select, sys
        trigger, screen, command = sys.argv[1], sys.argv[2], sys.argv[3:]
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execv(command[0], command)
            finally:
                os._exit(127)
        with open(screen, "ab", buffering=0) as out:
            while not os.path.exists(trigger):
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    continue
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                out.write(data)
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status):
            print("exited", os.WEXITSTATUS(status), flush=True)
        else:
            print("signalled", os.WTERMSIG(status), flush=True)
        """#

    let process: BackgroundProcess
    let trigger: URL
    let screenFile: URL

    /// Starts `executable` on a new pseudo-terminal.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        let folder = Fixtures.scratchFolder("terminal")
        trigger = folder.appendingPathComponent("hang-up")
        screenFile = folder.appendingPathComponent("screen")
        process = try BackgroundProcess(
            "/usr/bin/python3", ["-c", Self.script, trigger.path, screenFile.path, executable] + arguments,
            environment: environment, log: folder.appendingPathComponent("terminal.log"))
    }

    /// Closes the terminal: the program's session gets SIGHUP, its writes to the terminal fail.
    public func hangUp() throws {
        try Data().write(to: trigger)
    }

    /// What the program wrote to its terminal before the hang-up.
    public var screen: String {
        FileManager.default.contents(atPath: screenFile.path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Waits for the program to end: `exited N` or `signalled N`.
    public func ended(within timeLimit: Duration = .seconds(120)) async throws -> String {
        try await process.exit(within: timeLimit)
        return process.output.split(separator: "\n").last.map(String.init) ?? process.output
    }
}
