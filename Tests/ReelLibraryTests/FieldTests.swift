import Foundation
import ReelBoxes
import ReelSystem
import TestSupport
import Testing

@testable import ReelLibrary

/// Every field Reel reads from a real file, against exiftool's and ffprobe's reading of it.
@Suite("Fields against exiftool and ffprobe", .tags(.process, .media), .timeLimit(.minutes(10)))
struct FieldTests {
    /// The file's facts, read off Swift's cooperative pool (videos are probed by libavformat).
    func facts(_ path: String) async throws -> FileFacts {
        try await onOwnThread {
            try FileInspector.inspect(path: path, source: try FileSource(path: path), limits: .standard)
        }
    }

    @Test("iPhone HEIC: size from ispe and irot, capture time and zone, content identifier, camera")
    func heic() async throws {
        let path = try Media.heic
        let mine = try await facts(path)
        let tool = try await LibraryFixtures.exiftool(path)
        #expect(mine.mediaType == .image && mine.format == "heic" && mine.uniformTypeIdentifier == "public.heic")
        #expect(mine.pixelWidth == tool["ImageWidth"] as? Int)
        #expect(mine.pixelHeight == tool["ImageHeight"] as? Int)
        #expect(mine.contentIdentifier == tool["MediaGroupUUID"] as? String)
        #expect(mine.contentIdentifier == Media.heicIdentifier)
        #expect(mine.make == tool["Make"] as? String && mine.model == tool["Model"] as? String)
        // exiftool's SubSecDateTimeOriginal: "2020:05:04 18:39:11.644-04:00".
        let composite = try #require(tool["SubSecDateTimeOriginal"] as? String)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy:MM:dd HH:mm:ss.SSSXXXXX"
        let expected = try #require(formatter.date(from: composite))
        #expect(abs(try #require(mine.creationDate).timeIntervalSince(expected)) < 0.001)
        #expect(mine.creationTimeZoneOffset == -4 * 3600)
        #expect(mine.creationDateSource == "exif")
        #expect(!mine.isHDR, "HDRImageType is absent (exiftool: \(tool["HDRImageType"] ?? "none"))")
        #expect((tool["HDRImageType"] as? Int) == nil)
        #expect(mine.motionPhoto == nil && mine.latitude == nil)
    }

    @Test("iPhone movie: duration, rotated size, frame rate, QuickTime creation date with zone, ISO 6709 place")
    func movie() async throws {
        let path = try Media.movie
        let mine = try await facts(path)
        let probe = try await LibraryFixtures.ffprobe(path)
        let format = try #require(probe["format"] as? [String: Any])
        let streams = try #require(probe["streams"] as? [[String: Any]])
        let video = try #require(streams.first { $0["codec_type"] as? String == "video" })
        #expect(mine.mediaType == .video && mine.uniformTypeIdentifier == "com.apple.quicktime-movie")
        #expect(abs(try #require(mine.duration) - Double(format["duration"] as! String)!) < 0.01)
        // ffprobe: 568x320 with a -90° display matrix, so displayed as 320x568.
        let side = (video["side_data_list"] as? [[String: Any]])?.first
        let rotation = side?["rotation"] as? Int ?? 0
        let (w, h) = (video["width"] as! Int, video["height"] as! Int)
        #expect(abs(rotation) == 90)
        #expect(mine.pixelWidth == h && mine.pixelHeight == w)
        let rate = (video["avg_frame_rate"] as! String).split(separator: "/").map { Double($0)! }
        #expect(abs(try #require(mine.frameRate) - rate[0] / rate[1]) < 0.01)
        let tool = try await LibraryFixtures.exiftool(path)
        // exiftool -n: CreationDate "2019:07:24 11:25:40+03:00"; GPS in decimal degrees.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy:MM:dd HH:mm:ssXXXXX"
        let creationText = try #require(tool["CreationDate"] as? String)
        let created = try #require(formatter.date(from: creationText))
        #expect(mine.creationDate == created && mine.creationTimeZoneOffset == 3 * 3600)
        #expect(mine.creationDateSource == "quicktime-creationdate")
        // QuickTime's ISO 6709 string keeps four decimals (+32.0929+034.8620): within 1e-4 of exiftool.
        #expect(abs(try #require(mine.latitude) - (tool["GPSLatitude"] as! Double)) < 1e-4)
        #expect(abs(try #require(mine.longitude) - (tool["GPSLongitude"] as! Double)) < 1e-4)
        #expect(abs(try #require(mine.altitude) - (tool["GPSAltitude"] as! Double)) < 0.01)
        #expect(mine.make == "Apple" && mine.model == tool["Model"] as? String)
        // Its mebx tracks are detected-face and video-orientation: no still moment, no identifier.
        #expect(mine.stillImageTime == nil && mine.contentIdentifier == nil)
    }

    @Test("Google Motion Photo: the Container:Directory range, validated; ffprobe reads the same bytes")
    func motionPhoto() async throws {
        let path = try Media.motionPhoto
        let mine = try await facts(path)
        let tool = try await LibraryFixtures.exiftool(path)
        #expect(mine.pixelWidth == tool["ImageWidth"] as? Int && mine.pixelHeight == tool["ImageHeight"] as? Int)
        let video = try #require(mine.motionPhoto, "rejected: \(mine.motionPhotoRejection ?? "")")
        let size = try #require(tool["FileSize"] as? Int)
        #expect(video.source == .containerDirectory)
        #expect(video.length == Int64(try #require(tool["DirectoryItemLength"] as? Int)))
        #expect(video.offset == Int64(size) - video.length && video.offset == 30_821)
        #expect(
            video.presentationTimestampMicroseconds
                == Int64(try #require(tool["MotionPhotoPresentationTimestampUs"] as? Int)))
        let probe = try await LibraryFixtures.ffprobe(
            "subfile,,start,\(video.offset),end,\(video.offset + video.length),,:\(path)", whitelist: true)
        let duration = Double((probe["format"] as! [String: Any])["duration"] as! String)!
        #expect(abs(try #require(video.duration) - duration) < 0.01)
    }

    @Test("a JPEG whose XMP claims a video it does not have is a plain photo, with the reason")
    func lyingMotionPhoto() async throws {
        let mine = try await facts(try Media.lyingMotionPhoto)
        #expect(mine.motionPhoto == nil)
        let reason = try #require(mine.motionPhotoRejection)
        #expect(reason.contains("Container:Directory"))
    }

    @Test("a movie with a mebx still-image-time track: the still's moment, as exiftool reads the sample")
    func stillImageTime() async throws {
        let url = LibraryFixtures.folder("still").appendingPathComponent("IMG_0001.MOV")
        try await LibraryFixtures.movie("AAAA-BBBB", at: url, seconds: 2, stillSeconds: 0.48)
        let mine = try await facts(url.path)
        #expect(mine.contentIdentifier == "AAAA-BBBB")
        #expect(abs(try #require(mine.stillImageTime) - 0.48) < 0.002)
        // exiftool finds the key in the sample description and decodes the one sample (-ee).
        let tool = try await LibraryFixtures.exiftool(url.path, ["-ee"])
        #expect(tool["StillImageTime"] != nil, "exiftool does not see a still-image-time sample: \(tool.keys.sorted())")
        let probe = try await LibraryFixtures.ffprobe(url.path)
        let streams = try #require(probe["streams"] as? [[String: Any]])
        #expect(streams.contains { $0["codec_tag_string"] as? String == "mebx" })
    }

    @Test("PNG, animated GIF and a Samsung-style HEIC with an mpvd box")
    func otherImages() async throws {
        let folder = LibraryFixtures.folder("images")
        let png = folder.appendingPathComponent("still.png").path
        let gif = folder.appendingPathComponent("anim.gif").path
        _ = try await Tools.run(
            "ffmpeg",
            ["-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:duration=1", "-frames:v", "1", png])
        _ = try await Tools.run(
            "ffmpeg", ["-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=5:duration=1", gif])
        let stillFacts = try await facts(png)
        #expect(stillFacts.pixelWidth == 64 && stillFacts.pixelHeight == 48 && !stillFacts.isAnimated)
        let gifFacts = try await facts(gif)
        let tool = try await LibraryFixtures.exiftool(gif)
        #expect(gifFacts.isAnimated && (tool["FrameCount"] as? Int ?? 0) > 1)
        #expect(gifFacts.pixelWidth == tool["ImageWidth"] as? Int)
        // Samsung: the real HEIC with a top-level mpvd box holding an MP4 (64-bit size form).
        let clip = folder.appendingPathComponent("clip.mp4")
        _ = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30:duration=1.5", "-c:v",
                "libx264", "-preset", "ultrafast", clip.path,
            ])
        let heic = folder.appendingPathComponent("samsung.heic")
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Media.heic)))
        let mp4 = [UInt8](try Data(contentsOf: clip))
        try Data(original + BoxWriter.box("mpvd", mp4, largeSize: true)).write(to: heic)
        let samsung = try await facts(heic.path)
        let video = try #require(samsung.motionPhoto, "rejected: \(samsung.motionPhotoRejection ?? "")")
        #expect(
            video.source == .samsungMPVD && video.offset == Int64(original.count + 16)
                && video.length == Int64(mp4.count))
        #expect(abs(try #require(video.duration) - 1.5) < 0.05)
        // The still alone is the HEIC before the box (the box is the file's last).
        #expect(video.stillLength == Int64(original.count))
        // An mpvd box whose payload is not an MP4 is refused, with the reason.
        try Data(original + BoxWriter.box("mpvd", [UInt8](repeating: 0, count: 1024))).write(to: heic)
        let refused = try await facts(heic.path)
        #expect(refused.motionPhoto == nil && refused.motionPhotoRejection?.contains("mpvd") == true)
    }

    @Test("legacy MicroVideoOffset, written by exiftool into a JPEG with an MP4 appended")
    func microVideo() async throws {
        let folder = LibraryFixtures.folder("micro")
        let clip = folder.appendingPathComponent("clip.mp4")
        _ = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30:duration=1", "-c:v", "libx264",
                "-preset", "ultrafast", clip.path,
            ])
        let jpeg = folder.appendingPathComponent("MVIMG_0001.jpg")
        _ = try await Tools.run(
            "ffmpeg", ["-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240", "-frames:v", "1", jpeg.path])
        let mp4 = try Data(contentsOf: clip)
        let tagged = try await Tools.run(
            "exiftool",
            [
                "-q", "-overwrite_original", "-XMP-GCamera:MicroVideo=1", "-XMP-GCamera:MicroVideoOffset=\(mp4.count)",
                jpeg.path,
            ])
        try #require(tagged.status == 0, "exiftool: \(tagged.stderr)")
        let handle = try FileHandle(forWritingTo: jpeg)
        try handle.seekToEnd()
        try handle.write(contentsOf: mp4)
        try handle.close()
        let mine = try await facts(jpeg.path)
        let video = try #require(mine.motionPhoto, "rejected: \(mine.motionPhotoRejection ?? "")")
        #expect(video.source == .microVideoOffset && video.length == Int64(mp4.count))
        let tool = try await LibraryFixtures.exiftool(jpeg.path)
        #expect(video.offset == Int64(tool["FileSize"] as! Int) - Int64(mp4.count))
    }

    @Test("Apple MakerNote HDR (0x000A = 3) and burst (0x000B): read as exiftool reads them; bursts collapse")
    func hdrAndBursts() async throws {
        let folder = LibraryFixtures.folder("bursts")
        let burst = "ABCDEF00-1111-2222-3333-444455556666"
        for index in 0..<3 {
            let bytes = HostileFileTests.appleJPEG(
                [
                    (0x000A, 9, 1, BoxWriter.be32(index == 0 ? 3 : 4)),
                    (0x000B, 2, UInt32(burst.utf8.count + 1), Array(burst.utf8) + [0]),
                ], salt: index)
            try Data(bytes).write(to: folder.appendingPathComponent("IMG_\(index).jpg"))
        }
        let path = folder.appendingPathComponent("IMG_0.jpg").path
        let mine = try await facts(path)
        let tool = try await LibraryFixtures.exiftool(path)
        #expect(tool["HDRImageType"] as? Int == 3 && mine.isHDR)
        #expect(mine.burstIdentifier == tool["BurstUUID"] as? String && mine.burstIdentifier == burst)
        let library = try LibraryFixtures.library("bursts")
        _ = try await library.scan([folder.path])
        let collapsed = try await library.fetchAssets()
        #expect(collapsed.count == 1 && collapsed[0].representsBurst)
        let all = try await library.fetchAssets(FetchOptions(includeAllBurstAssets: true))
        #expect(all.count == 3)
        #expect(all.filter { $0.mediaSubtypes.contains(.photoHDR) }.count == 1)
        #expect(try await library.fetchAssets(inCollection: "smart:smartAlbumBursts").count == 1)
    }

    @Test("a 120 fps clip is videoHighFrameRate (ffprobe's rate), a 30 fps one is not")
    func highFrameRate() async throws {
        let folder = LibraryFixtures.folder("slomo")
        for rate in [30, 120] {
            let made = try await Tools.run(
                "ffmpeg",
                [
                    "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=\(rate):duration=1", "-c:v",
                    "libx264",
                    "-preset", "ultrafast", folder.appendingPathComponent("clip\(rate).mov").path,
                ])
            try #require(made.status == 0)
        }
        let library = try LibraryFixtures.library("slomo")
        _ = try await library.scan([folder.path])
        let slomo = try await library.fetchAssets(inCollection: "smart:smartAlbumSlomoVideos")
        #expect(slomo.map(\.originalFilename) == ["clip120.mov"])
        #expect(slomo.first?.mediaSubtypes == .videoHighFrameRate)
        let probe = try await LibraryFixtures.ffprobe(folder.appendingPathComponent("clip120.mov").path)
        let stream = try #require((probe["streams"] as? [[String: Any]])?.first)
        #expect(stream["avg_frame_rate"] as? String == "120/1")
    }
}
