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
            "bad arguments, unknown or invalid preset, a library predicate or change token Reel does not accept, a URL"
                + " asset without --network-access"
        case .badInput:
            "bad or incompatible input (unreadable, not media, over a limit, preset and type do not fit, no video for"
                + " a video preset, a photo given to a video command; a library asset, resource or album the library"
                + " does not have, or a file that changed since it was scanned; a still and a movie `library import"
                + " --live` cannot pair; a URL the network policy refuses, or a download that is not the bytes named)"
        case .noInput: "`submit --manifest <file>`: the manifest cannot be read (missing, a folder, no permission)"
        case .unavailable:
            "the queue's store is unavailable (no spool where one is needed, permissions, database away), or the"
                + " photo library's; a remote asset's download failed (what arrived is kept, and the next run resumes), or an upload did"
        case .outputProblem:
            "output problems (folder missing, not writable, file exists, disk full; a library resource that cannot be"
                + " written out)"
        case .temporaryFailure: "`reel library`: another scan holds the library; try again once it ends"
        case .cancelled: "cancelled (Ctrl-C, SIGTERM, SIGHUP)"
        }
    }

    /// The code `--json` prints for a failure that has none of its own: the export code its status
    /// stands for where there is one, else the status in words.
    var code: String {
        switch self {
        case .usage: ExportError.Code.invalidArgument.description
        case .badInput: ExportError.Code.unreadableInput.description
        case .outputProblem: ExportError.Code.outputFailed.description
        case .cancelled: ExportError.Code.cancelled.description
        case .success: "ok"
        case .failure: "failed"
        case .timedOut: "timed-out"
        case .noInput: "no-input"
        case .unavailable: "unavailable"
        case .temporaryFailure: "busy"
        }
    }

    /// The status of every export code, each named (`CodeTests` checks that none is missing, so
    /// a new code cannot fall to `failure` unseen).
    static let ofExportCode: [ExportError.Code: ExitStatus] = [
        .invalidArgument: .usage, .unknownPreset: .usage, .invalidPreset: .usage,
        .unreadableInput: .badInput, .unsupportedCodec: .badInput, .incompatiblePreset: .badInput,
        .noVideo: .badInput, .limitExceeded: .badInput, .unknownAsset: .badInput, .assetChanged: .badInput,
        .photoNotVideo: .badInput, .urlRefused: .badInput, .checksumMismatch: .badInput,
        .networkAccessRequired: .usage, .downloadFailed: .unavailable, .uploadFailed: .unavailable,
        .noSpace: .outputProblem, .outputFailed: .outputProblem, .outputExists: .outputProblem,
        .cancelled: .cancelled,
        .outputInvalid: .failure, .stalled: .failure, .saveFailed: .failure, .internal: .failure,
    ]

    /// The status of a command that failed with an export's error (`ofExportCode`).
    init(_ code: ExportError.Code) {
        self = Self.ofExportCode[code] ?? .failure
    }

    /// The status of a command that failed with a queue's error.
    /// (`QueueError.Kind.code` gives its stable word for `--json`.)
    init(_ kind: QueueError.Kind) {
        switch kind {
        case .invalid: self = .usage
        case .unavailable: self = .unavailable
        case .notFound, .conflict: self = .failure
        }
    }
}

extension ExitStatus {
    /// The status of a `reel library` command that failed with the library's error: every code named
    /// in `ofLibraryCode` (DocumentationTests checks), an unnamed one exits 1.
    init(_ code: LibraryError.Code) {
        self = Self.ofLibraryCode[code] ?? .failure
    }

    /// Each library code's exit status.
    static let ofLibraryCode: [LibraryError.Code: ExitStatus] = [
        .invalidArgument: .usage, .invalidToken: .usage, .notFound: .badInput, .stale: .badInput,
        .storeFailed: .unavailable, .writeFailed: .outputProblem, .busy: .temporaryFailure, .cannotPair: .badInput,
    ]
}

extension LibraryError.Code {
    /// The stable word `--json` prints for a library failure: the export's `unknown-asset` and
    /// `asset-changed` where a library command fails as `export library:<id>` would, else the
    /// library's own.
    var commandCode: String {
        switch self {
        case .notFound: ExportError.Code.unknownAsset.description
        case .stale: ExportError.Code.assetChanged.description
        default: description
        }
    }

    /// Whether the same command could succeed later.
    var retryable: Bool { self == .busy || self == .storeFailed }
}

extension QueueError.Kind {
    /// Whether the same command could succeed later (the store came back).
    var retryable: Bool { self == .unavailable }

    /// The stable word `--json` prints for a queue's error.
    var code: String {
        switch self {
        case .notFound: "unknown-job"
        case .conflict: "conflict"
        case .invalid: ExportError.Code.invalidArgument.description
        case .unavailable: "store-unavailable"
        }
    }
}
