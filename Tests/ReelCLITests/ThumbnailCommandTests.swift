import Foundation
import TestSupport
import Testing

/// `reel thumbnail`: every image is ffmpeg's own frame at the time Reel reports, keyframes in the
/// default mode, the frame shown at the requested time with --exact, upright, fitted, and sprite
/// sheets whose WebVTT fragments point at the right cells.
@Suite("reel thumbnail", .tags(.process, .media), .timeLimit(.minutes(10)))
struct ThumbnailCommandTests {
    /// One `--json` line.
    struct Line: Decodable {
        var requestedTime: Double
        var actualTime: Double
        var keyframe: Bool
        var file: String
        var width: Int
        var height: Int
        var x: Int?
        var y: Int?
    }

    static func run(_ arguments: [String]) async throws -> [Line] {
        let result = try await ReelBinary.run(["thumbnail"] + arguments + ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").filter { $0.contains("actualTime") }.map {
            try JSONDecoder().decode(Line.self, from: Data($0.utf8))
        }
    }

    /// 25 fps: one frame lasts 40 ms.
    static let frame = 0.04

    @Test func keyframeModeTakesTheNearestKeyframeAndItIsFfmpegsFrame() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("thumbs-key")
        let lines = try await Self.run([source.path, "--at", "0,3.1,50%,00:00:07.300,11.9", "-o", folder.path])
        #expect(lines.map(\.requestedTime) == [0, 3.1, 6, 7.3, 11.9])
        let frames = try await Stills.frames(source)
        let keyframes = frames.filter(\.key).map(\.time)
        #expect(keyframes.count == 6, "\(keyframes)")
        for line in lines {
            #expect(line.keyframe)
            // ffprobe's keyframe times, and the nearest one to what was asked.
            #expect(keyframes.contains { abs($0 - line.actualTime) < 0.001 }, "\(line.actualTime) is no keyframe")
            let nearest = keyframes.min { abs($0 - line.requestedTime) < abs($1 - line.requestedTime) }!
            #expect(abs(line.actualTime - nearest) < 0.001, "asked \(line.requestedTime), got \(line.actualTime)")
            #expect(line.width == 640 && line.height == 360)
            let image = URL(fileURLWithPath: line.file)
            let right = try await Stills.psnr(image, against: source, at: line.actualTime)
            let next = try await Stills.psnr(image, against: source, at: line.actualTime + Self.frame)
            #expect(right.average >= 33 && right.average > next.average + 5, "\(line.file): \(right) vs next \(next)")
        }
        // JPEG, full range, as the files say.
        let probed = try #require(try await ProbedFile.probe(URL(fileURLWithPath: lines[0].file)).video)
        #expect(probed.codec_name == "mjpeg" && probed.pix_fmt == "yuvj420p")
    }

    @Test func exactModeTakesTheFrameShownAtTheTime() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("thumbs-exact")
        let asked = [0.0, 1.99, 2.0, 3.33, 7.3, 7.31, 11.97]
        let lines = try await Self.run(
            [
                source.path, "--exact", "--at", asked.map { String($0) }.joined(separator: ","), "-o",
                folder.appendingPathComponent("f-%02d.png").path,
            ])
        #expect(lines.map(\.requestedTime) == asked)
        let times = try await Stills.frames(source).map(\.time)
        for line in lines {
            // The last frame presented at or before the requested time.
            let expected = times.last { $0 <= line.requestedTime + 1e-6 }!
            #expect(abs(line.actualTime - expected) < 0.001, "asked \(line.requestedTime), got \(line.actualTime)")
            #expect(line.actualTime <= line.requestedTime + 1e-6 && line.requestedTime - line.actualTime < Self.frame)
            let image = URL(fileURLWithPath: line.file)
            #expect(try await ProbedFile.probe(image).video?.codec_name == "png")
            let right = try await Stills.psnr(image, against: source, at: line.actualTime)
            // A neighbouring frame (the one before, for the clip's last frame at 11.96 s).
            let neighbour =
                line.actualTime + Self.frame < 11.98 ? line.actualTime + Self.frame : line.actualTime - Self.frame
            let next = try await Stills.psnr(image, against: source, at: neighbour)
            #expect(right.average >= 35 && right.average > next.average + 5, "\(line.file): \(right) vs next \(next)")
        }
    }

    /// `--count` spreads the times over the asset (the starts of equal parts); `--quality` sets the
    /// JPEG quantiser (a lower quality makes a smaller file that is further from the frame).
    /// As `AVAssetImageGenerator`'s tolerances: a set (`--count`) on a clip with a keyframe every 10 s
    /// gives every time its own picture (the keyframe where one is within half the interval, else the
    /// frame shown at the time, decoded forward); `--tolerance` widens it back to the keyframes; a
    /// single `--at` keeps the nearest keyframe.
    @Test func aSetOnLongGOPsGivesDistinctPictures() async throws {
        let source = try await Fixtures.url(Fixtures.longGOP)
        let folder = Fixtures.scratchFolder("thumbs-long-gop")
        let set = try await Self.run([
            source.path, "--count", "5", "-o", folder.appendingPathComponent("a-%d.jpg").path,
        ])
        #expect(set.map(\.requestedTime) == [0, 4, 8, 12, 16])
        let actual = set.map(\.actualTime)
        #expect(Set(actual).count == 5, "\(actual)")
        for line in set { #expect(abs(line.actualTime - line.requestedTime) < 2, "\(line)") }
        #expect(set[0].keyframe && !set[1].keyframe, "the keyframe at 0 serves 0; 4 s is decoded forward")
        // Each picture is the source's frame at its actual time (independent reading by ffmpeg).
        for line in set {
            let psnr = try await Stills.psnr(URL(fileURLWithPath: line.file), against: source, at: line.actualTime)
            #expect(psnr.average >= 33, "\(line) \(psnr)")
        }
        let wide = try await Self.run(
            [source.path, "--count", "5", "--tolerance", "10", "-o", folder.appendingPathComponent("b-%d.jpg").path])
        #expect(Set(wide.map(\.actualTime)) == [0, 10], "\(wide.map(\.actualTime))")
        let single = try await Self.run([source.path, "--at", "4", "-o", folder.appendingPathComponent("c.jpg").path])
        #expect(single.map(\.actualTime) == [0] && single[0].keyframe)
        let both = try await ReelBinary.run(["thumbnail", source.path, "--at", "4", "--exact", "--tolerance", "1"])
        #expect(both.status == 64 && both.stderr.contains("not both"), "\(both.stderr)")
    }

    @Test func countAndQuality() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("thumbs-count")
        let good = try await Self.run(
            [
                source.path, "--count", "4", "--exact", "--quality", "95", "-o",
                folder.appendingPathComponent("good-%d.jpg").path,
            ])
        #expect(good.map(\.requestedTime) == [0, 3, 6, 9])
        #expect(
            good.map { URL(fileURLWithPath: $0.file).lastPathComponent } == [
                "good-1.jpg", "good-2.jpg", "good-3.jpg", "good-4.jpg",
            ])
        let poor = try await Self.run(
            [
                source.path, "--count", "4", "--exact", "--quality", "10", "-o",
                folder.appendingPathComponent("poor-%d.jpg").path,
            ])
        for (a, b) in zip(good, poor) {
            let sizes = try [a.file, b.file].map { try FileManager.default.attributesOfItem(atPath: $0)[.size] as! Int }
            #expect(sizes[1] < sizes[0] / 2, "\(sizes)")
            let high = try await Stills.psnr(URL(fileURLWithPath: a.file), against: source, at: a.actualTime)
            let low = try await Stills.psnr(URL(fileURLWithPath: b.file), against: source, at: b.actualTime)
            #expect(high.average > low.average + 3, "\(high) vs \(low)")
        }
    }

    /// Rotated clips come out as ffmpeg's auto-rotation shows them; mirrored ones as the upright
    /// clip flipped by ffmpeg's filters (ffmpeg 5.1 does not apply a mirror itself).
    @Test(arguments: [
        ("rotated-90", 270, 480), ("rotated-180", 480, 270), ("rotated-270", 270, 480),
        ("mirrored-horizontal", 480, 270), ("mirrored-vertical", 480, 270), ("mirrored-horizontal-clockwise", 270, 480),
    ])
    func picturesAreUpright(_ name: String, width: Int, height: Int) async throws {
        let recipe: Fixtures.Recipe
        var filters: String?
        var wrong: String
        if name.hasPrefix("rotated-") {
            recipe = Fixtures.rotated(Int(name.dropFirst(8))!)
            wrong = width == 270 ? "transpose=cclock,transpose=cclock" : "hflip"
        } else {
            let mirror = Fixtures.Mirror(rawValue: String(name.dropFirst(9)))!
            recipe = Fixtures.mirrored(mirror)
            filters = mirror.filters
            wrong = mirror == .horizontalThenClockwise ? "transpose=clock" : "hflip,vflip"
        }
        let source = try await Fixtures.url(recipe)
        let upright = try await Fixtures.url(Fixtures.upright)
        let folder = Fixtures.scratchFolder("thumbs-\(name)")
        let lines = try await Self.run([source.path, "--exact", "--at", "0.5", "-o", folder.path])
        let line = try #require(lines.first)
        #expect(line.width == width && line.height == height)
        let image = URL(fileURLWithPath: line.file)
        // ffmpeg reads the rotation itself; for mirrors the upright clip is flipped explicitly.
        let right =
            filters == nil
            ? try await Stills.psnr(image, against: source, at: line.actualTime)
            : try await Stills.psnr(image, against: upright, at: line.actualTime, filters: filters)
        // The same picture turned another way (for a quarter turn: the other quarter turn, so the
        // size matches): far from it.
        let other =
            filters == nil
            ? try await Stills.psnr(image, against: source, at: line.actualTime, imageFilters: wrong)
            : try await Stills.psnr(image, against: upright, at: line.actualTime, filters: wrong)
        #expect(right.average >= 33 && right.average > other.average + 10, "\(right) vs \(other)")
    }

    /// The sample aspect ratio counts, the box fits the picture, and nothing is enlarged.
    @Test(arguments: [
        ("anamorphic", "320x320", 320, 180), ("anamorphic", "4000x4000", 1024, 576), ("anamorphic", "x144", 256, 144),
        ("rotated-90", "200x200", 112, 200),
    ])
    func maxSizeFitsWithoutEnlarging(_ name: String, box: String, width: Int, height: Int) async throws {
        let source = try await Fixtures.url(name == "anamorphic" ? Fixtures.anamorphic : Fixtures.rotated(90))
        let folder = Fixtures.scratchFolder("thumbs-fit")
        let lines = try await Self.run([source.path, "--at", "0", "--max-size", box, "-o", folder.path])
        let line = try #require(lines.first)
        let video = try #require(try await ProbedFile.probe(URL(fileURLWithPath: line.file)).video)
        #expect(video.width == width && video.height == height && line.width == width && line.height == height)
        #expect(["1:1", "0:1", nil].contains(video.sample_aspect_ratio), "\(video.sample_aspect_ratio ?? "")")
    }

    /// Sheets are COLS×ROWS cells of one size; the WebVTT cues run from 0 to the end without gaps,
    /// one per image, and each fragment's rectangle holds ffmpeg's frame at that image's time.
    @Test func sheetsAndTheirTrackAgree() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("thumbs-sheet")
        let lines = try await Self.run([
            source.path, "--every", "1s", "--sheet", "4x2", "--max-size", "160x", "-o", folder.path,
        ])
        #expect(lines.count == 12)
        let sheets = Array(Set(lines.map(\.file))).sorted()
        #expect(
            sheets.map { URL(fileURLWithPath: $0).lastPathComponent } == [
                "gop-12s-sprite-001.jpg", "gop-12s-sprite-002.jpg",
            ])
        for sheet in sheets {
            let video = try #require(try await ProbedFile.probe(URL(fileURLWithPath: sheet)).video)
            #expect(video.width == 4 * 160 && video.height == 2 * 90)
        }
        let track = try String(contentsOf: folder.appendingPathComponent("gop-12s-thumbnails.vtt"), encoding: .utf8)
        #expect(track.hasPrefix("WEBVTT\n\n"))
        let cues = track.components(separatedBy: "\n\n").dropFirst().map { $0.split(separator: "\n") }
        #expect(cues.count == 12)
        func seconds(_ text: Substring) -> Double {
            let parts = text.split(separator: ":").map { Double($0)! }
            return parts[0] * 3600 + parts[1] * 60 + parts[2]
        }
        var previousEnd = 0.0
        for (index, cue) in cues.enumerated() {
            let times = cue[0].components(separatedBy: " --> ")
            let (start, end) = (seconds(Substring(times[0])), seconds(Substring(times[1])))
            #expect(abs(start - previousEnd) < 0.0005 && end > start)
            previousEnd = end
            let parts = cue[1].split(separator: "#")
            let file = String(parts[0])
            let rect = parts[1].dropFirst(5).split(separator: ",").map { Int($0)! }
            let line = lines[index]
            #expect(URL(fileURLWithPath: line.file).lastPathComponent == file)
            #expect(rect == [line.x!, line.y!, 160, 90] && rect[0] + rect[2] <= 640 && rect[1] + rect[3] <= 180)
            #expect(abs(start - line.requestedTime) < 0.0005)
            // Cells 0, 5 and 11: the rectangle cut out of the sheet is ffmpeg's frame.
            if [0, 5, 11].contains(index) {
                let right = try await Stills.psnr(
                    URL(fileURLWithPath: line.file), against: source, at: line.actualTime,
                    imageFilters: "crop=\(rect[2]):\(rect[3]):\(rect[0]):\(rect[1])", size: (rect[2], rect[3]))
                #expect(right.average >= 30, "cell \(index): \(right)")
            }
        }
        #expect(abs(previousEnd - 12) < 0.0005)
    }

    /// Times past the end, unreadable input and names that exist are refused in one line with the
    /// CLI's exit statuses, before any file is written.
    /// SIGHUP (the terminal or SSH session closed) stops a picture set as Ctrl-C does: no picture after
    /// the one being made, exit 130, every file written whole and no temporary beside them.
    @Test(arguments: [SIGINT, SIGHUP])
    func aStopSignalCancelsAndLeavesNoTemporary(_ signal: Int32) async throws {
        let source = try await Fixtures.url(Fixtures.long)
        let folder = Fixtures.scratchFolder("thumbs-stop")
        let run = try ReelBinary.start([
            "thumbnail", source.path, "--count", "400", "--exact", "--max-size", "1280x720", "-o",
            folder.appendingPathComponent("frame-%d.png").path,
        ])
        let started = await eventually(within: .seconds(120)) { run.output.contains("wrote ") ? true : nil }
        #expect(started != nil, "\(run.output.suffix(600))")
        run.signal(signal)
        let ended = try await run.exit()
        #expect(ended.reason == .exit && ended.status == 130, "\(run.output.suffix(600))")
        #expect(run.output.contains("cancelled"), "\(run.output.suffix(600))")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        #expect(!files.isEmpty && files.count < 400, "\(files.count) files")
        #expect(files.allSatisfy { !$0.hasPrefix(".") }, "left: \(files.filter { $0.hasPrefix(".") })")
    }

    @Test func refusalsAreOneLineAndWriteNothing() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("thumbs-refused")
        let past = try await ReelBinary.run(["thumbnail", source.path, "--at", "1,13", "-o", folder.path])
        #expect(
            past.status == 64 && past.stderr.split(separator: "\n").count == 1
                && past.stderr.hasPrefix("reel: error: the time 13.000 s is past the end of the asset, which lasts 12"),
            "\(past.stderr)")
        let percent = try await ReelBinary.run(["thumbnail", source.path, "--at", "120%", "-o", folder.path])
        #expect(percent.status == 64 && percent.stderr.split(separator: "\n").count == 1, "\(percent.stderr)")
        let junk = folder.appendingPathComponent("junk.mp4")
        try Data(repeating: 7, count: 4096).write(to: junk)
        let unreadable = try await ReelBinary.run(["thumbnail", junk.path, "--at", "0", "-o", folder.path])
        #expect(unreadable.status == 65 && unreadable.stderr.split(separator: "\n").count == 1, "\(unreadable.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["junk.mp4"])
        let first = try await ReelBinary.run(["thumbnail", source.path, "--at", "1", "-o", folder.path])
        #expect(first.status == 0, "\(first.stderr)")
        let again = try await ReelBinary.run(["thumbnail", source.path, "--at", "1", "-o", folder.path])
        #expect(again.status == 74 && again.stderr.contains("already exists"), "\(again.stderr)")
        // -o naming one file: one image is written there; several are refused before any work.
        let named = folder.appendingPathComponent("cover.png")
        let several = try await ReelBinary.run(["thumbnail", source.path, "--at", "1,2", "-o", named.path])
        #expect(several.status == 64 && several.stderr.contains("-o names one file"), "\(several.stderr)")
        let one = try await ReelBinary.run(["thumbnail", source.path, "--at", "2", "-o", named.path])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(try await ProbedFile.probe(named).video?.codec_name == "png")
        try FileManager.default.removeItem(at: named)
        // No temporary file is left behind by any of these.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.sorted() == ["gop-12s-001.jpg", "junk.mp4"], "\(names)")
    }

    /// One rule for every output: `-o newfolder/` is made (as `export -o ladder/` and
    /// `thumbnail --submit -o` make theirs) when its parent exists, and removed again when nothing
    /// was written; a folder under a missing one is refused.
    @Test func aMissingOutputFolderIsMadeWhenItsParentExists() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let parent = Fixtures.scratchFolder("thumbs-new-folder")
        let folder = parent.appendingPathComponent("new")
        let made = try await ReelBinary.run(["thumbnail", source.path, "--at", "1,2", "-o", folder.path + "/"])
        #expect(made.status == 0, "\(made.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["gop-12s-001.jpg", "gop-12s-002.jpg"], "\(names)")
        let other = parent.appendingPathComponent("other")
        let past = try await ReelBinary.run(["thumbnail", source.path, "--at", "13", "-o", other.path])
        #expect(past.status == 64)
        let junk = parent.appendingPathComponent("junk.mp4")
        try Data(repeating: 7, count: 4096).write(to: junk)
        let unreadable = try await ReelBinary.run(["thumbnail", junk.path, "--at", "0", "-o", other.path])
        #expect(unreadable.status == 65)
        #expect(!FileManager.default.fileExists(atPath: other.path), "a failed command leaves no folder")
        let deep = try await ReelBinary.run(
            ["thumbnail", source.path, "--at", "1", "-o", parent.appendingPathComponent("a/b").path])
        #expect(deep.status == 74 && deep.stderr.contains("does not exist"), "\(deep.stderr)")
    }

    /// WebP where this FFmpeg has libwebp (checked at run time); refused by name where not.
    @Test func webpIsWrittenOrRefusedClearly() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let folder = Fixtures.scratchFolder("thumbs-webp")
        let encoders = try await Tools.run("ffmpeg", ["-hide_banner", "-encoders"])
        let result = try await ReelBinary.run(
            [
                "thumbnail", source.path, "--exact", "--at", "2.5", "--json", "-o",
                folder.appendingPathComponent("w-%d.webp").path,
            ])
        if encoders.stdout.contains("libwebp ") {
            #expect(result.status == 0, "\(result.stderr)")
            let image = folder.appendingPathComponent("w-1.webp")
            #expect(try await ProbedFile.probe(image).video?.codec_name == "webp")
            let right = try await Stills.psnr(image, against: source, at: 2.48)
            #expect(right.average >= 30, "\(right)")
        } else {
            #expect(result.status == 65 && result.stderr.contains("libwebp"), "\(result.stderr)")
        }
    }
}
