import ArgumentParser
import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelQueue
import ReelSystem

#if Fleet
    import ReelFleet
#endif

/// A failure the CLI reports itself, with its exit status.
struct CLIFailure: Error {
    var message: String
    var exitStatus = ExitStatus.failure
    /// The stable code `--json` prints (a library's `not-found`, `busy`, …); nil: named by the status.
    var code: String? = nil
    /// Whether the same command could succeed later (another scan holds the library, a store away).
    var retryable = false
}
