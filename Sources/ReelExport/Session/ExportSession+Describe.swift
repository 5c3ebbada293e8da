import Foundation

extension ExportSession {
    /// What a finished output holds, read back from its header as an export's `result` reports it
    /// (method `transcode`, no decision, no elapsed time: only the file is known). For a file an
    /// earlier run published whose outcome could not be recorded (a job queue adopting it). Throws
    /// `output-invalid` when the file cannot be read as media.
    public static func describeOutput(at url: URL) throws(ExportError) -> Result {
        var result = try summarize(url, started: .now)
        result.elapsedSeconds = 0
        return result
    }
}
