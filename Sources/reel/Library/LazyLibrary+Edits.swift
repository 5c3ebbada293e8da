import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary

extension LazyLibrary {
    /// The resource a `library:<id>` photo renders from for `version` (`current`, `unadjusted`,
    /// `original`): `PhotoLibrary.photoResource(for:version:)`'s type name.
    func photoResourceName(_ identifier: String, version: String) async throws(ExportError) -> String {
        let library = try library()
        let reference = LibraryReference.scheme + identifier
        do {
            let asset = try await library.asset(identifier)
            return try await library.photoResource(for: asset, version: AssetVersion(rawValue: version) ?? .current)
                .type.name
        } catch let error as LibraryError {
            if error.code == .notFound {
                throw ExportError(.unknownAsset, "\(reference): \(error.message)", retryable: false)
            }
            throw ExportError(.internal, "\(reference): the library failed: \(error.message)")
        } catch {
            throw ExportError(.internal, "\(reference): the library failed: \(error)")
        }
    }
}
