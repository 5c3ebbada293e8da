import Foundation

/// Holds some of a process's threads still for a while, as a hung codec or disk holds them, while
/// its other threads (a watchdog, a worker's lease) run on: a small Python helper stops every thread
/// with a given name (`/proc/<pid>/task/<tid>/comm`) in the process and its descendants with ptrace
/// (seize, interrupt), holds them, then exits, which lets them go on.
public enum ThreadFreezer {
    /// Stops every thread named `name` in process `pid` and its descendants, polling /proc for one
    /// for up to `waiting` seconds (0: one look); then writes `write.text` into `write.file` when
    /// given (e.g. a libfaketime offset, so a clock steps while they stand still), holds them
    /// `seconds` and lets them go. The result's status is 0 and its output says `froze N threads`
    /// when some were stopped; 1 when none was found in time.
    public static func freeze(
        threadsNamed name: String, in pid: Int32, for seconds: Double, waiting: Double = 0,
        thenWrite write: (text: String, file: URL)? = nil, timeLimit: Duration
    ) async throws -> ToolResult {
        try await Tools.run(
            "python3",
            ["-c", script, "\(pid)", name, "\(seconds)", "\(waiting)", write?.file.path ?? "", write?.text ?? ""],
            timeLimit: timeLimit)
    }

    static let script = """
        import ctypes, os, sys, time
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        libc.ptrace.restype = ctypes.c_long
        root, name, seconds, waiting = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
        write_file, write_text = sys.argv[5], sys.argv[6]
        def family():
            parents = {}
            for pid in os.listdir("/proc"):
                if pid.isdigit():
                    try:
                        stat = open(f"/proc/{pid}/stat").read()
                        parents[int(pid)] = int(stat[stat.rindex(")") + 2:].split()[1])
                    except (OSError, ValueError):
                        pass
            pids, grown = {root}, True
            while grown:
                grown = False
                for pid, parent in parents.items():
                    if parent in pids and pid not in pids:
                        pids.add(pid)
                        grown = True
            return pids
        frozen, deadline = 0, time.time() + waiting
        while True:
            for pid in family():
                try:
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    continue
                for tid in tids:
                    try:
                        comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                    except OSError:
                        continue
                    if comm != name or libc.ptrace(0x4206, int(tid), None, None) != 0:  # PTRACE_SEIZE
                        continue
                    libc.ptrace(0x4207, int(tid), None, None)  # PTRACE_INTERRUPT
                    os.waitpid(int(tid), 0x40000000)  # __WALL
                    frozen += 1
            if frozen > 0 or time.time() >= deadline:
                break
            time.sleep(0.002)
        if write_file:
            with open(write_file, "w") as f:
                f.write(write_text + "\\n")
        print(f"froze {frozen} threads", flush=True)
        if frozen == 0:
            sys.exit(1)
        time.sleep(seconds)
        """
}
