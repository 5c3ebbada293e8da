import Foundation
import TestSupport
import Testing

/// A real browser plays a ladder Reel wrote. Debian's headless Chromium loads a small page served over
/// loopback HTTP (fetch() of file:// is blocked). The page's own script reads the master and media
/// playlists (no hls.js) and feeds each rendition's init and media segments to Media Source
/// Extensions: one SourceBuffer for the video, one for the audio rendition. Mid-play it switches rung
/// as a player does: the other rendition's init segment, then that rendition's next segments. It plays
/// muted to `ended` and writes what it saw into the DOM. The expectations come from ffprobe's reading
/// of the source, not from Reel.
// Serialized: one browser playing in real time at once, on a machine of two cores.
@Suite("HLS ladder playback in Chromium", .tags(.process, .media, .browser), .serialized, .timeLimit(.minutes(5)))
struct LadderPlaybackTests {
    /// What the page writes into `<pre id="outcome">`, as JSON.
    struct Outcome: Decodable {
        struct Quality: Decodable {
            var total: Int
            var dropped: Int
            var corrupted: Int
        }
        var ended: Bool
        var currentTime: Double?
        var duration: Double?
        var errors: [String]
        /// Every append, in order, across both SourceBuffers: `320x180 init`, `320x180 seg_00000.m4s`,
        /// `audio init`, `audio seg_00000.m4s`, ...
        var appended: [String]
        var supported: [String: Bool]
        /// `[currentTime, videoWidth, videoHeight]` at each `resize` event.
        var resizes: [[Double]]
        /// The video's playhead when the second rung's init segment was appended.
        var switchedAtPlayhead: Double?
        var videoBuffered: [[Double]]
        var audioBuffered: [[Double]]
        var quality: Quality?
        var videoWidth: Int
        var videoHeight: Int
        /// Every variant of the master, as `VIDEO-RANGE CODECS` (`SDR avc1.64001e,mp4a.40.2`).
        var listed: [String]?
    }

    /// `Fixtures.ladderSource`: 640x360 H.264 + stereo AAC, 7 s at 29.97 fps (a 2 s segment boundary
    /// falls between frames); and the same at 30 fps.
    @Test(arguments: [Fixtures.ladderSource, LadderPlaybackTests.thirtyFrames])
    func chromiumPlaysTheLadderToTheEndSwitchingRungMidPlay(_ recipe: Fixtures.Recipe) async throws {
        let chromium = try Self.chromium()
        let source = try await Fixtures.url(recipe)
        let root = Fixtures.scratchFolder("ladder-play")
        let folder = root.appendingPathComponent("out")
        let export = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "--segment-duration", "2",
            "-o", folder.path + "/",
        ])
        try #require(export.status == 0, "\(export.stderr)")

        // The source, read by ffprobe: frame count, frame rate and size of its video.
        let probe = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                "stream=nb_read_packets,r_frame_rate,width,height", "-of", "json", source.path,
            ])
        let stream = try #require(
            ((try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])?["streams"]
                as? [[String: Any]])?.first, "\(probe.stderr)")
        let frames = try #require((stream["nb_read_packets"] as? String).flatMap(Int.init))
        let rate = try #require((stream["r_frame_rate"] as? String)?.split(separator: "/").compactMap { Double($0) })
        let frameSeconds = rate[1] / rate[0]
        let videoSeconds = Double(frames) * frameSeconds
        let high = (width: try #require(stream["width"] as? Int), height: try #require(stream["height"] as? Int))

        // The segments the page must append: the low rung's first half, the high rung's second half.
        let segments = try String(contentsOf: folder.appendingPathComponent("v0/index.m3u8"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        try #require(segments.count == 4, "7 s in 2 s segments: \(segments)")
        let switchSegment = segments.count / 2
        let expectedVideo =
            ["320x180 init"] + segments[..<switchSegment].map { "320x180 \($0)" } + ["640x360 init"]
            + segments[switchSegment...].map { "640x360 \($0)" }

        let dom = try await Self.play(root, chromium)
        let outcome = try Self.outcome(in: dom)
        let summary = "Chromium reported: \(try Self.outcomeText(in: dom))"

        #expect(outcome.errors.isEmpty, "\(summary)")
        #expect(outcome.supported.count == 3 && outcome.supported.values.allSatisfy { $0 }, "\(summary)")
        #expect(outcome.ended, "\(summary)")
        if let time = outcome.currentTime, let duration = outcome.duration {
            #expect(abs(time - duration) < 0.001, "ended at the end: \(summary)")
        } else {
            Issue.record("no currentTime or duration: \(summary)")
        }
        // Every segment appended once, in order: the switch is the second rung's init, then its segments.
        #expect(outcome.appended.filter { !$0.hasPrefix("audio") } == expectedVideo, "\(summary)")
        #expect(
            outcome.appended.filter { $0.hasPrefix("audio") }
                == ["audio init"] + segments.indices.map { String(format: "audio seg_%05d.m4s", $0) }, "\(summary)")
        // Switched while playing (the page appends at most 2.5 s ahead, so the playhead was past 1.5 s),
        // and the high rung's pictures were shown from the boundary on, never before it.
        #expect((outcome.switchedAtPlayhead ?? 0) >= 1, "\(summary)")
        let sizes = outcome.resizes.map { (time: $0[0], width: Int($0[1]), height: Int($0[2])) }
        #expect(sizes.first?.width == 320 && sizes.first?.height == 180, "\(summary)")
        let shownHigh = sizes.first { $0.width == high.width && $0.height == high.height }
        #expect(shownHigh.map { $0.time >= Double(switchSegment) * 2 - 0.05 } == true, "\(summary)")
        #expect(outcome.videoWidth == high.width && outcome.videoHeight == high.height, "\(summary)")

        // Every frame decoded, none corrupted. Dropped frames are frames the renderer showed late (a
        // loaded machine's, not the stream's); most must still be shown.
        let quality = try #require(outcome.quality, "\(summary)")
        #expect(quality.total == frames, "\(summary)")
        #expect(quality.corrupted == 0, "\(summary)")
        #expect(quality.dropped * 4 < frames, "\(summary)")

        // One unbroken range per SourceBuffer from 0 (a timestamp gap at a segment or at the switch
        // splits it).
        #expect(outcome.videoBuffered.count == 1, "\(summary)")
        #expect(outcome.audioBuffered.count == 1, "\(summary)")
        #expect((outcome.videoBuffered.first?[0] ?? 1) < 0.001, "\(summary)")
        #expect((outcome.audioBuffered.first?[0] ?? 1) < 0.001, "\(summary)")

        // Each lane ends where its frames do: the video at its last frame's end, the audio within a
        // frame of it (Apple's authoring spec, 8.3: audio and video playlists cover the same span).
        let videoEnd = outcome.videoBuffered.first?[1] ?? 0
        let audioEnd = outcome.audioBuffered.first?[1] ?? 0
        // At 30 fps the last frame shown is a P frame followed in decode order by B frames: its
        // sample lasts its own frame (VideoEncodeStage.DecodeTimes.shown), not one tick.
        #expect(abs(videoEnd - videoSeconds) < 0.002, "video buffered to \(videoEnd) s of \(videoSeconds) s")
        // The audio ends with the video: its init segment's edit list skips the encoder's priming.
        #expect(
            abs(audioEnd - videoSeconds) <= frameSeconds, "audio buffered to \(audioEnd) s, video \(videoSeconds) s")
    }

    /// The same picture and sound as `Fixtures.ladderSource` at 30 fps, where the last frame shown once
    /// had a one-tick sample (the video ended a frame short, 6.967 s of 7.0) and the audio's priming,
    /// before its edit list, made it outlast the video by 40 ms.
    static let thirtyFrames = Fixtures.Recipe(
        "ladder-source-30fps.mp4",
        [
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=7", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000:duration=7", "-af", "aformat=channel_layouts=stereo",
            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k",
        ])

    // MARK: - The browser and the server

    /// Debian's Chromium (Scripts/setup installs it).
    static func chromium() throws -> String {
        guard
            let path = ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { throw ToolFailure(message: "no Chromium; Scripts/setup installs Debian's chromium package") }
        return path
    }

    /// The player page's DOM once it has played the ladder in `root` (`query`, e.g. `range=SDR`, picks
    /// the variants): the page is written into `root`, which a local server serves while Chromium loads
    /// it, stopped however that ends.
    static func play(_ root: URL, _ chromium: String, query: String? = nil) async throws -> String {
        try Self.page.write(to: root.appendingPathComponent("player.html"), atomically: true, encoding: .utf8)
        let server = try await PageServer.start(serving: root)
        let dom: String
        do {
            dom = try await Self.dom(
                chromium, url: "http://127.0.0.1:\(server.port)/player.html" + (query.map { "?" + $0 } ?? ""))
        } catch {
            await server.process.stop()
            throw error
        }
        await server.process.stop()
        return dom
    }

    /// The DOM of `url` once the page has finished: `--dump-dom` returns at the load event, which the
    /// page's last script (`/hold`, answered when the page posts `/done`) keeps back until then. Real
    /// time, not `--virtual-time-budget`: media plays at the wall clock's pace.
    static func dom(_ chromium: String, url: String) async throws -> String {
        let profile = Fixtures.scratchFolder("chromium")
        defer { try? FileManager.default.removeItem(at: profile) }
        let result = try await Tools.run(
            chromium,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--user-data-dir=\(profile.path)",
                "--autoplay-policy=no-user-gesture-required", "--dump-dom", url,
            ], timeLimit: .seconds(150))
        guard result.status == 0, result.stdout.contains("</html>") else {
            throw ToolFailure(
                message: "chromium could not load \(url) (\(result.status)): \(result.stderr.suffix(2000))")
        }
        return result.stdout
    }

    /// The text of `<pre id="outcome">` (HTML entities undone).
    static func outcomeText(in dom: String) throws -> String {
        guard let open = dom.range(of: "<pre id=\"outcome\">"),
            let close = dom[open.upperBound...].range(of: "</pre>")
        else { throw ToolFailure(message: "no outcome in the page: \(dom.suffix(1000))") }
        return dom[open.upperBound..<close.lowerBound].replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func outcome(in dom: String) throws -> Outcome {
        let text = try outcomeText(in: dom)
        guard text.hasPrefix("{") else {
            throw ToolFailure(message: "the page did not finish (its outcome reads '\(text)')")
        }
        return try JSONDecoder().decode(Outcome.self, from: Data(text.utf8))
    }

    /// `python3 -m http.server`'s handler on a free loopback port, serving a folder, plus `/hold` (a
    /// script answered once the page posts `/done`, or after 120 s).
    struct PageServer {
        let process: BackgroundProcess
        let port: Int

        static let script = """
            import http.server, sys, threading
            root = sys.argv[1]
            done = threading.Event()
            class Handler(http.server.SimpleHTTPRequestHandler):
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, directory=root, **kwargs)
                def log_message(self, *args):
                    pass
                def do_GET(self):
                    if self.path != "/hold":
                        return super().do_GET()
                    done.wait(120)
                    body = b"// released\\n"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/javascript")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def do_POST(self):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    done.set()
                    self.send_response(204)
                    self.end_headers()
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            server.daemon_threads = True
            print(f"port {server.server_address[1]}", flush=True)
            server.serve_forever()
            """

        static func start(serving root: URL) async throws -> PageServer {
            let folder = Fixtures.scratchFolder("page-server")
            let path = folder.appendingPathComponent("serve.py")
            try script.write(to: path, atomically: true, encoding: .utf8)
            let process = try BackgroundProcess(
                "/usr/bin/python3", ["-u", path.path, root.path], log: folder.appendingPathComponent("serve.log"))
            let port = await eventually(within: .seconds(30)) { () -> Int? in
                guard let range = process.output.range(of: "port ") else { return nil }
                return Int(process.output[range.upperBound...].prefix { $0.isNumber })
            }
            guard let port else {
                await process.stop()
                throw ToolFailure(message: "the page server did not start: \(process.output)")
            }
            return PageServer(process: process, port: port)
        }
    }

    /// The player: plays `out/master.m3u8` with MSE alone, starting on the lowest-bandwidth variant
    /// and switching to the highest at the middle segment, each lane appending at most 2.5 s ahead
    /// of the playhead, as players do, so the switch happens while the first rung is on screen. With
    /// `?range=SDR` (or another VIDEO-RANGE) it plays only the variants of that range.
    static let page = #"""
        <!doctype html>
        <html><head><meta charset="utf-8"><title>ladder playback</title></head>
        <body>
        <video id="video" muted playsinline></video>
        <pre id="outcome">running</pre>
        <script>
        "use strict";
        const video = document.getElementById("video");
        video.muted = true;
        const out = {
          ended: false, currentTime: null, duration: null, errors: [], appended: [], supported: {}, resizes: [],
          switchedAtPlayhead: null, videoBuffered: [], audioBuffered: [], quality: null, videoWidth: 0, videoHeight: 0,
          listed: []
        };
        const fail = (what) => out.errors.push(String(what && what.message ? what.message : what));
        const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
        const ranges = (r) => Array.from({ length: r.length }, (_, i) => [r.start(i), r.end(i)]);

        async function fetched(url, text) {
          const response = await fetch(url);
          if (!response.ok) throw new Error(url + ": HTTP " + response.status);
          return text ? response.text() : response.arrayBuffer();
        }
        function attributes(text) {
          const found = {};
          const pattern = /([A-Z0-9-]+)=("[^"]*"|[^,]*)/g;
          let match;
          while ((match = pattern.exec(text))) found[match[1]] = match[2].replace(/^"|"$/g, "");
          return found;
        }
        async function mediaPlaylist(url) {
          const lines = (await fetched(url, true)).split("\n").map((line) => line.trim());
          const map = lines.find((line) => line.startsWith("#EXT-X-MAP:"));
          if (!map) throw new Error(url + " has no EXT-X-MAP");
          const segments = [];
          let start = 0, duration = 0;
          for (const line of lines) {
            if (line.startsWith("#EXTINF:")) duration = parseFloat(line.slice(8));
            else if (line && !line.startsWith("#")) {
              segments.push({ url: new URL(line, url).href, name: line, start });
              start += duration;
            }
          }
          return { init: new URL(attributes(map.slice(11)).URI, url).href, segments };
        }
        function append(buffer, data, label) {
          return new Promise((resolve, reject) => {
            const done = () => { buffer.removeEventListener("error", failed); resolve(); };
            const failed = () => { buffer.removeEventListener("updateend", done); reject(new Error("appending " + label + " failed")); };
            buffer.addEventListener("updateend", done, { once: true });
            buffer.addEventListener("error", failed, { once: true });
            buffer.appendBuffer(data);
            out.appended.push(label);
          });
        }

        async function run() {
          const master = new URL("out/master.m3u8", location.href).href;
          const lines = (await fetched(master, true)).split("\n").map((line) => line.trim());
          const listed = [];
          let audioURI = null;
          lines.forEach((line, i) => {
            if (line.startsWith("#EXT-X-STREAM-INF:")) listed.push({ ...attributes(line.slice(18)), uri: lines[i + 1] });
            if (line.startsWith("#EXT-X-MEDIA:") && attributes(line.slice(13)).TYPE === "AUDIO") audioURI = attributes(line.slice(13)).URI;
          });
          out.listed = listed.map((v) => (v["VIDEO-RANGE"] || "SDR") + " " + v.CODECS);
          const range = new URLSearchParams(location.search).get("range");
          const variants = range ? listed.filter((v) => (v["VIDEO-RANGE"] || "SDR") === range) : listed;
          if (variants.length < 2) throw new Error("the master playlist has " + variants.length + " variant(s) to play");
          if (!audioURI) throw new Error("the master playlist has no audio rendition");
          variants.sort((a, b) => Number(a.BANDWIDTH) - Number(b.BANDWIDTH));
          const low = variants[0], high = variants[variants.length - 1];
          const videoType = (v) => 'video/mp4; codecs="' + v.CODECS.split(",").find((c) => !c.startsWith("mp4a")) + '"';
          const audioType = 'audio/mp4; codecs="' + low.CODECS.split(",").find((c) => c.startsWith("mp4a")) + '"';
          for (const type of [videoType(low), videoType(high), audioType]) {
            out.supported[type] = MediaSource.isTypeSupported(type);
            if (!out.supported[type]) throw new Error("MediaSource does not support " + type);
          }
          const [lowList, highList, audioList] = await Promise.all(
            [low.uri, high.uri, audioURI].map((uri) => mediaPlaylist(new URL(uri, master).href)));

          const source = new MediaSource();
          video.src = URL.createObjectURL(source);
          await new Promise((resolve) => source.addEventListener("sourceopen", resolve, { once: true }));
          const videoBuffer = source.addSourceBuffer(videoType(low));
          const audioBuffer = source.addSourceBuffer(audioType);

          const count = lowList.segments.length;
          const switchAt = Math.max(1, Math.floor(count / 2));
          const videoSteps = [{ url: lowList.init, label: low.RESOLUTION + " init" }];
          for (let i = 0; i < count; i++) {
            const rung = i < switchAt ? low : high, list = i < switchAt ? lowList : highList;
            if (i === switchAt) videoSteps.push({ url: highList.init, label: high.RESOLUTION + " init", type: videoType(high), start: list.segments[i].start });
            videoSteps.push({ url: list.segments[i].url, label: rung.RESOLUTION + " " + list.segments[i].name, start: list.segments[i].start });
          }
          const audioSteps = [{ url: audioList.init, label: "audio init" }].concat(
            audioList.segments.map((s) => ({ url: s.url, label: "audio " + s.name, start: s.start })));
          const feed = async (buffer, steps) => {
            for (const step of steps) {
              while (step.start > 0 && step.start - video.currentTime > 2.5 && !video.error) await sleep(20);
              const data = await fetched(step.url, false);
              if (step.type) {
                out.switchedAtPlayhead = video.currentTime;
                if (buffer.changeType) buffer.changeType(step.type);
              }
              await append(buffer, data, step.label);
            }
          };
          const lanes = Promise.all([feed(videoBuffer, videoSteps), feed(audioBuffer, audioSteps)]);
          while (videoBuffer.buffered.length === 0 || audioBuffer.buffered.length === 0) {
            if (video.error) throw new Error("no media buffered");
            await sleep(10);
          }
          await video.play();
          await lanes;
          out.videoBuffered = ranges(videoBuffer.buffered);
          out.audioBuffered = ranges(audioBuffer.buffered);
          source.endOfStream();
          const limit = performance.now() + (source.duration + 30) * 1000;
          while (!video.ended && !video.error && performance.now() < limit) await sleep(50);
          if (!video.ended) throw new Error("not ended: stopped at " + video.currentTime + " of " + video.duration);
        }

        let finished = false;
        async function finish() {
          if (finished) return;
          finished = true;
          out.ended = video.ended;
          out.currentTime = video.currentTime;
          out.duration = video.duration;
          out.videoWidth = video.videoWidth;
          out.videoHeight = video.videoHeight;
          const quality = video.getVideoPlaybackQuality();
          out.quality = { total: quality.totalVideoFrames, dropped: quality.droppedVideoFrames, corrupted: quality.corruptedVideoFrames };
          document.getElementById("outcome").textContent = JSON.stringify(out);
          // Releases /hold: the load event fires and --dump-dom returns this DOM.
          await fetch("/done", { method: "POST", body: "1" }).catch(() => {});
        }
        video.addEventListener("error", () => fail("video error " + (video.error && video.error.code) + ": " + (video.error && video.error.message)));
        video.addEventListener("resize", () => out.resizes.push([video.currentTime, video.videoWidth, video.videoHeight]));
        setTimeout(() => { fail("the page gave up after 90 s"); finish(); }, 90000);
        run().catch(fail).finally(finish);
        </script>
        <script src="/hold"></script>
        </body></html>
        """#
}
