import Foundation
import Logging
import ReelMedia
import ReelSystem
import Synchronization

/// Where the log lines of the queue, the stores and the workers a test runs in its own process go:
/// into `test-process.log` in the run's folder (`Fixtures.folder`, which `Scripts/test` keeps and
/// names when a test fails), every level from `debug` up, so that a passing run's output stays short
/// and a failing one's log is whole. `REEL_TEST_LOG=full` sends them to stderr as well.
///
/// The logging system is set up once per process, the first time the run's folder is made (every
/// test that writes a file makes it first) or `bootstrap()` is called; a logger made before that
/// would print to stdout, as swift-log does by default.
public enum TestLog {
    /// Sets up the logging system (once; later calls do nothing).
    public static func bootstrap() { _ = Fixtures.folder }

    /// The file the lines go to.
    public static var file: URL { Fixtures.folder.appendingPathComponent("test-process.log") }

    private static let installed = Atomic<Bool>(false)

    /// Called once by `Fixtures.folder` as it makes the run's folder.
    static func install(in folder: URL) {
        guard !installed.exchange(true, ordering: .relaxed) else { return }
        let path = folder.appendingPathComponent("test-process.log").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let sink = FileSink(
            file: FileHandle(forWritingAtPath: path),
            alsoToStandardError: ProcessInfo.processInfo.environment["REEL_TEST_LOG"] == "full")
        LoggingSystem.bootstrap { label in
            ReelLogHandler(label: label, format: .text, logLevel: .debug, write: sink.write)
        }
    }

    /// One file shared by every handler; a line is written whole.
    private final class FileSink: Sendable {
        private let file: Mutex<FileHandle?>
        private let alsoToStandardError: Bool

        init(file: FileHandle?, alsoToStandardError: Bool) {
            self.file = Mutex(file)
            self.alsoToStandardError = alsoToStandardError
        }

        func write(_ line: String) {
            let data = Data(line.utf8)
            file.withLock { try? $0?.write(contentsOf: data) }
            if alsoToStandardError { FileHandle.standardError.write(data) }
        }
    }
}
