import Foundation
import ReelSystem

extension ExportError {
    /// A failure of the atomic writer (ReelSystem's `AtomicFile`) as an export error: `output-exists`
    /// for a taken name, `no-space` for a full disk or quota, `output-failed` otherwise.
    package init(_ failure: AtomicFile.Failure) {
        let code: Code = failure.isExisting ? .outputExists : failure.isNoSpace ? .noSpace : .outputFailed
        self.init(code, failure.message)
    }

    /// Runs `body` (calls of the atomic writer), its failure as an export error.
    package static func writing<T>(_ body: () throws(AtomicFile.Failure) -> T) throws(ExportError) -> T {
        do {
            return try body()
        } catch {
            throw ExportError(error)
        }
    }
}

extension AtomicFile {
    /// Writes `data` to `url` whole (`write(_:to:replacing:)`), replacing an existing file only when
    /// `overwrite`; its failure as an export error (`output-exists`, `no-space`, `output-failed`).
    package static func write(_ data: some ContiguousBytes, to url: URL, overwrite: Bool) throws(ExportError) {
        try ExportError.writing { () throws(AtomicFile.Failure) in
            try AtomicFile.write(data, to: url.path, replacing: overwrite)
        }
    }
}
