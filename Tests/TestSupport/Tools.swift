import Foundation

/// Runs an external program (ffmpeg, ffprobe, mediainfo, reel) and captures its output.
public struct ToolResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public enum Tools {
    /// Runs `tool` (looked up on PATH) with arguments; never throws for a non-zero exit.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> ToolResult
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : "/usr/bin/env")
        process.arguments = tool.hasPrefix("/") ? arguments : [tool] + arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes concurrently so a chatty tool cannot fill one and block.
        let errData = ReadBox()
        let finished = DispatchSemaphore(value: 0)
        let reader = Thread {
            errData.data = err.fileHandleForReading.readDataToEndOfFile()
            finished.signal()
        }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        finished.wait()
        return ToolResult(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.data, as: UTF8.self))
    }

    /// Runs ffmpeg quietly; throws with its stderr when it fails.
    public static func ffmpeg(_ arguments: [String]) throws {
        let result = try run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
        if result.status != 0 {
            throw ToolFailure(message: "ffmpeg \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }
}

/// Carries the stderr bytes from the reader thread; the semaphore orders the write before the read.
final class ReadBox: @unchecked Sendable {
    var data = Data()
}

public struct ToolFailure: Error, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
