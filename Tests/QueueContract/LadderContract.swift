import Foundation
import ReelExport
import ReelQueue
import TestSupport
import Testing

extension JobStoreContract {
    /// A ladder job keeps its ladder from submit to the worker's lease, its renditions' progress as
    /// the worker reports it (rounded as the job's own progress), every rendition at 1 once it
    /// completed, and its result's list of files.
    static func ladderJob(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        var submitted = try await spec(output: Fixtures.folder.appendingPathComponent("never-{id}.hls").path)
        var ladder = Ladder(
            sizes: [.init(width: 640, height: 360), .init(width: 1280, height: 720)], segmentSeconds: 2)
        ladder.manifests = [.hls, .dash]
        submitted.ladder = ladder
        let id = try await store.submit(submitted).status.id
        let waiting = try #require(try await store.status(id))
        #expect(waiting.spec?.ladder == ladder && waiting.outputType == "hls" && waiting.renditions == nil)
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(lease.spec.ladder == ladder)
        let renditions = [
            ExportSession.RenditionProgress(name: "v0", width: 1280, height: 720, fraction: 0.41234),
            ExportSession.RenditionProgress(name: "v1", width: 640, height: 360, fraction: 0.5),
            ExportSession.RenditionProgress(name: "a", fraction: 0.6),
        ]
        let report = JobProgress(
            fraction: 0.45, phase: .transcoding, framesPerSecond: 30, secondsRemaining: 2, renditions: renditions)
        #expect(try await store.renew(lease, progress: report) == .held)
        let running = try #require(try await store.status(id))
        #expect(running.renditions?.map(\.fraction) == [0.412, 0.5, 0.6], "\(running.renditions ?? [])")
        #expect(running.renditions?.map(\.name) == ["v0", "v1", "a"] && running.renditions?[2].width == nil)
        // A renewal without progress keeps what was reported.
        #expect(try await store.renew(lease, progress: nil) == .held)
        #expect(try await store.status(id)?.renditions == running.renditions)
        let files = ["a/init.mp4", "a/seg_00000.m4s", "manifest.mpd", "master.m3u8", "v0/index.m3u8", "v0/init.mp4"]
        let ladderJSON = """
            {"master": "master.m3u8", "dash": "manifest.mpd", "video": [], "dropped": ["1280x720"],
             "files": \(String(decoding: try JSONSerialization.data(withJSONObject: files), as: UTF8.self))}
            """
        var result = emptyResult
        result.ladder = try JSONCoding.decoder.decode(LadderResult.self, from: Data(ladderJSON.utf8))
        #expect(try await store.finish(lease, .completed(result)))
        let done = try #require(try await store.status(id))
        #expect(
            done.state == .completed && done.result?.ladder?.files == files
                && done.result?.ladder?.dropped == ["1280x720"])
        #expect(done.renditions?.map(\.fraction) == [1, 1, 1] && done.renditions?.map(\.name) == ["v0", "v1", "a"])
    }
}

extension JobStoreContract {
    /// A thumbnail job keeps its set from submit to the worker's lease, and its result's pictures.
    static func thumbnailJob(_ harness: any StoreHarness) async throws {
        let store = try await harness.makeStore()
        var submitted = try await spec(output: Fixtures.folder.appendingPathComponent("never-{id}").path)
        let set = ThumbnailSetRequest(at: ["1", "50%"], maxSize: "320x", exact: true, format: "png", sheet: "2x1")
        submitted.thumbnails = set
        let id = try await store.submit(submitted).status.id
        #expect(try await store.status(id)?.outputType == "thumbnails")
        let lease = try #require(try await store.claim(worker: "w"))
        #expect(lease.spec.thumbnails == set)
        let resultJSON = """
            {"images": [{"file": "a-sprite-001.png", "requestedTime": 1, "actualTime": 0.96, "keyframe": false,
                         "width": 320, "height": 180, "x": 0, "y": 0}],
             "track": "a-thumbnails.vtt", "files": ["a-sprite-001.png", "a-thumbnails.vtt"], "bytes": 1234}
            """
        var result = emptyResult
        result.thumbnails = try JSONCoding.decoder.decode(ThumbnailSetExport.Result.self, from: Data(resultJSON.utf8))
        #expect(try await store.finish(lease, .completed(result)))
        let done = try #require(try await store.status(id))
        #expect(
            done.result?.thumbnails == result.thumbnails && done.result?.thumbnails?.images.first?.actualTime == 0.96)
    }
}
