import CReelSystem
import Foundation
import ReelExport

/// What a worker writes on a job's finished file just before publishing it: the job, the attempt and
/// the file's size, in an extended attribute of the file itself (`user.reel.publish`). Publishing is
/// a link or a rename, so the published output carries it; a file anyone else writes at that path is
/// another file, without it.
///
/// It lets a later attempt recognise the output as the job's own: when a worker published the file
/// but could not record the completion before its lease ran out (its store away for longer than the
/// lease), the job is rescued and runs again; that attempt finds the output carrying a receipt of the
/// same job, and completes the job without encoding it again. Any other file at the path still
/// refuses (`output-exists`). The receipt is removed once the completion is recorded; an attempt that
/// does not publish takes it away with its temporary file. Nothing is left beside the output.
///
/// On a file system without user extended attributes the receipt cannot be written: publishing goes
/// on without it, and such an output is refused by the next attempt as before (README, "Stopping").
struct PublishReceipt: Codable, Equatable, Sendable {
    var job: String
    var attempt: Int
    var bytes: Int64

    static let attribute = "user.reel.publish"

    /// Writes the receipt on `lease`'s finished temporary output, before it is published.
    static func write(for lease: Lease) throws(FileSystem.Failure) {
        let temporary = TemporaryOutput.url(for: URL(fileURLWithPath: lease.spec.output), tag: lease.attemptTag).path
        var info = stat()
        guard stat(temporary, &info) == 0 else { throw .errno("cannot read", temporary) }
        let receipt = PublishReceipt(job: lease.id, attempt: lease.attempt, bytes: Int64(info.st_size))
        guard let data = try? JSONCoding.lineEncoder.encode(receipt) else {
            throw FileSystem.Failure(message: "cannot encode a publish receipt")
        }
        let written = data.withUnsafeBytes { reel_setxattr(temporary, attribute, $0.baseAddress, UInt($0.count)) }
        guard written == 0 else { throw .errno("cannot write the publish receipt on", temporary) }
    }

    /// The receipt on the file at `lease`'s output path, if it is one of this job's and the file is
    /// still the size it was published at.
    static func onOutput(of lease: Lease) -> PublishReceipt? {
        let output = lease.spec.output
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = reel_getxattr(output, attribute, &buffer, UInt(buffer.count))
        var info = stat()
        guard count > 0, stat(output, &info) == 0,
            let receipt = try? JSONCoding.decoder.decode(PublishReceipt.self, from: Data(buffer.prefix(count))),
            receipt.job == lease.id, receipt.bytes == Int64(info.st_size)
        else { return nil }
        return receipt
    }

    /// Takes the receipt off `lease`'s output once its completion is recorded.
    static func remove(for lease: Lease) {
        _ = reel_removexattr(lease.spec.output, attribute)
    }
}
