import Foundation
import ReelExport
// `public`: ChildRequest.limits is an `InputLimits`, ReelMedia's `InputPolicy` under ReelExport's name.
public import ReelMedia
import ReelSystem
import Synchronization

/// What an isolating worker asks its export process (`reel _run-job`) to do: one JSON object on the
/// child's stdin. The child answers with `ChildMessage` lines on its stdout. Both sides use these
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
    /// Names the attempt's temporary output (`<job id>-<attempt>`).
    public var attemptTag: String

    public init(
        spec: JobSpec, threads: Int, stallTimeout: Double, limits: InputLimits, presetsFolder: String?,
        verbose: Bool, attemptTag: String
    ) {
        self.attemptTag = attemptTag
        self.spec = spec
        self.threads = threads
        self.stallTimeout = stallTimeout
        self.limits = limits
        self.presetsFolder = presetsFolder
        self.verbose = verbose
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

/// One line an export process writes on its stdout: an `ExportEvent` (progress, completed, failed)
/// or a `PublishRequest`. Told apart by their keys (`event`, `publish`).
enum ChildMessage: Sendable, Equatable {
    case event(ExportEvent)
    case publishRequest

    init?(jsonLine: Data) {
        struct Kind: Decodable {
            var event: String?
            var publish: String?
        }
        guard let kind = try? JSONCoding.decoder.decode(Kind.self, from: jsonLine) else { return nil }
        if kind.publish == PublishRequest().publish {
            self = .publishRequest
        } else if kind.event != nil, let event = ExportEvent(jsonLine: jsonLine) {
            self = .event(event)
        } else {
            return nil
        }
    }
}

/// The child side of an isolated export: reads a `ChildRequest`, runs the export, reports
/// `ExportEvent` lines.
///
/// A stop signal (SIGTERM, SIGINT or SIGHUP, from the worker or from anyone else) stops the export, removes
/// its temporary output and ends the process with `interruptedStatus`, reporting no failure: the
/// worker decides what the stop means. The worker's end of standard input closing (the worker died,
/// however) stops the export the same way, so an orphan never races the worker that takes the job over
/// and leaves no temporary file.
public final class ChildRunner: Sendable {
    /// The exit status of an export stopped by a signal or by its worker's end (EX_TEMPFAIL).
    public static let interruptedStatus: Int32 = 75

    private let session = Mutex<ExportSession?>(nil)
    /// A thumbnail job's set, while it runs.
    private let thumbnailSet = Mutex<ThumbnailSetExport?>(nil)
    /// A cache job's run, while it runs.
    private let cacheRun = Mutex<(any PhotoCacheRun)?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// The attempt's temporary output, once the request is read.
    private let temporary = Mutex<URL?>(nil)
    /// What runs cache jobs (nil: they fail, retryable, as in a worker without one).
    private let photoCache: (any PhotoCacheRunner)?

    public init(photoCache: (any PhotoCacheRunner)? = nil) {
        self.photoCache = photoCache
    }

    /// Stops the export (a stop signal, or the worker gone); the temporary output is removed.
    public func interrupt() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        session.withLock { $0 }?.cancelExport()
        thumbnailSet.withLock { $0 }?.cancel()
        cacheRun.withLock { $0 }?.stop()
    }

    /// Runs the request read from `input`, writing events with `emit`. Returns the exit status:
    /// 0 completed, 1 failed, `interruptedStatus` stopped.
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
            if stopped.load(ordering: .sequentiallyConsistent) { return Self.interruptedStatus }
            let failure = ExportError(.internal, "unreadable request from the worker: \(error)", retryable: false)
            emit(.failed(.init(failure)))
            return 1
        }
        temporary.withLock {
            $0 = TemporaryOutput.url(for: URL(fileURLWithPath: request.spec.output), tag: request.attemptTag)
        }
        MediaLog.configure(verbose: request.verbose)
        do throws(ExportError) {
            let presets = try PresetLibrary(userFolder: request.presetsFolder.map { URL(fileURLWithPath: $0) })
            let spec = request.spec
            if let cache = spec.cache {
                guard let photoCache else { throw WorkerPool.cannotCacheError }
                let began = ContinuousClock.now
                // Photos done go to the worker as progress `frames` (it knows the job's total).
                let made = try await photoCache.run(
                    cache, threads: request.threads, limits: request.limits, stallTimeout: request.stallTimeout,
                    attach: { [self] run in
                        cacheRun.withLock { $0 = run }
                        if stopped.load(ordering: .sequentiallyConsistent) { run.stop() }
                    },
                    progress: { items in
                        emit(
                            .progress(
                                .init(
                                    fraction: items.total > 0 ? Double(items.done) / Double(items.total) : 1,
                                    frames: items.done)))
                    })
                var completion = ExportEvent.Completion(
                    output: spec.output, preset: spec.preset, type: spec.typeName,
                    result: made.summary(elapsed: (ContinuousClock.now - began) / .seconds(1)))
                completion.cache = made
                emit(.completed(completion))
                return 0
            }
            if spec.thumbnails != nil {
                let set = try await spec.thumbnailSet(limits: request.limits, tag: request.attemptTag) {
                    () throws(ExportError) in
                    let answer = askToPublish()
                    if !answer.publish {
                        throw ExportError(
                            .cancelled, "the worker did not publish the output: \(answer.reason ?? "no reason")")
                    }
                }
                set.stallTimeout = request.stallTimeout
                set.codecThreads = request.threads
                set.progressHandler = { fraction in
                    emit(.progress(.init(fraction: fraction, frames: 0)))
                }
                thumbnailSet.withLock { $0 = set }
                if stopped.load(ordering: .sequentiallyConsistent) { set.cancel() }
                let made = try await set.run(limits: spec.inputLimits(request.limits))
                var completion = ExportEvent.Completion(
                    output: spec.output, preset: spec.preset, type: spec.typeName, result: made.summary)
                completion.thumbnails = made
                emit(.completed(completion))
                return 0
            }
            let startup = ChildRunner.processAgeSeconds()
            let loading = ContinuousClock.now
            let asset = try await spec.loadAsset(limits: request.limits)
            let loadSeconds = (ContinuousClock.now - loading) / .seconds(1)
            let session = try ExportSession(
                asset: asset, presetName: spec.preset, presets: presets, limits: spec.inputLimits(request.limits))
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
            if stopped.load(ordering: .sequentiallyConsistent) { session.cancelExport() }
            try await session.export()
            guard var result = session.result else {
                throw ExportError(.internal, "the export finished without a result")
            }
            // Before the session: this process's start and the asset's probe.
            result.phases?.startup = startup
            result.phases?.probe += loadSeconds
            emit(
                .completed(
                    .init(
                        output: spec.output, preset: session.preset.name, type: spec.typeName, result: result,
                        ladder: session.ladderResult)))
            return 0
        } catch {
            if stopped.load(ordering: .sequentiallyConsistent) { return Self.interruptedStatus }
            emit(.failed(.init(error)))
            return 1
        }
    }

    /// Seconds since this process started (`/proc/self/stat`'s start time, in clock ticks since boot,
    /// against the boot-time clock): an export process's start-up, dynamic linking and
    /// initialisation included; nil where it cannot be read.
    static func processAgeSeconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command's closing parenthesis start at field 3 (state); starttime is 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        var now = timespec()
        guard clock_gettime(CLOCK_BOOTTIME, &now) == 0 else { return nil }
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard hertz > 0 else { return nil }
        return max(0, Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - ticks / hertz)
    }

    /// Runs the export the worker sends on standard input, writing lines with `printLine`: the
    /// request is the first line; answers to publish requests follow. When standard input ends (the
    /// worker is gone), the export is interrupted and any wait for an answer ends with "no".
    public func runFromStandardInput(printLine: @escaping @Sendable (String) -> Void) async -> Int32 {
        let inbox = Inbox()
        startThread(named: "reel-child-input") { [self] in
            while let line = readLine(strippingNewline: true) { inbox.put(line) }
            inbox.close()
            workerGone()
        }
        let first = await onOwnThread(named: "reel-child-request") { inbox.take() }
        guard let first else { return Self.interruptedStatus }
        return await run(request: Data(first.utf8)) { event in
            printLine(event.jsonLine)
        } askToPublish: {
            guard let request = try? JSONCoding.lineEncoder.encode(PublishRequest()) else {
                return PublishAnswer(publish: false, reason: "cannot encode the request")
            }
            printLine(String(decoding: request, as: UTF8.self))
            guard let line = inbox.take(),
                let answer = try? JSONCoding.decoder.decode(PublishAnswer.self, from: Data(line.utf8))
            else { return PublishAnswer(publish: false, reason: "the worker did not answer") }
            return answer
        }
    }

    /// The worker is gone (standard input ended): nobody will publish this export or record it. Its
    /// temporary output goes at once, the export is stopped, and the process ends within 2 s whatever
    /// the export is doing (a codec busy in a long frame must not keep an orphan alive under a loaded
    /// machine while a rescue hands the job to another worker).
    private func workerGone() {
        if let file = temporary.withLock({ $0 }) { unlink(file.path) }
        interrupt()
        startThread(named: "reel-child-orphan") {
            sleep(2)
            _exit(ChildRunner.interruptedStatus)
        }
    }

    /// Lines read from standard input, handed to whoever waits for the next one (blocking).
    private final class Inbox: Sendable {
        private let lines = Mutex<(queue: [String], closed: Bool)>(([], false))
        private let available = DispatchSemaphore(value: 0)

        func put(_ line: String) {
            lines.withLock { $0.queue.append(line) }
            available.signal()
        }

        func close() {
            lines.withLock { $0.closed = true }
            available.signal()
        }

        /// The next line, or nil once the input has ended.
        func take() -> String? {
            while true {
                let next = lines.withLock { state -> String?? in
                    if !state.queue.isEmpty { return state.queue.removeFirst() }
                    return state.closed ? .some(nil) : nil
                }
                if let next {
                    if next == nil { available.signal() }  // every later taker sees the end too
                    return next
                }
                available.wait()
            }
        }
    }
}
