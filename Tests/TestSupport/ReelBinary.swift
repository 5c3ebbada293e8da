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

    public static func run(_ arguments: [String], environment: [String: String]? = nil) throws -> ToolResult {
        try Tools.run(path, arguments, environment: environment)
    }

    /// Starts `reel` in the background (for workers), with stdout and stderr discarded.
    public static func start(_ arguments: [String], environment: [String: String]? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }
}
