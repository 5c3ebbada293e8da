import Foundation
import QueueContract
import ReelQueue
import Synchronization
import TestSupport
import Testing

@testable import ReelFleet

/// PostgreSQL as a `StoreHarness`: a fresh database per store on the tests' private server; a dead
/// worker is one whose lease has expired (its deadline moved into the past on the database's
/// clock); retries fall due when their `not_before` is moved to now.
struct PostgresHarness: StoreHarness {
    /// The contract's cases take leases by hand (a dead worker's is moved into the past) and time
    /// nothing, so worker requests get a minute: a test machine busy with everything else once took
    /// more than the default 10 s to answer a claim.
    var options = PostgresStore.Options(
        lease: .seconds(180), connections: 4, requestTimeout: .seconds(120),
        retryBackoff: JobStoreContract.retryBackoff, workerTimeout: .seconds(60))
    /// The stores it opened, for `OpenedStores.closing`.
    let opened = OpenedStores()

    func makeStore() async throws -> any JobStore {
        let server = try await PostgresServer.shared()
        let url = try await server.makeDatabase()
        var options = options
        options.statusFolder = Fixtures.scratchFolder("status").path
        let store = try PostgresStore(url: try DatabaseURL(url), options: options)
        opened.add(store)
        #expect(try await store.migrate() == [1, 2, 3])
        return store
    }

    func reopen(_ store: any JobStore) async throws -> any JobStore {
        let store = store as! PostgresStore
        return opened.add(try PostgresStore(url: store.url, options: store.options))
    }

    func killWorker(holding lease: Lease, in store: any JobStore) async throws {
        let store = store as! PostgresStore
        try await store.client.query(
            """
            UPDATE reel_jobs SET lease_expires = now() - interval '1 millisecond'
            WHERE id = \(lease.id) AND lease_token = \(UUID(uuidString: lease.token)!)
            """)
    }

    func makeRetriesDue(in store: any JobStore) async throws {
        let store = store as! PostgresStore
        try await store.client.query(
            "UPDATE reel_jobs SET not_before = now() WHERE state = 'waiting' AND not_before IS NOT NULL")
    }
}

/// The store-agnostic contract (Tests/QueueContract), unchanged, run against PostgreSQL. One case at
/// a time: some cases time a retry's backoff (1–2 s) across a few round trips, which a machine busy
/// with twenty databases at once (and the export tests beside them) can stretch past it.
@Suite("Job store contract: PostgreSQL", .tags(.postgres), .serialized, .timeLimit(.minutes(8)))
struct PostgresContractTests {
    @Test(arguments: JobStoreContract.cases)
    func contract(_ rule: JobStoreContract.Case) async throws {
        let harness = PostgresHarness()
        try await harness.opened.closing { try await rule.run(harness) }
    }
}

/// The stores a harness opened, closed once a test is done with them however it ended (a case that
/// fails halfway would otherwise leave each store's pool and its server sessions open until the test
/// process exits).
final class OpenedStores: Sendable {
    private let stores = Mutex<[PostgresStore]>([])

    @discardableResult
    func add(_ store: PostgresStore) -> PostgresStore {
        stores.withLock { $0.append(store) }
        return store
    }

    /// Runs `body`, then closes every store added meanwhile, whether `body` threw or not.
    func closing<T>(_ body: () async throws -> T) async throws -> T {
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        let all = stores.withLock { stores in
            defer { stores = [] }
            return stores
        }
        for store in all { await store.close() }
        return try result.get()
    }
}
