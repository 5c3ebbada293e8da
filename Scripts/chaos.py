"""Stops Reel workers at random moments during a batch and counts lost, doubled and wrongly cancelled jobs.

Run through Scripts/chaos, which prepares the store (REEL_SPOOL, or REEL_STORE and REEL_STATUS_DIR for
PostgreSQL). Reads only status files and the workers' JSON log lines, as an operator's tools would.
"""
import argparse, collections, json, os, random, signal, statistics, subprocess, sys, time

STOPS = ["sigint-worker", "sigterm-worker", "sigint-group", "sigterm-group", "sigint-child", "sigterm-child",
         "sighup-worker", "sighup-group", "control-group", "sigkill-worker", "sigkill-child"]
FINAL = {"completed", "failed", "cancelled"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reel", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--store", default="spool")
    p.add_argument("--limit", type=float, default=900, help="give up after this many seconds")
    a = p.parse_args()
    rng = random.Random(a.seed)
    work = a.work
    status_dir = os.environ.get("REEL_STATUS_DIR") or os.path.join(os.environ["REEL_SPOOL"], "status")
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    clip = os.path.join(work, "clip.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=640x360:rate=30:duration=3", "-f", "lavfi", "-i", "sine=duration=3",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest",
                    clip], check=True)
    manifest = "".join(json.dumps({"asset": clip, "preset": "LowQuality", "outputDir": out, "forceTranscode": True,
                                   "key": f"chaos-{i}"}) + "\n" for i in range(a.jobs))
    submitted = subprocess.run([a.reel, "submit", "--manifest", "-", "--json"], input=manifest, text=True,
                               capture_output=True)
    if submitted.returncode != 0:
        sys.exit(f"chaos: submit failed: {submitted.stderr}")
    ids = [json.loads(line)["id"] for line in submitted.stdout.splitlines() if line.strip()]
    print(f"chaos: {len(ids)} jobs, {a.workers} workers, store {a.store}, seed {a.seed}", flush=True)

    lease = ["--lease", "4"] if a.store == "postgres" else []
    logs, workers, counter = [], {}, [0]

    def start(slot):
        counter[0] += 1
        mode = "--isolate" if slot % 2 == 0 else "--no-isolate"
        log = open(os.path.join(work, f"worker-{counter[0]}.log"), "w")
        logs.append(log.name)
        proc = subprocess.Popen([a.reel, "work", "--jobs", "2", mode, "--log-format", "json", "--rescue-interval", "1",
                                 *lease], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        workers[slot] = (proc, mode)

    def status(job):
        try:
            with open(os.path.join(status_dir, f"{job}.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def children(pid):
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == pid:
                        found.append(int(entry))
                except (OSError, IndexError, ValueError):
                    pass
        return found

    for slot in range(a.workers):
        start(slot)
    began = time.monotonic()
    stops = collections.Counter()
    pending = []  # (stop, signalled at, job, worker name) until the job leaves that worker
    releases = collections.defaultdict(list)
    next_stop = time.monotonic() + rng.uniform(0.5, 2)
    # Every kind of stop in turn (in a shuffled order each round), so a batch meets each of them.
    plan = []
    while time.monotonic() - began < a.limit:
        states = {job: status(job) for job in ids}
        if all(s and s["state"] in FINAL for s in states.values()):
            break
        for slot, (proc, mode) in list(workers.items()):
            if proc.poll() is not None:
                start(slot)
        now = time.monotonic()
        for item in list(pending):
            stop, at, job, name = item
            s = states.get(job)
            if s and not (s["state"] == "exporting" and s.get("worker") == name):
                releases[stop].append(now - at)
                pending.remove(item)
            elif now - at > 120:
                releases[stop].append(float("inf"))
                pending.remove(item)
        if now >= next_stop:
            if not plan:
                plan = rng.sample(STOPS, len(STOPS))
            stop = plan[0]
            # Export processes exist only under isolated workers (even slots).
            slot = rng.randrange(0, a.workers, 2) if "child" in stop else rng.randrange(a.workers)
            proc, mode = workers[slot]
            running = [job for job, s in states.items()
                       if s and s["state"] == "exporting" and s.get("worker", "").endswith(f":{proc.pid}")]
            kids = children(proc.pid)
            if running and proc.poll() is None and ("child" not in stop or kids):
                name = states[running[0]]["worker"]
                signum = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sighup": signal.SIGHUP, "control": signal.SIGTERM,
                          "sigkill": signal.SIGKILL}[stop.split("-")[0]]
                try:
                    if stop.endswith("-group"):
                        os.killpg(proc.pid, signum)
                    elif stop.endswith("-child"):
                        os.kill(rng.choice(kids), signum)
                    elif stop == "control-group":
                        for pid in [proc.pid, *kids]:
                            os.kill(pid, signum)
                    else:
                        proc.send_signal(signum)
                except ProcessLookupError:
                    pass
                stops[stop] += 1
                plan.pop(0)
                at = time.monotonic()
                # A signal to one export process hits only that job; the others hit every running job.
                for job in (running if "child" not in stop else running[:1]):
                    pending.append((stop, at, job, name))
                next_stop = time.monotonic() + rng.uniform(0.5, 2)
        time.sleep(0.1)
    for proc, _ in workers.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc, _ in workers.values():
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
    # Whatever is still queued runs to the end on one last worker.
    final = subprocess.run([a.reel, "work", "--drain", "--log-format", "json", *lease], capture_output=True,
                           text=True, timeout=900)
    with open(os.path.join(work, "worker-final.log"), "w") as f:
        f.write(final.stdout + final.stderr)
    logs.append(os.path.join(work, "worker-final.log"))

    completions = collections.Counter()
    for name in logs:
        with open(name) as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                fields = entry.get("metadata") or {}
                # An attempt that adopts the output an earlier one published (its completion lost to a
                # crash) exports nothing: only real exports count.
                if entry.get("message") == "job completed" and fields.get("method") != "adopted":
                    completions[fields.get("job")] += 1
    states = {job: status(job) for job in ids}
    lost = [job for job, s in states.items() if not s or s["state"] != "completed"]
    cancelled = [job for job, s in states.items() if s and s["state"] == "cancelled"]
    twice = [job for job in ids if completions[job] > 1]
    leftovers = [name for name in os.listdir(out) if name.startswith(".")]
    outputs = [name for name in os.listdir(out) if not name.startswith(".")]
    attempts = collections.Counter(s["attempts"] for s in states.values() if s)
    print(f"chaos: {sum(stops.values())} stops in {time.monotonic() - began:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(stops.items())))
    print(f"{'stop':<16} {'count':>5} {'signal to release, median':>26} {'max':>8}")
    for stop in STOPS:
        times = releases.get(stop, [])
        if times:
            print(f"{stop:<16} {len(times):>5} {statistics.median(times):>24.2f} s {max(times):>6.2f} s")
    print(f"jobs lost (not completed): {len(lost)}")
    print(f"jobs run twice to completion: {len(twice)}")
    adopted = sum(1 for s in states.values() if s and (s.get("result") or {}).get("method") == "adopted")
    print(f"jobs whose published output was adopted after a crash lost its completion: {adopted}")
    print(f"jobs wrongly cancelled: {len(cancelled)}")
    print(f"outputs: {len(outputs)} of {len(ids)}; temporary files left: {len(leftovers)}")
    print("attempts per job: " + ", ".join(f"{k}: {v}" for k, v in sorted(attempts.items())))
    if lost or twice or cancelled or leftovers or len(outputs) != len(ids):
        for job in (lost + twice + cancelled)[:10]:
            print(f"  {job}: {states.get(job)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
