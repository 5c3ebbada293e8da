import Foundation

/// A disk made slow on purpose: a small shared library, compiled once per test run, that makes every
/// `fsync` and `fdatasync` of the process it is preloaded into (`LD_PRELOAD`) take `milliseconds`
/// longer, as a disk busy with someone else's writes does. (This machine's disk absorbs a writer
/// fsyncing 256 MiB at a time with small fsyncs still taking ~10 ms: a flood is no test.)
public enum SlowDisk {
    /// The environment that slows a process's fsyncs by `milliseconds`.
    public static func environment(milliseconds: Int) async throws -> [String: String] {
        ["LD_PRELOAD": try await library().path, "REEL_TEST_SLOW_FSYNC_MS": "\(milliseconds)"]
    }

    private static let made = Fixtures.folder.appendingPathComponent("slow-fsync.so")

    static func library() async throws -> URL {
        if FileManager.default.fileExists(atPath: made.path) { return made }
        let source = Fixtures.scratchFolder("slow-disk").appendingPathComponent("slow-fsync.c")
        try """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdlib.h>
        #include <time.h>
        static void pause_a_while(void) {
            const char *text = getenv("REEL_TEST_SLOW_FSYNC_MS");
            long ms = text ? atol(text) : 0;
            struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
            while (nanosleep(&t, &t) != 0) {}
        }
        int fsync(int fd) {
            static int (*real)(int);
            if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
            pause_a_while();
            return real(fd);
        }
        int fdatasync(int fd) {
            static int (*real)(int);
            if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
            pause_a_while();
            return real(fd);
        }
        """.write(to: source, atomically: true, encoding: .utf8)
        let partial = made.appendingPathExtension("\(getpid()).tmp")
        let result = try await Tools.run("cc", ["-shared", "-fPIC", "-O2", "-o", partial.path, source.path, "-ldl"])
        guard result.status == 0 else {
            throw ToolFailure(message: "cannot build the slow-fsync shim: \(result.stderr)")
        }
        _ = rename(partial.path, made.path)
        return made
    }
}
