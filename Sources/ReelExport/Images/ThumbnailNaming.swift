import Foundation

/// Where a set of thumbnails goes and what its files are called: a folder and a name pattern with one
/// `%d`-style number (`-o out/thumb-%03d.jpg`), one named file (`-o poster.jpg`, for one picture), or
/// a folder with the default names, `<asset name>-001.jpg` … (sheets: `<asset name>-sprite-001.jpg` …,
/// and the WebVTT track `<asset name>-thumbnails.vtt`). The one naming of thumbnails: `reel thumbnail`
/// writes its files by it, and a queued set (`ThumbnailSetExport` publishing a folder) names the files
/// inside its folder by it.
public struct ThumbnailNaming: Sendable {
    public var folder: URL
    /// Text before and after the number, and the number's width (`%03d` → 3).
    public var prefix: String
    public var suffix: String
    public var digits: Int
    public var format: ImageFormat
    /// The asset's name, before the number in the default names and the track's.
    public var stem: String
    /// The output named one image file (`poster.jpg`): fine for one image, refused for several.
    public var single: URL?
    /// The output named a folder that is not there yet (its parent is): made before the first picture
    /// is written and removed again if none was, as `export -o` makes a ladder's folder.
    public var makesFolder = false

    /// The default names in `folder` (which exists): `<stem>-001.jpg` …, or with `sheets`,
    /// `<stem>-sprite-001.jpg` ….
    public init(folder: URL, stem: String, format: ImageFormat, sheets: Bool) {
        self.folder = folder
        self.stem = stem
        self.format = format
        prefix = stem + (sheets ? "-sprite-" : "-")
        suffix = "." + format.fileExtension
        digits = 3
    }

    /// Reads an output as `reel thumbnail -o` takes it: nil or a folder (default names), a pattern
    /// with one number in its file name, or one image file (its extension a format). `explicit` is
    /// `--format` (default: the pattern's or file's extension, else jpeg). A folder that is missing is
    /// made when its parent exists. Throws `invalid-argument` for a pattern without one number or a
    /// format that disagrees with the extension, `output-failed` for a folder that is a file or is
    /// under a missing one.
    public init(output: String?, stem: String, format explicit: String?, sheets: Bool) throws(ExportError) {
        self.stem = stem
        let path = output ?? "."
        let chosen = explicit.flatMap { ImageFormat(rawValue: $0.lowercased()) ?? ImageFormat(fileExtension: $0) }
        if let percent = path.lastIndex(of: "%"), !path[percent...].contains("/") {
            let url = URL(fileURLWithPath: path)
            folder = url.deletingLastPathComponent()
            let name = url.lastPathComponent
            guard let range = name.range(of: #"%0?[0-9]*d"#, options: .regularExpression),
                !name[range.upperBound...].contains("%")
            else {
                throw ExportError(
                    .invalidArgument, "the pattern '\(path)' needs one number like %d or %03d in its file name")
            }
            prefix = String(name[..<range.lowerBound])
            suffix = String(name[range.upperBound...])
            digits = Int(name[range].dropFirst().dropLast()) ?? 0
            let fromExtension =
                suffix.contains(".")
                ? ImageFormat(
                    fileExtension: String(suffix.split(separator: ".", omittingEmptySubsequences: false).last!))
                : nil
            if let chosen, let fromExtension, chosen != fromExtension {
                throw ExportError(
                    .invalidArgument,
                    "the pattern's extension says \(fromExtension.rawValue) but --format says \(chosen.rawValue)")
            }
            format = chosen ?? fromExtension ?? .jpeg
            if fromExtension == nil { suffix += "." + format.fileExtension }
        } else if let named = ImageFormat(fileExtension: URL(fileURLWithPath: path).pathExtension),
            !FileManager.default.fileExists(atPath: path)
        {
            let url = URL(fileURLWithPath: path)
            if let chosen, chosen != named {
                throw ExportError(
                    .invalidArgument, "the file's extension says \(named.rawValue) but --format says \(chosen.rawValue)"
                )
            }
            single = url
            folder = url.deletingLastPathComponent()
            format = named
            prefix = ""
            suffix = ""
            digits = 0
        } else {
            folder = URL(fileURLWithPath: path, isDirectory: true)
            format = chosen ?? .jpeg
            prefix = stem + (sheets ? "-sprite-" : "-")
            suffix = "." + format.fileExtension
            digits = 3
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw ExportError(.outputFailed, "the output folder \(folder.path) is a file")
            }
        } else {
            // One rule for every output: the folder an output is gets made, its parent must exist.
            let parent = folder.deletingLastPathComponent()
            guard single == nil, FileManager.default.fileExists(atPath: parent.path, isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                throw ExportError(.outputFailed, "the output folder \(folder.path) does not exist")
            }
            makesFolder = true
        }
    }

    /// The file of picture (or sheet) `number`, from 1.
    public func file(number: Int) -> URL {
        if let single { return single }
        let text = String(number)
        let padded = String(repeating: "0", count: max(0, digits - text.count)) + text
        return folder.appendingPathComponent(prefix + padded + suffix)
    }

    /// The files of `count` pictures (or sheets), at least one.
    public func files(count: Int) -> [URL] {
        (1...max(1, count)).map(file(number:))
    }

    /// The WebVTT track's default place.
    public var track: URL { folder.appendingPathComponent(stem + "-thumbnails.vtt") }

    /// Refuses before any work when two files would share a name (the output named one file for
    /// several: `invalid-argument`) or a file to write exists and `overwrite` is false
    /// (`output-exists`).
    public static func checkFree(_ files: [URL], overwrite: Bool) throws(ExportError) {
        if Set(files).count < files.count {
            throw ExportError(
                .invalidArgument,
                "-o names one file but \(files.count) are to be written; name a folder or a pattern such as thumb-%03d.jpg"
            )
        }
        guard !overwrite else { return }
        for file in files where FileManager.default.fileExists(atPath: file.path) {
            throw ExportError(.outputExists, "\(file.path) already exists (ask to overwrite it: --overwrite)")
        }
    }

    /// Makes the folder the output named when it is not there (`makesFolder`).
    public func makeFolder() throws(ExportError) {
        guard makesFolder, mkdir(folder.path, 0o755) != 0, errno != EEXIST else { return }
        throw ExportError(.outputFailed, "cannot create \(folder.path): \(String(cString: strerror(errno)))")
    }

    /// Removes the folder `makeFolder()` made, when nothing was written into it.
    public func removeFolderIfEmpty() {
        if makesFolder { rmdir(folder.path) }
    }

    /// `file`'s path relative to `folder` when inside it, else absolute (a WebVTT cue's URL).
    public static func relativePath(of file: URL, from folder: URL) -> String {
        let base = folder.standardizedFileURL.path
        let path = file.standardizedFileURL.path
        let prefix = base.hasSuffix("/") ? base : base + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }
}
