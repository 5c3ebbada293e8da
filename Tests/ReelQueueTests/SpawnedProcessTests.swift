import Foundation
import ReelMedia
import ReelSystem
import Synchronization
import TestSupport
import Testing

@testable import ReelQueue

/// Child processes: named by a pidfd, never signalled once ended; their input written without SIGPIPE;
/// in a process group of their own when asked.
@Suite("Spawned processes", .tags(.process), .serialized, .timeLimit(.minutes(2)))
struct SpawnedProcessTests {
    @Test func aSignalAfterTheChildEndedReachesNobody() async throws {
        let quick = try SpawnedProcess.start("/bin/true", arguments: [], environment: [:], withInput: false)
        #expect(try await onOwnThread { quick.waitForExit() } == .exited(0))
        // Its number may belong to another process by now: nothing is sent.
        #expect(quick.signal(SIGKILL) == false)
        #expect(quick.signalGroup(SIGKILL) == false)

        let sleeper = try SpawnedProcess.start("/bin/sleep", arguments: ["30"], environment: [:], withInput: false)
        #expect(sleeper.signal(SIGTERM))
        #expect(try await onOwnThread { sleeper.waitForExit() } == .signalled(SIGTERM))
        // Reaped once; asked again, the same answer.
        #expect(try await onOwnThread { sleeper.waitForExit() } == .signalled(SIGTERM))
        #expect(sleeper.signal(SIGTERM) == false)
    }

    @Test func aChildCanLeadAProcessGroupOfItsOwn() async throws {
        let own = try SpawnedProcess.start(
            "/bin/sleep", arguments: ["30"], environment: [:], withInput: false, newProcessGroup: true)
        let shared = try SpawnedProcess.start("/bin/sleep", arguments: ["30"], environment: [:], withInput: false)
        #expect(getpgid(own.pid) == own.pid)
        #expect(getpgid(shared.pid) == getpgrp())
        // A signal to the group reaches the leader.
        #expect(own.signalGroup(SIGTERM))
        #expect(try await onOwnThread { own.waitForExit() } == .signalled(SIGTERM))
        shared.signal(SIGKILL)
        _ = try await onOwnThread { shared.waitForExit() }
    }

    /// With SIGPIPE at its default (a host that never set it: the process would die), writing to a
    /// child that closed its input fails instead; so does a worker pool whose export process exits at
    /// once without reading its request.
    @Test func writingToAChildThatStoppedReadingFailsWithoutSIGPIPE() async throws {
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        let child = try SpawnedProcess.start(
            "/bin/sh", arguments: ["-c", "exec 0<&-; sleep 5"], environment: [:], withInput: true)
        let closed = await eventually(within: .seconds(10)) {
            FileManager.default.fileExists(atPath: "/proc/\(child.pid)/fd/0") ? nil : true
        }
        #expect(closed != nil)
        #expect(child.input?.write(Data(count: 1 << 20)) == false)
        child.signal(SIGKILL)
        _ = try await onOwnThread { child.waitForExit() }

        let spool = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let outputs = Fixtures.scratchFolder("outputs")
        // The export process never reads its request, so the asset is never opened.
        let id = try await spool.submit(
            JobSpec(
                asset: "/nonexistent/never-read.mp4", preset: "LowQuality", outputType: .mp4,
                output: outputs.appendingPathComponent("four.mp4").path, maxAttempts: 1)
        ).status.id
        let pool = WorkerPool(
            store: spool,
            configuration: .init(
                jobs: 1, drain: true, recoveryInterval: 3600, isolation: Isolation(executable: "/bin/true")))
        await pool.run()
        let status = try #require(try spool.status(id: id))
        #expect(status.state == .failed && status.error?.code == .internal, "\(status)")
    }
}
