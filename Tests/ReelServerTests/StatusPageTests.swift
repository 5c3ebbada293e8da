import Foundation
import TestSupport
import Testing

/// The status page in a real browser: Debian's Chromium, headless, loads it from a worker that is
/// running jobs, and the test reads the DOM the page's own script rendered.
@Suite("Status page in Chromium", .tags(.media, .browser), .serialized, .timeLimit(.minutes(5)))
struct StatusPageTests {
    @Test func pageShowsLiveProgressAndFailures() async throws {
        // A job that fails first (higher priority), then a long one to watch, queued before the worker starts.
        let queue = Queue()
        let failed = try await queue.submitVanishing(preset: "1280x720", extra: ["--priority", "5"])
        let long = try await Fixtures.url(Fixtures.long).path
        let running = try await queue.submit(long, preset: "HighestQuality", extra: ["--force-transcode"])
        let worker = try await ServedWorker.start(queue: queue, ["--jobs", "1"])
        defer { Task { await worker.stop() } }
        #expect(
            await eventually(within: .seconds(120)) {
                worker.state(failed) == "failed" && worker.state(running) == "exporting"
                    && worker.progress(running) > 0.02 ? true : nil
            } == true, "worker log:\n\(worker.process.output)")

        // First load: a page that refreshes twice a second, given three seconds.
        let first = try await Chromium.dom(worker.url("/?refresh=0.5"))
        #expect(Int(DOM.attribute("data-refreshes", in: first) ?? "") ?? 0 >= 2, "the page did not refresh itself")
        let firstRow = try #require(DOM.row(first, table: "running", job: running), "no running row:\n\(first)")
        let before = try #require(Double(DOM.attribute("data-progress", in: firstRow) ?? ""))
        #expect(before > 0 && before < 1)
        #expect(firstRow.contains("HighestQuality") && firstRow.contains("this worker"))

        // The failed job is listed with its code and message.
        let failure = try #require(DOM.row(first, table: "failures", job: failed), "no failure row:\n\(first)")
        #expect(DOM.text(ofClass: "code", in: failure) == "unreadable-input")
        let message = DOM.text(ofClass: "message", in: failure) ?? ""
        #expect(message.contains("gone.mp4"), "message: \(message)")

        // The queue by state: the failure counted, the running job counted.
        #expect(queueCount(first, "failed") == 1)
        #expect(queueCount(first, "exporting") == 1)

        // Second load once the export has moved on: the progress shown has moved too.
        #expect(
            await eventually(within: .seconds(60)) { worker.progress(running) > before + 0.05 ? true : nil } == true)
        let second = try await Chromium.dom(worker.url("/"), budget: .seconds(2))
        let secondRow = try #require(DOM.row(second, table: "running", job: running), "no running row:\n\(second)")
        let after = try #require(Double(DOM.attribute("data-progress", in: secondRow) ?? ""))
        #expect(after > before, "progress \(before) then \(after)")
    }

    /// The queue box of a state (`<div class="count" data-state="…"><b>n</b>state</div>`).
    private func queueBox(_ html: String, _ state: String) -> String {
        guard let start = html.range(of: "data-state=\"\(state)\""),
            let end = html[start.upperBound...].range(of: "</div>")
        else { return "" }
        return String(html[start.lowerBound..<end.upperBound])
    }

    private func queueCount(_ html: String, _ state: String) -> Int? {
        let box = queueBox(html, state)
        guard let open = box.range(of: "<b>"), let close = box.range(of: "</b>") else { return nil }
        return Int(box[open.upperBound..<close.lowerBound])
    }
}
