import Foundation
import ReelExport
import Synchronization

/// What an isolating worker asks its export process (`reel _run-job`) to do: one JSON object on the
/// child's stdin. The child answers with `ExportEvent` lines on its stdout. Both sides use these
/// types, so the protocol cannot drift.
public struct ChildRequest: Sendable, Codable {
    public var spec: JobSpec
    /// Codec threads (0: the codecs choose).
    public var threads: Int
    public var stallTimeout: Double
    public var limits: InputLimits
    /// A folder of user presets, when the worker has one.
    public var presetsFolder: String?
    /// Show FFmpeg's own log on stderr (the worker passes it through).
    public var verbose: Bool
    /// The worker's process id: the child ends itself as soon as its parent is no longer this one.
    public var parent: Int32
    /// Names the attempt's temporary output (`<job id>-<attempt>`).
    public var attemptTag: String

    public init(
        spec: JobSpec, threads: Int, stallTimeout: Double, limits: InputLimits, presetsFolder: String?,
        verbose: Bool, parent: Int32, attemptTag: String
    ) {
        self.attemptTag = attemptTag
        self.spec = spec
        self.threads = threads
        self.stallTimeout = stallTimeout
        self.limits = limits
        self.presetsFolder = presetsFolder
        self.verbose = verbose
        self.parent = parent
    }
}

/// Before renaming its finished output into place, the child asks its worker (which holds the
/// lease) with this line on stdout, and waits for a `PublishAnswer` line on stdin.
public struct PublishRequest: Sendable, Codable, Equatable {
    public var publish = "request"
    public init() {}
}

/// The worker's answer to a `PublishRequest`.
public struct PublishAnswer: Sendable, Codable, Equatable {
    /// Rename the output into place (the lease is still held, nobody cancelled).
    public var publish: Bool
    /// Why not, when not.
    public var reason: String?
    public init(publish: Bool, reason: String? = nil) {
        self.publish = publish
        self.reason = reason
    }
}

/// The child side of an isolated export: reads a `ChildRequest`, runs the export, reports
/// `ExportEvent` lines. Its process dies with its worker, so an orphan never races the worker that
/// takes the job over.
public final class ChildRunner: Sendable {
    private let session = Mutex<ExportSession?>(nil)
    private let cancelled = Atomic<Bool>(false)

    public init() {}

    /// Stops the export (SIGTERM from the worker); the temporary output is removed.
    public func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        session.withLock { $0 }?.cancelExport()
    }

    /// Runs the request read from `input`, writing events with `emit`. Returns the exit status:
    /// 0 completed, 1 failed, 130 cancelled.
    /// `askToPublish` sends a `PublishRequest` and reads the worker's `PublishAnswer` (it blocks the
    /// export's thread meanwhile).
    public func run(
        request data: Data, emit: @escaping @Sendable (ExportEvent) -> Void,
        askToPublish: @escaping @Sendable () -> PublishAnswer
    ) async -> Int32 {
        let request: ChildRequest
        do {
            request = try JSONCoding.decoder.decode(ChildRequest.self, from: data)
        } catch {
            emit(
                .failed(
                    .init(code: "internal", message: "unreadable request from the worker: \(error)", retryable: false)))
            return 1
        }
        ChildRunner.dieWithParent(request.parent)
        MediaLog.configure(verbose: request.verbose)
        do throws(ExportError) {
            let presets = try PresetLibrary(userFolder: request.presetsFolder.map { URL(fileURLWithPath: $0) })
            let spec = request.spec
            let asset = try await Asset.load(URL(fileURLWithPath: spec.asset), limits: request.limits)
            let session = try ExportSession(
                asset: asset, presetName: spec.preset, presets: presets, limits: request.limits)
            spec.configure(session, stallTimeout: request.stallTimeout, threads: request.threads)
            session.temporaryTag = request.attemptTag
            session.publishGate = { () throws(ExportError) in
                let answer = askToPublish()
                if !answer.publish {
                    throw ExportError(
                        .cancelled, "the worker did not publish the output: \(answer.reason ?? "no reason")")
                }
            }
            session.progressHandler = { update in
                if update.status == .exporting { emit(.progress(.init(update))) }
            }
            self.session.withLock { $0 = session }
            if cancelled.load(ordering: .sequentiallyConsistent) { session.cancelExport() }
            try await session.export()
            guard let result = session.result else {
                throw ExportError(.internal, "the export finished without a result")
            }
            emit(
                .completed(
                    .init(
                        output: spec.output, preset: session.preset.name, type: spec.outputType.rawValue, result: result
                    )))
            return 0
        } catch {
            emit(.failed(.init(error)))
            return error.code == .cancelled ? 130 : 1
        }
    }

    /// Ends this process at once when its parent is no longer `parent` (the worker died; the child
    /// was re-parented). Polls: PR_SET_PDEATHSIG follows the parent *thread*, not the process.
    static func dieWithParent(_ parent: Int32) {
        let thread = Thread {
            while getppid() == parent { usleep(200_000) }
            kill(getpid(), SIGKILL)
        }
        thread.name = "reel-parent-watch"
        thread.start()
    }
}
