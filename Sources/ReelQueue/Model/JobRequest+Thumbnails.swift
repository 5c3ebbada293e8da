import Foundation
import ReelExport

extension JobRequest {
    /// The spec of a thumbnail job: the set checked (`ThumbnailSetRequest.check()`) for a file or a
    /// `library:<id>` asset (resolved before, as an export's; `resource` picks the resource), and with
    /// `.plan`, its times against the asset's duration from a header-only probe; the folder named by
    /// `output` (`-o thumbs/` names `thumbs`) or `<outputDir>/<asset name>.thumbnails.<job id>`, which
    /// must not exist unless `overwrite`. Throws `invalid-argument` for an export option a set does
    /// not take, or what the checks throw, in the words `reel thumbnail` uses.
    func resolve(
        _ thumbnails: ThumbnailSetRequest, limits: InputLimits, workingDirectory: URL, checks: Checks
    ) throws(ExportError) -> JobSpec {
        var others = export
        others.output = nil
        others.overwrite = nil
        others.resource = nil
        if others != ExportRequest() {
            throw ExportError(
                .invalidArgument,
                "a thumbnail set takes output (or outputDir), overwrite and resource of the export's options, not \(ExportRequest.keysSet(in: others).joined(separator: ", ")) (a picture's size is thumbnails.maxSize)"
            )
        }
        // A library asset (`resolveLibraryAsset(in:)` resolved it): the file, or the Motion Photo's
        // range, the library names; with no times asked, one picture at its still's moment.
        try export.checkResource(asset: asset)
        let remote = try checkedRemote()
        if LibraryReference.identifier(in: asset) != nil, librarySource == nil {
            throw ExportError(.invalidArgument, "\(asset) names a library asset, and no library resolved it")
        }
        let source = LibraryReference.identifier(in: asset) != nil ? librarySource : nil
        var thumbnails = thumbnails
        if let source, thumbnails.asksNoTimes, source.stillImageTime != nil { thumbnails.at = ["still"] }
        let checked = try thumbnails.check()
        if let key { try JobSpec.checkKey(key) }
        let attempts = try JobSpec.checkedAttempts(maxAttempts)
        func absolute(_ path: String) -> URL { JobRequest.absolute(path, in: workingDirectory) }
        // A URL's set is named after its file name.
        let assetURL =
            source.map { URL(fileURLWithPath: $0.path) } ?? remote.map { absolute($0.fileName) } ?? absolute(asset)
        let outputURL: URL
        if let output = export.output {
            if outputDir != nil { throw ExportError(.invalidArgument, "give output or outputDir, not both") }
            outputURL = absolute(output.count > 1 && output.hasSuffix("/") ? String(output.dropLast()) : output)
        } else {
            let folder = outputDir.map(absolute) ?? workingDirectory.standardizedFileURL
            let stem = source?.outputStem ?? assetURL.deletingPathExtension().lastPathComponent
            outputURL = folder.appendingPathComponent("\(stem).\(JobSpec.thumbnailsName).{id}")
        }
        // The library's answer is checked against the file as it is now, before the file is read.
        try source?.checkUnchanged()
        // A URL's times are checked against its duration by the worker, once it has the file.
        switch remote == nil ? checks : nil {
        case nil:
            break
        case .access:
            try Asset.checkAccess(assetURL, limits: limits)
        case .plan:
            let probed = try Asset.header(of: assetURL, byteRange: source?.byteRange?.range, limits: limits)
            guard probed.videoTrack != nil else { throw ExportError(.noVideo, "\(asset) has no video track") }
            _ = try checked.times.seconds(duration: probed.duration, still: source?.stillImageTime)
        }
        let overwrite = export.overwrite ?? false
        try OutputPublisher.check(destination: outputURL, asset: assetURL, overwrite: overwrite)
        var spec = JobSpec(
            asset: remote?.url ?? assetURL.path, preset: JobSpec.thumbnailsName, outputType: .mp4,
            output: outputURL.path, priority: priority ?? 0, key: key, maxAttempts: attempts, overwrite: overwrite)
        spec.thumbnails = thumbnails
        spec.library = source
        spec.remote = remote
        spec.networkAccessAllowed = remote != nil
        return spec
    }
}

extension ExportRequest {
    /// The names of the keys `request` sets, sorted (for a refusal naming them): its JSON's keys.
    static func keysSet(in request: ExportRequest) -> [String] {
        guard let data = try? JSONEncoder().encode(request),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [] }
        return object.keys.sorted()
    }
}
