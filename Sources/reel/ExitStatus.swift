import ReelExport
import ReelLibrary
import ReelQueue

/// Every status `reel` exits with, sysexits(3)'s where one fits, and what each means. The table of
/// exit statuses in the documentation is made from this type, with the error codes each status
/// stands for (`DocumentationTests`), so the two cannot drift.
enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    case failure = 1
    case timedOut = 2
    /// EX_USAGE.
    case usage = 64
    /// EX_DATAERR.
    case badInput = 65
    /// EX_NOINPUT.
    case noInput = 66
    /// EX_UNAVAILABLE.
    case unavailable = 69
    /// EX_IOERR.
    case outputProblem = 74
    /// EX_TEMPFAIL.
    case temporaryFailure = 75
    /// 128 + SIGINT, as a shell reports a command Ctrl-C ended.
    case cancelled = 130

    /// What the status means, in a few words (the documentation's table).
    var meaning: String {
        switch self {
        case .success: "done (`wait`: every job completed)"
        case .failure:
            "a job did not complete (`wait`), no such job, a request that conflicts with the queue (a key reused for"
                + " another request, an output another job writes, retrying a running job), a database whose schema"
                + " needs `reel db migrate` (`db version`), an export whose finished file failed verification or that"
                + " stalled, or an internal failure"
        case .timedOut: "`wait --timeout` ran out"
        case .usage:
            "bad arguments, unknown or invalid preset, a library predicate or change token Reel does not accept"
        case .badInput:
            "bad or incompatible input (unreadable, not media, over a limit, preset and type do not fit, no video for"
                + " a video preset, a photo given to a video command; a library file that changed since it was scanned)"
        case .noInput: "`submit --manifest <file>`: the manifest cannot be read (missing, a folder, no permission)"
        case .unavailable:
            "the queue's store is unavailable (no spool where one is needed, permissions, database away), or the"
                + " photo library's"
        case .outputProblem:
            "output problems (folder missing, not writable, file exists, disk full; a library resource that cannot be"
                + " written out)"
        case .temporaryFailure: "`reel library`: another scan holds the library; try again once it ends"
        case .cancelled: "cancelled (Ctrl-C, SIGTERM)"
        }
    }

    /// The status of a command that failed with an export's error.
    init(_ code: ExportError.Code) {
        switch code {
        case .invalidArgument, .unknownPreset, .invalidPreset: self = .usage
        case .unreadableInput, .unsupportedCodec, .incompatiblePreset, .noVideo, .limitExceeded, .unknownAsset,
            .assetChanged, .photoNotVideo:
            self = .badInput
        case .noSpace, .outputFailed, .outputExists: self = .outputProblem
        case .cancelled: self = .cancelled
        default: self = .failure
        }
    }

    /// The status of a command that failed with a queue's error.
    init(_ kind: QueueError.Kind) {
        switch kind {
        case .invalid: self = .usage
        case .unavailable: self = .unavailable
        case .notFound, .conflict: self = .failure
        }
    }
}

extension ExitStatus {
    /// The status of a `reel library` command that failed with the library's error.
    init(_ code: LibraryError.Code) {
        switch code {
        case .invalidArgument, .invalidToken: self = .usage
        case .stale: self = .badInput
        case .storeFailed: self = .unavailable
        case .writeFailed: self = .outputProblem
        case .busy: self = .temporaryFailure
        default: self = .failure
        }
    }
}
