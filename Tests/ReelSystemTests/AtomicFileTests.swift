import Foundation
import ReelSystem
import TestSupport
import Testing

/// The one atomic writer: a file appears whole at its name or not at all, never takes a name that
/// appeared meanwhile unless asked to replace it, works where the file system has neither
/// RENAME_NOREPLACE nor hard links, and a folder never replaces one, even an empty one.
@Suite("The atomic writer", .serialized, .timeLimit(.minutes(1)))
struct AtomicFileTests {
    /// What the folder holds, hidden names included.
    static func names(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test(arguments: [false, true])
    func aFileAppearsWholeAndNeverTakesANameUnasked(plainFileSystem: Bool) throws {
        AtomicFile.plainFileSystem.store(plainFileSystem, ordering: .relaxed)
        defer { AtomicFile.plainFileSystem.store(false, ordering: .relaxed) }
        let folder = Fixtures.scratchFolder("atomic-file")
        let path = folder.appendingPathComponent("a.jpg").path
        try AtomicFile.write(Data("first".utf8), to: path, replacing: false)
        #expect(FileManager.default.contents(atPath: path) == Data("first".utf8))
        #expect(try Self.names(folder) == ["a.jpg"], "no temporary name is left")

        #expect {
            try AtomicFile.write(Data("second".utf8), to: path, replacing: false)
        } throws: { ($0 as? AtomicFile.Failure)?.isExisting == true }
        #expect(FileManager.default.contents(atPath: path) == Data("first".utf8))

        try AtomicFile.write(Data("third".utf8), to: path, replacing: true)
        #expect(FileManager.default.contents(atPath: path) == Data("third".utf8))
        #expect(try Self.names(folder) == ["a.jpg"])
    }

    /// A name taken between the writer's check and its move (another writer's file, here made while
    /// the temporary waits) is not replaced, with or without RENAME_NOREPLACE and hard links.
    @Test(arguments: [false, true])
    func aNameTakenMeanwhileIsNotReplaced(plainFileSystem: Bool) throws {
        AtomicFile.plainFileSystem.store(plainFileSystem, ordering: .relaxed)
        defer { AtomicFile.plainFileSystem.store(false, ordering: .relaxed) }
        let folder = Fixtures.scratchFolder("atomic-race")
        let path = folder.appendingPathComponent("out.mp4").path
        let temporary = AtomicFile.temporaryPath(for: path, tag: "mine")
        try AtomicFile.writeNew(Data("mine".utf8), at: temporary)
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            try AtomicFile.moveIntoPlace(temporary, to: path, replacing: false)
        } throws: { ($0 as? AtomicFile.Failure)?.isExisting == true }
        #expect(FileManager.default.contents(atPath: path) == Data("theirs".utf8))
        #expect(FileManager.default.fileExists(atPath: temporary), "the caller still holds its temporary")
    }

    @Test(arguments: [false, true])
    func aFolderNeverReplacesOneThatAppearedEvenEmpty(plainFileSystem: Bool) throws {
        AtomicFile.plainFileSystem.store(plainFileSystem, ordering: .relaxed)
        defer { AtomicFile.plainFileSystem.store(false, ordering: .relaxed) }
        let folder = Fixtures.scratchFolder("atomic-folder")
        let built = folder.appendingPathComponent(".out.reel-x.partial").path
        let destination = folder.appendingPathComponent("out").path
        try FileManager.default.createDirectory(atPath: built, withIntermediateDirectories: false)
        try AtomicFile.write(Data("a".utf8), to: built + "/a.txt", replacing: false, syncFolder: false)
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
        #expect {
            try AtomicFile.moveFolderIntoPlace(built, to: destination, replacing: false)
        } throws: { ($0 as? AtomicFile.Failure)?.isExisting == true }
        #expect(try Self.names(URL(fileURLWithPath: destination)).isEmpty, "the empty folder is still there")

        try AtomicFile.moveFolderIntoPlace(built, to: destination, replacing: true)
        #expect(try Self.names(URL(fileURLWithPath: destination)) == ["a.txt"])
        #expect(try Self.names(folder) == ["out"], "the old folder moved aside is gone, and so is the built one")
    }

    /// A dead writer's temporary name is removed by the next writer of that destination; a live
    /// writer's (its lock held) is left alone.
    @Test func leftoversOfDeadWritersGoAndLiveOnesStay() throws {
        let folder = Fixtures.scratchFolder("atomic-leftovers")
        let path = folder.appendingPathComponent("clip.mp4").path
        let dead = AtomicFile.temporaryPath(for: path, tag: "dead")
        try AtomicFile.writeNew(Data("x".utf8), at: dead)
        let live = AtomicFile.temporaryPath(for: path, tag: "live")
        try AtomicFile.writeNew(Data("y".utf8), at: live)
        let fd = open(live, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0 && OutputLock.lockNewFile(fd))
        let lock = OutputLock(adopting: fd)
        let other = AtomicFile.temporaryPath(for: folder.appendingPathComponent("other.mp4").path, tag: "dead")
        try AtomicFile.writeNew(Data("z".utf8), at: other)

        AtomicFile.removeLeftovers(for: path)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
        #expect(FileManager.default.fileExists(atPath: other), "another destination's name is not touched")
        #expect(AtomicFile.isTemporary((live as NSString).lastPathComponent, for: path))
        #expect(AtomicFile.isTemporary((other as NSString).lastPathComponent))
        withExtendedLifetime(lock) {}
    }
}
