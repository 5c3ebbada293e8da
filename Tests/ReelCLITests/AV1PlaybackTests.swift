import Foundation
import TestSupport
import Testing

/// Headless Chromium plays what an AV1 preset writes: the MP4 itself in a `<video>` element, and the
/// same stream fragmented by ffmpeg (`-c copy`) through Media Source Extensions under the codec string
/// worked out from ffprobe's profile, level and pixel format. The page and server are
/// `LadderPlaybackTests`'.
@Suite("AV1 playback in Chromium", .tags(.process, .media, .browser), .serialized, .timeLimit(.minutes(5)))
struct AV1PlaybackTests {
    struct Outcome: Decodable {
        struct Play: Decodable {
            var supported: Bool?
            var ended: Bool
            var width: Int?
            var height: Int?
            var time: Double?
            var decoded: Int?
            var error: String?
        }
        var plain: Play?
        var mse: Play?
        var error: String?
    }

    @Test func chromiumPlaysAnAV1ExportInAVideoElementAndThroughMSE() async throws {
        let chromium = try LadderPlaybackTests.chromium()
        let source = try await Fixtures.url(LadderPlaybackTests.thirtyFrames)
        let root = Fixtures.scratchFolder("av1-play")
        let output = root.appendingPathComponent("out.mp4")
        let export = try await ReelBinary.run(["export", source.path, "--preset", "AV1_1280x720", "-o", output.path])
        try #require(export.status == 0, "\(export.stderr)")
        // The video alone, fragmented for MSE by ffmpeg.
        try await Tools.ffmpeg([
            "-i", output.path, "-map", "0:v:0", "-c", "copy", "-movflags", "frag_keyframe+empty_moov+default_base_moof",
            root.appendingPathComponent("frag.mp4").path,
        ])
        let video = try #require(try await ProbedFile.probe(output).video)
        let level = try #require(video.level)
        let depth = video.pix_fmt == "yuv420p10le" ? "10" : "08"
        // av01.<profile>.<level><tier>.<depth>: Main profile (0), SVT-AV1's Main tier.
        let codecs = "av01.0.\(String(format: "%02d", level))M.\(depth)"
        #expect(video.profile == "Main", "\(video)")

        try Self.page.write(to: root.appendingPathComponent("player.html"), atomically: true, encoding: .utf8)
        let server = try await LadderPlaybackTests.PageServer.start(serving: root)
        let dom: String
        do {
            dom = try await LadderPlaybackTests.dom(
                chromium, url: "http://127.0.0.1:\(server.port)/player.html?codecs=\(codecs)")
        } catch {
            await server.process.stop()
            throw error
        }
        await server.process.stop()
        let text = try LadderPlaybackTests.outcomeText(in: dom)
        let outcome = try JSONDecoder().decode(Outcome.self, from: Data(text.utf8))
        #expect(outcome.error == nil, "\(text)")
        let plain = try #require(outcome.plain, "\(text)")
        #expect(plain.ended && plain.error == nil, "\(text)")
        #expect(plain.width == 640 && plain.height == 360, "\(text)")
        #expect((plain.decoded ?? 0) >= 200, "\(text)")
        let mse = try #require(outcome.mse, "\(text)")
        #expect(mse.supported == true && mse.ended && mse.error == nil, "\(codecs): \(text)")
        #expect((mse.decoded ?? 0) >= 200, "\(text)")
    }

    static let page = #"""
        <!doctype html>
        <html><head><meta charset="utf-8"><title>av1 playback</title></head><body>
        <video id="plain" muted playsinline></video>
        <video id="mse" muted playsinline></video>
        <pre id="outcome">running</pre>
        <script>
        const codecs = new URLSearchParams(location.search).get("codecs");
        const out = {};
        function watch(video, extra) {
          return new Promise(resolve => {
            const done = fields => resolve(Object.assign({}, extra, fields));
            video.addEventListener("ended", () => done({ ended: true, width: video.videoWidth,
              height: video.videoHeight, time: video.currentTime,
              decoded: video.getVideoPlaybackQuality().totalVideoFrames }));
            video.addEventListener("error", () => done({ ended: false,
              error: "video error " + (video.error && video.error.code) + ": " + (video.error && video.error.message) }));
            video.play().catch(e => done({ ended: false, error: String(e) }));
          });
        }
        async function plain() {
          const video = document.getElementById("plain");
          video.src = "out.mp4";
          return watch(video, {});
        }
        async function mse() {
          const type = 'video/mp4; codecs="' + codecs + '"';
          const supported = MediaSource.isTypeSupported(type);
          if (!supported) return { supported, ended: false, error: "not supported: " + type };
          const video = document.getElementById("mse");
          const source = new MediaSource();
          video.src = URL.createObjectURL(source);
          await new Promise(r => source.addEventListener("sourceopen", r, { once: true }));
          const buffer = source.addSourceBuffer(type);
          const data = await (await fetch("frag.mp4")).arrayBuffer();
          await new Promise((resolve, reject) => {
            buffer.addEventListener("updateend", resolve, { once: true });
            buffer.addEventListener("error", () => reject(new Error("append failed")), { once: true });
            buffer.appendBuffer(data);
          });
          source.endOfStream();
          return watch(video, { supported });
        }
        async function run() {
          out.plain = await plain();
          out.mse = await mse();
        }
        let finished = false;
        async function finish() {
          if (finished) return;
          finished = true;
          document.getElementById("outcome").textContent = JSON.stringify(out);
          await fetch("/done", { method: "POST", body: "1" }).catch(() => {});
        }
        setTimeout(() => { out.error = "the page gave up after 90 s"; finish(); }, 90000);
        run().catch(e => { out.error = String(e); }).finally(finish);
        </script>
        <script src="/hold"></script>
        </body></html>
        """#
}
