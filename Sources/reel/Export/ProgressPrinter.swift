import ArgumentParser
import Dispatch
import Foundation
import ReelExport

/// Draws the progress bar on a terminal, or prints JSON progress lines.
final class ProgressPrinter: Sendable {
    let json: Bool
    let terminal: Bool

    init(json: Bool, terminal: Bool) {
        self.json = json
        self.terminal = terminal
    }

    func show(_ update: ExportSession.Progress) {
        // A progress line reports an export under way: how it ended is the `completed` or `failed`
        // event that follows, never a progress line saying `failed` before it.
        if update.status == .failed || update.status == .cancelled { return }
        if json {
            CLI.printLine(ExportEvent.progress(.init(update)).jsonLine)
            return
        }
        guard terminal else { return }
        let width = 30
        let filled = Int((update.fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let percent = String(format: "%5.1f%%", update.fraction * 100)
        let fps = String(format: "%.0f fps", update.framesPerSecond)
        let eta = update.secondsRemaining.map { "ETA " + CLI.formatDuration($0) } ?? "ETA --:--"
        let phase = update.phase == .transcoding ? "exporting" : update.phase.rawValue
        try? FileHandle.standardError.write(
            contentsOf: Data("\r\u{1B}[K\(phase) \(bar) \(percent)  \(fps)  \(eta)".utf8))
    }

    func finishLine() {
        if terminal && !json { try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8)) }
    }
}
