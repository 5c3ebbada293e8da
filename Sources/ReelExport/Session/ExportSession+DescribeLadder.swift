import Foundation

extension ExportSession {
    /// What a published ladder folder holds, read back as a queue adopts it (`describeOutput` for a
    /// folder): every file in it, relative to it and sorted, its total bytes, and which manifests are
    /// there. The renditions' measured rates are not read back (the result's `video` is empty): only
    /// the export that wrote the folder measured them. Throws `output-invalid` when `folder` is not a
    /// folder holding an HLS master playlist or a DASH manifest.
    public static func describeLadder(at folder: URL) throws(ExportError) -> (result: Result, ladder: LadderResult) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue,
            let walker = FileManager.default.enumerator(atPath: folder.path)
        else { throw ExportError(.outputInvalid, "\(folder.path) is not a ladder's folder") }
        var files: [String] = []
        var bytes: Int64 = 0
        while let path = walker.nextObject() as? String {
            var status = stat()
            guard lstat(folder.path + "/" + path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            files.append(path)
            bytes += Int64(status.st_size)
        }
        files.sort()
        let master = files.contains(LadderPlaylists.master) ? LadderPlaylists.master : nil
        let dash = files.contains(LadderPlaylists.mpdName) ? LadderPlaylists.mpdName : nil
        guard master != nil || dash != nil else {
            throw ExportError(
                .outputInvalid, "\(folder.path) has no \(LadderPlaylists.master) or \(LadderPlaylists.mpdName)")
        }
        let ladder = LadderResult(master: master, dash: dash, video: [], audio: nil, dropped: [], files: files)
        let result = Result(
            bytes: bytes, durationSeconds: 0, width: nil, height: nil, videoCodec: "h264", audioCodec: nil,
            networkOptimized: true, elapsedSeconds: 0, method: .transcode, decision: "")
        return (result, ladder)
    }
}
