import Foundation
import QueueContract
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// The spool as a `StoreHarness`: a fresh folder per store; a dead worker is one whose `flock` was
/// dropped; retries fall due when their delayed markers are renamed due now.
struct SpoolHarness: StoreHarness {
    func makeStore() async throws -> any JobStore {
        try SpoolStore(root: Fixtures.scratchFolder("spool"), retryBackoff: JobStoreContract.retryBackoff)
    }

    func reopen(_ store: any JobStore) async throws -> any JobStore {
        try SpoolStore(root: (store as! SpoolStore).root, retryBackoff: JobStoreContract.retryBackoff)
    }

    func killWorker(holding lease: Lease, in store: any JobStore) async throws {
        (store as! SpoolStore).releaseLock(of: lease)
    }

    func makeRetriesDue(in store: any JobStore) async throws {
        let spool = store as! SpoolStore
        for name in FileSystem.names(in: spool.path(.delayed)) {
            guard let dash = name.firstIndex(of: "-") else { continue }
            let due = spool.path(.delayed, "0000000000000" + name[dash...])
            #expect(rename(spool.path(.delayed, name), due) == 0)
        }
    }
}

/// The store-agnostic contract (Tests/QueueContract), run against the spool.
@Suite("Job store contract: spool", .tags(.media), .timeLimit(.minutes(7)))
struct SpoolContractTests {
    @Test(arguments: JobStoreContract.cases)
    func contract(_ rule: JobStoreContract.Case) async throws {
        try await rule.run(SpoolHarness())
    }
}

/// What only the spool does: its files.
// A hang guard, not a speed check: 300 submits each fsync their files, which a disk shared with the
// whole test run (and other builds) stretched past three minutes.
@Suite("Spool store", .tags(.media), .timeLimit(.minutes(8)))
struct SpoolStoreTests {
    static func spec() async throws -> JobSpec {
        JobSpec(
            asset: try await Fixtures.url(Fixtures.landscape).path, preset: "LowQuality", outputType: .mp4,
            output: Fixtures.folder.appendingPathComponent("never-{id}.mp4").path)
    }

    /// A child process being spawned shares every open file until its exec closes the descriptors
    /// (standing in for it here: a duplicate of the lock's descriptor); a released lock must be free
    /// at once all the same, or another worker's claim or rescue skips the job.
    @Test func aReleasedLockIsFreeWhileItsOpenFileIsShared() throws {
        let path = Fixtures.scratchFolder("lock").appendingPathComponent("j.lock").path
        let lock = try #require(FileLock(path: path))
        let shared = dup(lock.fileDescriptor)
        try #require(shared >= 0)
        defer { close(shared) }
        #expect(FileLock(path: path) == nil, "a held lock was taken twice")
        lock.release()
        let again = FileLock(path: path)
        #expect(again != nil, "the lock stayed held after its owner released it")
        again?.release()
    }

    @Test func statusFilesFollowTheSchema() async throws {
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let id = try await store.submit(try await Self.spec()).status.id
        let data = try Data(contentsOf: URL(fileURLWithPath: store.statusFile(id)))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for field in [
            "schema", "id", "state", "progress", "asset", "preset", "outputType", "output", "attempts", "createdAt",
            "updatedAt", "error",
        ] {
            #expect(json.keys.contains(field), "missing \(field)")
        }
        #expect(json["schema"] as? Int == 1 && json["state"] as? String == "waiting")
        #expect(json["error"] is NSNull)
        #expect((json["createdAt"] as? String)?.hasSuffix("Z") == true)
    }

    @Test func aLargeSpoolStillClaimsInOrder() async throws {
        // More waiting markers than a claim reads at once (32): the order must hold across them.
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let spec = try await Self.spec()
        var ids: [String] = []
        for index in 0..<300 {
            var job = spec
            job.priority = index % 3
            ids.append(try await store.submit(job).status.id)
        }
        let order = (0..<300).sorted { (a: Int, b: Int) -> Bool in
            let (pa, pb) = (a % 3, b % 3)
            return pa != pb ? pa > pb : a < b
        }
        let expected = order.map { ids[$0] }
        var claimed: [String] = []
        while let lease = try await store.claim(worker: "w") {
            claimed.append(lease.id)
            try await store.finish(lease, .cancelled)
        }
        #expect(claimed == expected)
    }

    /// Keys and output reservations are symbolic links to the job's id (no data block each); spools
    /// written before hold them as small files, which are still honoured.
    @Test func keysAndTargetsAreLinksAndOldFilesStillCount() async throws {
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        var spec = try await Self.spec()
        spec.output = Fixtures.scratchFolder("target").appendingPathComponent("one.mp4").path
        spec.key = "order-1"
        let job = try await store.submit(spec).status
        let key = store.path(.keys, try SpoolStore.keyName("order-1"))
        let target = store.path(.targets, SpoolStore.targetName(spec.output))
        for entry in [key, target] {
            var info = stat()
            #expect(lstat(entry, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "\(entry) is not a link")
            #expect(info.st_blocks == 0, "\(entry) takes \(info.st_blocks) blocks")
            #expect(FileSystem.readEntry(entry) == job.id)
        }
        // As an older spool wrote them: a file holding the id, and one holding the id and the path.
        unlink(key)
        unlink(target)
        #expect(FileManager.default.createFile(atPath: key, contents: Data(job.id.utf8)))
        #expect(FileManager.default.createFile(atPath: target, contents: Data("\(job.id)\n\(spec.output)".utf8)))
        let again = try await store.submit(spec)
        #expect(!again.created && again.status.id == job.id)
        var other = spec
        other.key = nil
        do {
            _ = try await store.submit(other)
            Issue.record("a second job was given the output of a waiting one")
        } catch let error as QueueError {
            #expect(error.kind == .conflict && error.message.contains(job.id), "\(error.message)")
        }
        // Once the job ends its output is free, and pruning it frees its key.
        #expect(try await store.cancel(job.id) == .cancelled)
        var gone = stat()
        #expect(lstat(target, &gone) != 0)
        #expect(try await store.prune(finishedBefore: Date().addingTimeInterval(60), states: [.cancelled]) == 1)
        #expect(lstat(key, &gone) != 0)
        #expect(try await store.submit(other).created)
    }

    @Test func readingCommandsDoNotCreateASpool() async throws {
        let missing = Fixtures.scratchFolder("nothing").appendingPathComponent("spool")
        #expect(throws: QueueError.self) { try SpoolStore(root: missing, create: false) }
        #expect(!FileManager.default.fileExists(atPath: missing.path))
        _ = try SpoolStore(root: missing, create: true)
        _ = try SpoolStore(root: missing, create: false)
    }

    @Test func aLeftoverTemporaryOutputIsRemovedWithItsDeadWorkersJob() async throws {
        let store = try SpoolStore(root: Fixtures.scratchFolder("spool"))
        let outputs = Fixtures.scratchFolder("outputs")
        var spec = try await Self.spec()
        spec.output = outputs.appendingPathComponent("clip.mp4").path
        _ = try await store.submit(spec)
        let lease = try #require(try await store.claim(worker: "w"))
        let partial = outputs.appendingPathComponent(".clip.mp4.reel-1234abcd.partial")
        try Data("partial".utf8).write(to: partial)
        store.releaseLock(of: lease)
        #expect(try await store.rescueExpired() == 1)
        #expect(!FileManager.default.fileExists(atPath: partial.path))
    }
}
