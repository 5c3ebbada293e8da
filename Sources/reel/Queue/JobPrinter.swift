import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

/// Prints statuses as JSON lines, a table, or plain lines.
enum JobPrinter {
    static func print(_ statuses: [JobStatus], json: Bool, table: Bool) {
        if json {
            for status in statuses { CLI.printLine(CLI.jsonLine(status)) }
            return
        }
        if table {
            CLI.printLine("ID                  STATE      PROGRESS  TRIES  PRESET              OUTPUT / ERROR")
        }
        for status in statuses {
            let progress = String(format: "%5.1f%%", status.progress * 100)
            var detail = status.error.map { "\($0.code): \($0.message)" } ?? status.output
            // An exporting job whose worker is gone says so until a live worker picks it up.
            let state = status.orphaned == true ? "orphaned" : status.state.rawValue
            if status.orphaned == true { detail = "its worker is gone; a running worker picks it up within 2 s" }
            let preset = status.preset.padding(toLength: 18, withPad: " ", startingAt: 0)
            let id = status.id.padding(toLength: 18, withPad: " ", startingAt: 0)
            let tries = "\(status.attempts)/\(status.maxAttempts)"
            CLI.printLine(
                "\(id)  \(state.padding(toLength: 9, withPad: " ", startingAt: 0))  \(progress)    \(tries)    \(preset)  \(detail)"
            )
            // What submit warned of stays with the job (`reel status ID`; a listing keeps one line a job).
            if !table, status.state != .completed {
                for warning in status.spec?.warnings ?? [] { CLI.printLine("    warning: \(warning)") }
            }
        }
    }
}
