import ReelQueue

/// The status page: one HTML file with its style and script inline (no external assets, no build
/// step). It fetches `/status.json` every second (`?refresh=<seconds>` changes that) and rebuilds its
/// tables with `textContent` only, so nothing from a job (an asset path, an error message) is ever
/// parsed as HTML.
enum StatusPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Reel worker</title>
        <style>
          :root { color-scheme: light dark; --muted: #777; --bad: #c0392b; --good: #2e8b57; --bar: #3b7dd8; }
          body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; max-width: 75rem; }
          h1 { font-size: 1.3rem; margin: 0 0 .2rem; }
          h2 { font-size: 1.05rem; margin: 1.6rem 0 .4rem; }
          .muted { color: var(--muted); }
          table { border-collapse: collapse; width: 100%; }
          th, td { text-align: left; padding: .25rem .6rem .25rem 0; border-bottom: 1px solid #8884; vertical-align: top; }
          th { font-weight: 600; }
          td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
          td.path { word-break: break-all; }
          .counts { display: flex; gap: 1rem; flex-wrap: wrap; }
          .count { border: 1px solid #8886; border-radius: .4rem; padding: .4rem .8rem; min-width: 6rem; }
          .count b { display: block; font-size: 1.4rem; font-variant-numeric: tabular-nums; }
          .bar { background: #8883; border-radius: .2rem; height: .6rem; width: 12rem; overflow: hidden; }
          .bar > span { display: block; height: 100%; background: var(--bar); }
          .error { color: var(--bad); }
          #problem { color: var(--bad); font-weight: 600; }
          .state-running { color: var(--good); }
          .state-draining, .state-cancelling, .state-stopped, .state-starting { color: var(--bad); }
        </style>
        </head>
        <body data-refreshes="0">
        <h1>Reel worker <span id="worker"></span></h1>
        <div class="muted"><span id="state"></span> · <span id="version"></span> · <span id="store"></span>
          · <span id="slots"></span> · updated <span id="updated">never</span></div>
        <div id="problem" hidden></div>

        <h2>Queue</h2>
        <div id="queue" class="counts"></div>
        <div class="muted" id="sampled"></div>

        <h2>Running</h2>
        <table id="running">
          <thead><tr><th>job</th><th>preset</th><th>asset</th><th>progress</th><th class="num">%</th>
            <th class="num">fps</th><th class="num">left</th><th>attempt</th><th>worker</th></tr></thead>
          <tbody></tbody>
        </table>
        <div class="muted" id="running-empty" hidden>Nothing is running.</div>

        <h2>Recent failures</h2>
        <table id="failures">
          <thead><tr><th>job</th><th>preset</th><th>asset</th><th>failed</th><th>code</th><th>error</th>
            <th>attempts</th></tr></thead>
          <tbody></tbody>
        </table>
        <div class="muted" id="failures-empty" hidden>No failures.</div>

        <h2>Throughput on this worker</h2>
        <table id="presets">
          <thead><tr><th>preset</th><th class="num">completed</th><th class="num">failed</th>
            <th class="num">cancelled</th><th class="num">media</th><th class="num">wall</th>
            <th class="num">× realtime</th><th class="num">written</th></tr></thead>
          <tbody></tbody>
        </table>
        <div class="muted" id="presets-empty" hidden>No job has ended here yet.</div>

        <script>
        "use strict";
        const refresh = Math.max(0.2, Number(new URLSearchParams(location.search).get("refresh")) || 1);
        const $ = (id) => document.getElementById(id);

        function cell(row, text, className) {
          const td = row.insertCell();
          td.textContent = text;
          if (className) td.className = className;
          return td;
        }
        function fill(table, empty, items, render) {
          const body = $(table).tBodies[0];
          const rows = items.map((item) => { const tr = document.createElement("tr"); render(tr, item); return tr; });
          body.replaceChildren(...rows);
          $(empty).hidden = items.length > 0;
        }
        const seconds = (s) => s == null ? "" : s < 90 ? s.toFixed(1) + " s" : s < 5400 ? (s / 60).toFixed(1) + " min"
          : (s / 3600).toFixed(1) + " h";
        const bytes = (b) => b >= 1e9 ? (b / 1e9).toFixed(2) + " GB" : b >= 1e6 ? (b / 1e6).toFixed(1) + " MB"
          : (b / 1e3).toFixed(0) + " kB";
        const time = (iso) => iso ? new Date(iso).toLocaleTimeString() : "";
        const base = (path) => path.split("/").pop();

        function render(status) {
          $("worker").textContent = status.worker.name;
          $("state").textContent = status.worker.state;
          $("state").className = "state-" + status.worker.state;
          $("version").textContent = "reel " + status.worker.version + " (" + status.worker.commit + ")";
          $("store").textContent = status.worker.store;
          $("slots").textContent = status.worker.busy + " of " + status.worker.slots + " slots busy";
          const problem = status.store.available ? "" : "store unavailable: " + (status.store.error || "unknown");
          $("problem").textContent = problem;
          $("problem").hidden = !problem;

          const queue = $("queue");
          queue.replaceChildren(...\#(states).map((state) => {
            const box = document.createElement("div");
            box.className = "count";
            box.dataset.state = state;
            const count = document.createElement("b");
            count.textContent = status.store.counts[state] ?? 0;
            box.append(count, state);
            return box;
          }));
          $("sampled").textContent = status.store.sampledAt
            ? "counted at " + time(status.store.sampledAt) + " in " + (status.store.sampleSeconds * 1000).toFixed(0) + " ms"
            : "";

          fill("running", "running-empty", status.running, (tr, job) => {
            tr.dataset.job = job.id;
            cell(tr, job.id);
            cell(tr, job.preset);
            cell(tr, base(job.asset), "path").title = job.asset;
            const bar = document.createElement("div");
            bar.className = "bar";
            const fillBar = document.createElement("span");
            fillBar.style.width = (job.progress * 100).toFixed(1) + "%";
            bar.append(fillBar);
            tr.insertCell().append(bar);
            const percent = cell(tr, (job.progress * 100).toFixed(1), "num progress");
            percent.dataset.progress = job.progress;
            cell(tr, job.fps == null ? "" : job.fps.toFixed(1), "num");
            cell(tr, seconds(job.etaSeconds), "num");
            cell(tr, job.attempt + "/" + job.maxAttempts);
            cell(tr, (job.here ? "this worker" : job.worker || "") + (job.orphaned ? " (orphaned)" : ""));
          });

          fill("failures", "failures-empty", status.recentFailures, (tr, job) => {
            tr.dataset.job = job.id;
            cell(tr, job.id);
            cell(tr, job.preset);
            cell(tr, base(job.asset), "path").title = job.asset;
            cell(tr, time(job.failedAt));
            cell(tr, job.code, "code error");
            cell(tr, job.message, "message");
            cell(tr, String(job.attempts), "num");
          });

          fill("presets", "presets-empty", status.presets, (tr, p) => {
            tr.dataset.preset = p.preset;
            cell(tr, p.preset);
            cell(tr, String(p.completed), "num completed");
            cell(tr, String(p.failed), "num failed");
            cell(tr, String(p.cancelled), "num");
            cell(tr, seconds(p.mediaSeconds), "num");
            cell(tr, seconds(p.wallSeconds), "num");
            cell(tr, p.realtimeFactor == null ? "" : p.realtimeFactor.toFixed(2), "num realtime");
            cell(tr, bytes(p.bytes), "num");
          });
        }

        async function tick() {
          try {
            const response = await fetch("status.json", { cache: "no-store" });
            if (!response.ok) throw new Error("HTTP " + response.status);
            render(await response.json());
            $("updated").textContent = new Date().toLocaleTimeString();
            document.body.dataset.refreshes = Number(document.body.dataset.refreshes) + 1;
          } catch (error) {
            $("problem").textContent = "cannot reach the worker: " + error.message;
            $("problem").hidden = false;
          } finally {
            setTimeout(tick, refresh * 1000);
          }
        }
        tick();
        </script>
        </body>
        </html>
        """#

    /// The job states in their order (`JobState`), as a JavaScript array of strings.
    private static let states = "[" + JobState.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") + "]"
}
