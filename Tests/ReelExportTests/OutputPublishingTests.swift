import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReelExport
@testable import ReelMedia

/// How an export's file appears: one temporary-name scheme, a tag per attempt, a gate before the
/// move into place, and nothing published after the session ended.
@Suite("Output publishing", .tags(.media), .timeLimit(.minutes(10)))
struct OutputPublishingTests {
    @Test func temporaryNamesAreHiddenBesideTheDestinationAndMatchEveryTag() {
        let destination = URL(fileURLWithPath: "/videos/clip.mp4")
        let url = TemporaryOutput.url(for: destination, tag: "j1f2-3")
        #expect(url.path == "/videos/.clip.mp4.reel-j1f2-3.partial")
        #expect(TemporaryOutput.url(for: destination, tag: "a/b c").lastPathComponent == ".clip.mp4.reel-a_b_c.partial")
        #expect(TemporaryOutput.isTemporary(url.lastPathComponent, for: destination))
        #expect(TemporaryOutput.isTemporary(".clip.mp4.reel-1234abcd.partial", for: destination))
        for name in ["clip.mp4", ".clip.mp4.reel-.partial", ".other.mp4.reel-x.partial", ".clip.mp4.reel-x.part"] {
            #expect(!TemporaryOutput.isTemporary(name, for: destination), "\(name)")
        }
    }

    @Test func leftoversOfOneDestinationAreRemovedAndNothingElse() throws {
        let folder = Fixtures.scratchFolder("leftovers")
        let destination = folder.appendingPathComponent("clip.mp4")
        let names = [
            ".clip.mp4.reel-a.partial", ".clip.mp4.reel-j9-2.partial", ".other.mp4.reel-a.partial", "clip.mp4",
        ]
        for name in names { try Data("x".utf8).write(to: folder.appendingPathComponent(name)) }
        TemporaryOutput.removeLeftovers(for: destination)
        #expect(contents(of: folder).sorted() == [".other.mp4.reel-a.partial", "clip.mp4"])
    }

    @Test func theGateSeesTheCompleteFileUnderTheAttemptsTagBeforeItIsPublished() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.wav))
        let session = try ExportSession(asset: asset, presetName: "AppleM4A")
        let folder = Fixtures.scratchFolder("gate-open")
        let destination = folder.appendingPathComponent("out.m4a")
        session.outputURL = destination
        session.temporaryTag = "job7-2"
        let seen = Mutex<(temporary: Bool, destination: Bool)?>(nil)
        session.publishGate = {
            let temporary = TemporaryOutput.url(for: destination, tag: "job7-2").path
            seen.withLock {
                $0 = (
                    (try? FileManager.default.attributesOfItem(atPath: temporary)[.size] as? Int ?? 0) ?? 0 > 0,
                    FileManager.default.fileExists(atPath: destination.path)
                )
            }
        }
        try await session.export()
        let gate = try #require(seen.withLock { $0 })
        #expect(gate.temporary && !gate.destination)
        #expect(contents(of: folder) == ["out.m4a"])
    }

    @Test func aClosedGateFailsTheExportWithItsErrorAndLeavesNothing() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.wav))
        let session = try ExportSession(asset: asset, presetName: "AppleM4A")
        let folder = Fixtures.scratchFolder("gate-closed")
        session.outputURL = folder.appendingPathComponent("out.m4a")
        let refusal = ExportError(.outputFailed, "the lease on this job was lost")
        session.publishGate = { () throws(ExportError) in throw refusal }
        do {
            try await session.export()
            Issue.record("the export published despite the gate")
        } catch {
            #expect(error == refusal)
        }
        #expect(session.status == .failed && session.error == refusal)
        #expect(contents(of: folder).isEmpty)
    }

    @Test func progressAfterTheSessionEndedIsIgnored() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.wav))
        let session = try ExportSession(asset: asset, presetName: "AppleM4A")
        session.outputURL = Fixtures.scratchFolder("late").appendingPathComponent("out.m4a")
        let reports = Atomic<Int>(0)
        try await session.export()
        session.progressHandler = { _ in reports.wrappingAdd(1, ordering: .relaxed) }
        let final = session.currentProgress
        // What a thread the watchdog abandoned could still send.
        session.publish(
            TranscodeProgress(phase: .transcoding, fraction: 0.5, frames: 7, mediaSeconds: 1), started: .now)
        #expect(session.currentProgress == final)
        #expect(reports.load(ordering: .relaxed) == 0)
    }

    /// A queue's gate is synchronous and waits for async work (its lease confirmed by a task): more
    /// sets at their gates at once than Swift's cooperative pool has threads must all publish, so the
    /// gates never run on that pool. (On two cores, two queued sets once held both of its threads
    /// while each gate waited for a task that needed one, and the worker hung.)
    @Test func setsWhoseGatesWaitForTasksAllPublishHoweverManyRunAtOnce() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.gop))
        let folder = Fixtures.scratchFolder("gates")
        let count = ProcessInfo.processInfo.activeProcessorCount + 1
        let arrivals = Rendezvous(expected: count)
        let request = ThumbnailSetRequest(count: 2, maxSize: "64x")
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                let set = ThumbnailSetExport(
                    asset: asset, request: request, destination: folder.appendingPathComponent("set\(index)"))
                set.publishGate = { () throws(ExportError) in
                    // What `PublishVerdict.blocking` does: a task answers, this thread waits for it.
                    let answered = DispatchSemaphore(value: 0)
                    Task {
                        await arrivals.arrive()
                        answered.signal()
                    }
                    if answered.wait(timeout: .now() + 60) == .timedOut {
                        throw ExportError(.internal, "the gate's task never ran")
                    }
                }
                group.addTask { try await set.run().images.count }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: 2, count: count))
        #expect(contents(of: folder).sorted() == (0..<count).map { "set\($0)" }.sorted())
    }
}

/// Suspends each caller until `expected` callers have arrived.
private actor Rendezvous {
    let expected: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(expected: Int) { self.expected = expected }

    func arrive() async {
        await withCheckedContinuation { continuation in
            waiting.append(continuation)
            if waiting.count >= expected {
                for waiter in waiting { waiter.resume() }
                waiting.removeAll()
            }
        }
    }
}
