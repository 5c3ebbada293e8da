import Foundation
import Testing

@testable import ReelLibrary

/// `PathParts` splits clean paths itself and must give exactly what Foundation's path methods give,
/// for clean paths and for every other kind (which it hands to `NSString`).
@Suite("Path parts", .timeLimit(.minutes(1)))
struct PathPartsTests {
    @Test(
        arguments: [
            "/a/b/IMG_0001.HEIC", "/IMG.jpg", "/a/b/.hidden", "/a/b/c.", "/a/b/c", "/a/b/c.tar.gz", "/a/b/.x.jpg",
            "/a/b/c..jpg", "/a/b/IMG_0001_HEVC.MOV", "/a/b/é ü.JPG", "/a//b/c.jpg", "/a/b/", "/a/./b.jpg",
            "/a/../b.jpg", "/a/b/..", "/a/b/.", "relative/c.jpg", "c.jpg", "/", "/a/...jpg", "/a/b.c/d",
        ])
    func agreesWithFoundation(_ path: String) {
        let ns = path as NSString
        #expect(PathParts.folder(of: path) == ns.deletingLastPathComponent)
        #expect(PathParts.name(of: path) == ns.lastPathComponent)
        #expect(
            PathParts.stem(ofName: ns.lastPathComponent) == (ns.lastPathComponent as NSString).deletingPathExtension)
        #expect(PathParts.pathExtension(of: path) == ns.pathExtension)
        if path.hasPrefix("/") {
            let record = FileRecord(
                path: path, stamp: FileStamp(size: 1, modifiedNanoseconds: 0), contentHash: "",
                facts: FileFacts(
                    mediaType: .image, format: "jpeg", uniformTypeIdentifier: "public.jpeg"))
            let url = URL(fileURLWithPath: path)
            #expect(record.folder == url.deletingLastPathComponent().path && record.name == url.lastPathComponent)
        }
    }

    @Test func cleanMeansWhatTheScanMakes() {
        #expect(PathParts.isClean("/a/b/c.jpg") && PathParts.isClean("/a/...jpg") && PathParts.isClean("/a/.x"))
        for path in ["", "/", "a/b", "/a//b", "/a/b/", "/a/./b", "/a/../b", "/a/b/.", "/a/b/.."] {
            #expect(!PathParts.isClean(path), "\(path)")
        }
    }
}
