import Foundation

/// The `reel` executable, run as a user would.
public enum ReelBinary {
    /// The built binary, beside the test bundle in the build folder.
    public static let path: String = {
        var folder = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("reel")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            folder = folder.deletingLastPathComponent()
        }
        let build = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../.build/debug/reel")
        return build.standardizedFileURL.path
    }()

    /// Runs `reel` to its end (killed after `timeLimit`).
    public static func run(
        _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
        timeLimit: Duration = Tools.defaultTimeLimit
    ) async throws -> ToolResult {
        try await Tools.run(path, arguments, environment: environment, input: input, timeLimit: timeLimit)
    }

    /// Starts `reel` in the background (for workers). Its output goes to a log file in the run's
    /// fixture folder, so a failing test can show what the worker said.
    public static func start(_ arguments: [String], environment: [String: String]? = nil) throws -> BackgroundProcess {
        let log = Fixtures.scratchFolder("log").appendingPathComponent("reel-\(arguments.first ?? "run").log")
        return try BackgroundProcess(path, arguments, environment: environment, log: log)
    }
}
