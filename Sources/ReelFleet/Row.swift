import Foundation
import PostgresNIO
import ReelExport
import ReelQueue

/// One row of `reel_jobs`, as the store reads it: the job's status (the same `JobStatus` the spool
/// writes), its spec, and what only the database keeps (the lease, a pending cancel, its clock).
struct Row: Sendable {
    var status: JobStatus
    var spec: JobSpec
    var leaseToken: String?
    var cancelRequested: Bool
    /// The database's `now()` when the row was read, when the query asked for it.
    var databaseNow: Date?

    /// The columns every query reads, for a table alias (`j.` in an update joined with a CTE).
    static func columns(_ alias: String = "") -> String {
        let p = alias.isEmpty ? "" : alias + "."
        return """
            \(p)id, \(p)spec::text AS spec, \(p)priority, \(p)state, \(p)attempts, \(p)max_attempts, \(p)worker, \
            \(p)progress, \(p)phase, \(p)fps, \(p)eta_seconds, \(p)error::text AS error, \(p)result::text AS result, \
            \(p)created_at, \(p)updated_at, \(p)started_at, \(p)finished_at, \(p)not_before, \(p)lease_token, \
            \(p)cancel_requested, \(p)heartbeat_at, \(p)renditions::text AS renditions, \(p)items::text AS items, \
            (\(p)state = 'exporting' AND \(p)lease_expires < now()) AS orphaned
            """
    }

    init(_ row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        let id = try cells["id"].decode(String.self)
        let specJSON = try cells["spec"].decode(String.self)
        spec = try JSONCoding.decoder.decode(JobSpec.self, from: Data(specJSON.utf8))
        var status = JobStatus(id: id, spec: spec, now: try cells["created_at"].decode(Date.self))
        let state = try cells["state"].decode(String.self)
        guard let known = JobState(rawValue: state) else {
            throw QueueError(.unavailable, "job \(id) is in an unknown state '\(state)'")
        }
        status.state = known
        status.priority = try cells["priority"].decode(Int.self)
        status.attempts = try cells["attempts"].decode(Int.self)
        status.maxAttempts = try cells["max_attempts"].decode(Int.self)
        status.worker = try cells["worker"].decode(String?.self)
        status.progress = try cells["progress"].decode(Double.self)
        status.phase = try cells["phase"].decode(String?.self).flatMap(ExportSession.Phase.init(rawValue:))
        status.fps = try cells["fps"].decode(Double?.self)
        status.etaSeconds = try cells["eta_seconds"].decode(Double?.self)
        if let renditions = try cells["renditions"].decode(String?.self) {
            status.renditions = try JSONCoding.decoder.decode(
                [ExportSession.RenditionProgress].self, from: Data(renditions.utf8))
        }
        if let items = try cells["items"].decode(String?.self) {
            status.items = try JSONCoding.decoder.decode(JobItems.self, from: Data(items.utf8))
        }
        if let error = try cells["error"].decode(String?.self) {
            status.error = try JSONCoding.decoder.decode(JobError.self, from: Data(error.utf8))
        }
        if let result = try cells["result"].decode(String?.self) {
            status.result = try JSONCoding.decoder.decode(JobResult.self, from: Data(result.utf8))
        }
        status.updatedAt = try cells["updated_at"].decode(Date.self)
        status.startedAt = try cells["started_at"].decode(Date?.self)
        status.finishedAt = try cells["finished_at"].decode(Date?.self)
        status.notBefore = try cells["not_before"].decode(Date?.self)
        status.heartbeatAt = try cells["heartbeat_at"].decode(Date?.self)
        // An exporting job whose lease has expired and that no worker has rescued yet.
        status.orphaned = try cells["orphaned"].decode(Bool?.self) == true ? true : nil
        self.status = status
        leaseToken = try cells["lease_token"].decode(UUID?.self)?.uuidString.lowercased()
        cancelRequested = try cells["cancel_requested"].decode(Bool.self)
        databaseNow = cells.contains("db_now") ? try cells["db_now"].decode(Date.self) : nil
    }

    /// The statement that stores `status` (after a transition computed by `JobStatus`) in its row.
    /// A job that is no longer exporting gives up its lease deadline and any cancel request. The lease
    /// token stays (a finish's own commit is recognised by it) unless `takingOver`: a change made by
    /// someone other than the lease's worker clears it.
    static func update(_ status: JobStatus, takingOver: Bool = false) throws -> PostgresQuery {
        let error = try status.error.map { String(decoding: try JSONCoding.lineEncoder.encode($0), as: UTF8.self) }
        let result = try status.result.map { String(decoding: try JSONCoding.lineEncoder.encode($0), as: UTF8.self) }
        let renditions = try status.renditions.map(JSONCoding.text)
        let items = try status.items.map(JSONCoding.text)
        let exporting = status.state == .exporting
        return """
            UPDATE reel_jobs SET
                state = \(status.state.rawValue), attempts = \(status.attempts), worker = \(status.worker),
                progress = \(status.progress), phase = \(status.phase?.rawValue), fps = \(status.fps),
                eta_seconds = \(status.etaSeconds), renditions = \(renditions)::jsonb, items = \(items)::jsonb,
                error = \(error)::jsonb,
                result = \(result)::jsonb,
                updated_at = \(status.updatedAt), started_at = \(status.startedAt),
                finished_at = \(status.finishedAt), not_before = \(status.notBefore),
                heartbeat_at = \(status.heartbeatAt),
                lease_token = CASE WHEN \(takingOver) THEN NULL ELSE lease_token END,
                lease_expires = CASE WHEN \(exporting) THEN lease_expires END,
                cancel_requested = cancel_requested AND \(exporting)
            WHERE id = \(status.id)
            RETURNING \(unescaped: columns())
            """
    }
}

extension JSONCoding {
    /// A value as one line of JSON text, for a `jsonb` parameter.
    static func text<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try lineEncoder.encode(value), as: UTF8.self)
    }
}
