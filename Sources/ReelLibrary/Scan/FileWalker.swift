import Foundation

/// One entry met while walking a folder.
struct WalkedFile: Sendable {
    var path: String
    var name: String
    var stamp: FileStamp
}

/// Lists a folder's entries without following anything: `lstat` on each, so a symlink is seen as
/// a symlink (and skipped, never followed: no loop can form), and FIFOs, sockets and devices are
/// named and skipped before anything opens them. Names starting with a dot (`.DS_Store`,
/// AppleDouble `._IMG_1234.HEIC`, `.thumbnails`) are passed over silently.
enum FileWalker {
    struct Listing {
        var files: [WalkedFile] = []
        var folders: [String] = []
        var skipped: [SkippedFile] = []
    }

    static func list(_ folder: String, ignoring ignored: Set<String>) -> Result<Listing, SkippedFile> {
        guard let directory = opendir(folder) else {
            return .failure(SkippedFile(path: folder, reason: "cannot list: \(String(cString: strerror(errno)))"))
        }
        defer { closedir(directory) }
        var listing = Listing()
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name.hasPrefix(".") { continue }
            let path = folder == "/" ? "/" + name : folder + "/" + name
            if ignored.contains(path) { continue }
            var status = stat()
            guard lstat(path, &status) == 0 else {
                listing.skipped.append(
                    SkippedFile(path: path, reason: "cannot stat: \(String(cString: strerror(errno)))"))
                continue
            }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                listing.folders.append(path)
            case S_IFREG:
                let nanoseconds = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
                listing.files.append(
                    WalkedFile(
                        path: path, name: name,
                        stamp: FileStamp(size: Int64(status.st_size), modifiedNanoseconds: nanoseconds)))
            case S_IFLNK:
                listing.skipped.append(SkippedFile(path: path, reason: "a symbolic link: never followed"))
            case S_IFIFO:
                listing.skipped.append(SkippedFile(path: path, reason: "a FIFO, not a regular file"))
            case S_IFSOCK:
                listing.skipped.append(SkippedFile(path: path, reason: "a socket, not a regular file"))
            case S_IFCHR, S_IFBLK:
                listing.skipped.append(SkippedFile(path: path, reason: "a device, not a regular file"))
            default:
                listing.skipped.append(SkippedFile(path: path, reason: "not a regular file"))
            }
        }
        listing.files.sort { $0.name < $1.name }
        listing.folders.sort()
        return .success(listing)
    }
}
