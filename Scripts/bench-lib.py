#!/usr/bin/env python3
"""Helpers for Scripts/bench: the ffmpeg command equivalent to a Reel preset, and the report.

Subcommands (Scripts/bench calls them; nothing here times anything):

  ffmpeg-args PRESETS_DIR PRESET INPUT OUTPUT
      Prints, one per line, the ffmpeg arguments (without `ffmpeg` itself) that do what
      `reel export INPUT --preset PRESET -o OUTPUT` does. Every number (encoder, x264/x265 preset,
      CRF, VBV, box, frame-rate cap, profile, AAC bit rate and channels) is read from the preset's
      JSON file; the source's size, rotation, frame rate, bit depth and audio layout come from
      ffprobe. The size, channel and sample-rate rules mirror Reel's (Preset.outputSize,
      ExportPlanner.audioEncoding), as do the scaler flags (Scaler.swift) and colour tags (VideoLane).

  preset-name PRESETS_DIR NAME
      Prints the canonical name of a preset given by name or alias.

  report OUT_DIR
      Reads OUT_DIR/{cases,runs,ssim,commands}.tsv, prints the results table and the differences
      found between Reel's and ffmpeg's outputs, writes OUT_DIR/results.json and OUT_DIR/ratios.dat
      (the chart's data).

  targets OUT_DIR
      Prints the PASS/FAIL lines for the targets, from OUT_DIR/results.json.

  tree-rss PID OUTPUT
      Until PID exits, samples the summed resident memory of PID's descendants (every 0.1 s; PID
      itself, /usr/bin/time, is left out) and then writes the peak, in kB, to OUTPUT. /usr/bin/time's
      %M is the largest single process, which undercounts work spread over concurrent processes.
"""
import json
import math
import os
import statistics
import subprocess
import sys

# Reel's swscale flags (Sources/ReelMedia/Scaler.swift: SWS_BICUBIC, as ffmpeg's scale filter).
REEL_SCALER_FLAGS = "bicubic"
# Reel's muxer flags (Transcoder.muxerOptions): metadata as mdta keys, and moov first.
MOVFLAGS = "+faststart+use_metadata_tags"


# ----------------------------------------------------------------------------------------------
# Presets and probing


def load_presets(folder):
    presets = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                preset = json.load(f)
            presets[preset["name"]] = preset
    return presets


def find_preset(folder, wanted):
    """A preset by name or alias, case-insensitive, also as AVAssetExportPreset<name> (like Reel)."""
    key = wanted.lower()
    if key.startswith("avassetexportpreset"):
        key = key[len("avassetexportpreset"):]
    for name, preset in load_presets(folder).items():
        names = [name] + preset.get("aliases", [])
        if key in (n.lower() for n in names):
            return preset
    raise SystemExit(f"bench-lib: no preset named {wanted!r} in {folder}")


def ffprobe(path):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def rational(text):
    try:
        num, den = (text or "0/0").split("/")
        return float(num) / float(den) if float(den) else 0.0
    except ValueError:
        return 0.0


def rotation(stream):
    for side in stream.get("side_data_list", []):
        if "rotation" in side:
            return int(side["rotation"]) % 360
    try:
        return int(stream.get("tags", {}).get("rotate", 0)) % 360
    except ValueError:
        return 0


def main_streams(info):
    """The video and audio tracks Reel picks: the first real video track and the first audio track."""
    streams = info.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"
                  and not s.get("disposition", {}).get("attached_pic")), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    return video, audio


def swift_round(value):
    """Swift's `.rounded()`: halves away from zero (Python's round() rounds halves to even)."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def output_size(video_preset, width, height):
    """Preset.outputSize(forDisplayWidth:height:): fit in the box (matched to orientation), keep the
    aspect, round to the size multiple (2 at least), never larger than the source."""
    multiple = max(2, video_preset.get("sizeMultiple") or 2)
    box_w, box_h = float(width), float(height)
    box = video_preset.get("box")
    if box:
        landscape = width >= height
        box_w, box_h = float(box[0] if landscape else box[1]), float(box[1] if landscape else box[0])
    scale = min(1.0, box_w / width, box_h / height)

    def fit(value, limit):
        rounded = swift_round(value / multiple) * multiple
        bounded = rounded if rounded <= limit else math.floor(value / multiple) * multiple
        return max(2, int(bounded))

    return fit(width * scale, min(box_w, width)), fit(height * scale, min(box_h, height))


def audio_settings(audio_preset, stream):
    """ExportPlanner.audioEncoding: 44.1/48 kHz kept (else 48 kHz), channels capped, mono at half rate."""
    source_rate = int(stream.get("sample_rate") or 48000)
    rate = source_rate if source_rate in (44100, 48000) else 48000
    channels = max(1, min(int(stream.get("channels") or 2), audio_preset["maxChannels"]))
    bitrate = audio_preset["bitrate"]
    if channels == 1 and audio_preset["maxChannels"] == 2:
        bitrate = max(32000, bitrate // 2)
    return bitrate, channels, rate, source_rate


def ffmpeg_args(presets_dir, preset_name, source, output):
    preset = find_preset(presets_dir, preset_name)
    info = ffprobe(source)
    video, audio = main_streams(info)
    args = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source]
    kind = preset["kind"]
    if kind == "passthrough":
        return args + ["-map", "0", "-c", "copy", "-movflags", MOVFLAGS, output]

    def audio_args():
        bitrate, channels, rate, source_rate = audio_settings(preset["audio"], audio)
        extra = ["-ar", str(rate)] if rate != source_rate else []
        return ["-c:a", "aac", "-b:a", str(bitrate), "-ac", str(channels)] + extra

    if kind == "audio":
        if audio is None:
            raise SystemExit(f"bench-lib: {source} has no audio track")
        # Reel writes m4a with the mp4 muxer and the 'M4A ' brand (OutputType.m4a).
        return args + ["-map", "0:a:0", "-vn", "-sn", "-dn"] + audio_args() + [
            "-f", "mp4", "-brand", "M4A ", "-movflags", MOVFLAGS, output]

    settings = preset["video"]
    if video is not None:
        args += ["-map", "0:v:0"]
    if audio is not None:
        args += ["-map", "0:a:0"]
    if video is not None:
        width, height = int(video["width"]), int(video["height"])
        if rotation(video) in (90, 270):
            width, height = height, width
        out_w, out_h = output_size(settings, width, height)
        bit_depth = int(video.get("bits_per_raw_sample") or (10 if "10" in video.get("pix_fmt", "") else 8))
        hevc = settings["codec"] == "hevc"
        ten_bit = hevc and settings.get("keepHighBitDepth", False) and bit_depth > 8
        # ffmpeg rotates first (autorotate), so the box applies to the displayed size, as in Reel.
        args += ["-vf", f"scale={out_w}:{out_h}:flags={REEL_SCALER_FLAGS},setsar=1"]
        args += ["-c:v", "libx265" if hevc else "libx264", "-preset", settings["encoderPreset"],
                 "-crf", f"{settings['crf']:g}"]
        if settings.get("maxBitrate") and settings.get("bufferSize"):
            args += ["-maxrate", str(settings["maxBitrate"]), "-bufsize", str(settings["bufferSize"])]
        if settings.get("profile"):
            args += ["-profile:v", settings["profile"]]
        args += ["-pix_fmt", "yuv420p10le" if ten_bit else "yuv420p"]
        if not ten_bit:
            # Reel converts to, and tags, BT.709 limited range unless it keeps a 10-bit source's colours.
            args += ["-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709",
                     "-color_range", "tv"]
        cap = settings.get("maxFrameRate")
        rate = rational(video.get("r_frame_rate")) or rational(video.get("avg_frame_rate"))
        if cap and rate > cap + 0.01:
            args += ["-fpsmax", f"{cap:g}"]
        if hevc:
            args += ["-tag:v", "hvc1", "-x265-params", "log-level=error"]
    if audio is not None:
        args += audio_args()
    return args + ["-sn", "-dn", "-threads", "0", "-movflags", MOVFLAGS, output]


# ----------------------------------------------------------------------------------------------
# Report


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    header, rows = lines[0], lines[1:]
    return [dict(zip(header, row)) for row in rows]


def top_level_atoms(path):
    atoms = []
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            offset = 0
            while offset + 8 <= size and len(atoms) < 64:
                f.seek(offset)
                head = f.read(16)
                length = int.from_bytes(head[:4], "big")
                kind = head[4:8].decode("latin-1")
                if length == 1:
                    length = int.from_bytes(head[8:16], "big")
                elif length == 0:
                    length = size - offset
                if length < 8:
                    break
                atoms.append(kind)
                offset += length
    except OSError:
        pass
    return atoms


def describe(path):
    """What the comparison looks at in one output file."""
    if not path or not os.path.isfile(path):
        return None
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_packets", "-show_streams", "-show_format", "-of", "json", path],
        capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    info = json.loads(out.stdout)
    video, audio = main_streams(info)
    atoms = top_level_atoms(path)
    hashes = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "streamhash",
         "-hash", "md5", "-"], capture_output=True, text=True).stdout.split()
    d = {
        "stream_md5": hashes,
        "format": info.get("format", {}).get("format_name"),
        "brand": info.get("format", {}).get("tags", {}).get("major_brand"),
        "duration": round(float(info.get("format", {}).get("duration") or 0), 3),
        "streams": len(info.get("streams", [])),
        "moov_first": "moov" in atoms and "mdat" in atoms and atoms.index("moov") < atoms.index("mdat"),
    }
    if video:
        d["video"] = {k: video.get(k) for k in (
            "codec_name", "codec_tag_string", "profile", "width", "height", "pix_fmt", "color_space",
            "color_primaries", "color_transfer", "color_range", "r_frame_rate", "sample_aspect_ratio")}
        d["video"]["frames"] = int(video.get("nb_read_packets") or 0)
        d["video"]["bit_rate"] = int(video.get("bit_rate") or 0)
    if audio:
        d["audio"] = {k: audio.get(k) for k in ("codec_name", "profile", "channels", "sample_rate")}
        d["audio"]["bit_rate"] = int(audio.get("bit_rate") or 0)
        d["audio"]["packets"] = int(audio.get("nb_read_packets") or 0)
    return d


def differences(reel, ff):
    """Human-readable differences between Reel's and ffmpeg's outputs that matter for fairness."""
    if reel is None or ff is None:
        return ["an output is missing"]
    notes = []
    if "error" in reel or "error" in ff:
        return [f"ffprobe failed: {reel.get('error') or ff.get('error')}"]
    for side, d in (("reel", reel), ("ffmpeg", ff)):
        if not d["moov_first"]:
            notes.append(f"{side} output is not faststart (moov after mdat)")
    if reel["stream_md5"] and reel["stream_md5"] == ff["stream_md5"]:
        notes.append("(same) every stream is bit-identical; only the container differs")
    if reel["streams"] != ff["streams"]:
        notes.append(f"stream count: reel {reel['streams']}, ffmpeg {ff['streams']}")
    if reel.get("brand") != ff.get("brand"):
        notes.append(f"major brand: reel {reel.get('brand')}, ffmpeg {ff.get('brand')}")
    if abs(reel["duration"] - ff["duration"]) > 0.05:
        notes.append(f"duration: reel {reel['duration']} s, ffmpeg {ff['duration']} s")
    for lane in ("video", "audio"):
        a, b = reel.get(lane), ff.get(lane)
        if (a is None) != (b is None):
            notes.append(f"{lane}: only {'reel' if a else 'ffmpeg'} has it")
            continue
        if a is None:
            continue
        for key in a:
            if key in ("bit_rate",):
                continue
            if key == "packets":
                if abs(a[key] - b[key]) > 2:
                    notes.append(f"{lane} packets: reel {a[key]}, ffmpeg {b[key]}")
                continue
            if a[key] != b[key]:
                notes.append(f"{lane} {key}: reel {a[key]}, ffmpeg {b[key]}")
        if lane == "audio" and a["bit_rate"] and b["bit_rate"] and abs(a["bit_rate"] / b["bit_rate"] - 1) > 0.05:
            notes.append(f"audio bit rate: reel {a['bit_rate']}, ffmpeg {b['bit_rate']}")
    return notes


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def report(out_dir):
    cases = read_tsv(os.path.join(out_dir, "cases.tsv"))
    runs = read_tsv(os.path.join(out_dir, "runs.tsv"))
    ssims = {(r["case"], r["tool"]): r["ssim"] for r in read_tsv(os.path.join(out_dir, "ssim.tsv"))}
    commands = {(r["case"], r["tool"]): r["command"] for r in read_tsv(os.path.join(out_dir, "commands.tsv"))}
    env = os.environ
    results = {
        "meta": {
            "date": env.get("BENCH_DATE"), "git": env.get("BENCH_GIT"), "reel": env.get("BENCH_REEL"),
            "ffmpeg": env.get("BENCH_FFMPEG_VERSION"), "cpus": os.cpu_count(),
            "runs": int(env.get("BENCH_RUNS_USED", "0")), "quick": env.get("BENCH_QUICK") == "1",
            "load_average_at_start": env.get("BENCH_LOADAVG"),
                  "ffmpeg_fsync": env.get("BENCH_FFMPEG_FSYNC") == "1",
            "notes": "wall in ns (date +%s%N); CPU/RSS from /usr/bin/time (%U+%S, %M); batch memory, both tools: "
                     "peak summed PSS of the process tree, sampled every 50 ms; medians over runs; "
                     "SSIM (ffmpeg ssim filter, All) of the last run's output against the source "
                     "scaled bicubic to the output size; batch: totals over all clips, SSIM mean.",
        },
        "cases": {},
    }
    tools = ("reel", "ffmpeg")
    for case in cases:
        name = case["case"]
        entry = {"input": case["input"], "preset": case["preset"], "kind": case["kind"],
                 "commands": {t: commands.get((name, t)) for t in tools}, "runs": {}, "median": {},
                 "ssim": {}, "ratios": {}, "failures": {}}
        for tool in tools:
            rows = [r for r in runs if r["case"] == name and r["tool"] == tool]
            good = [r for r in rows if r["status"] == "ok"]
            entry["runs"][tool] = [{
                "run": int(r["run"]), "status": r["status"], "wall_s": float(r["wall"]),
                "user_s": float(r["user"]), "sys_s": float(r["sys"]),
                "cpu_s": round(float(r["user"]) + float(r["sys"]), 2),
                "peak_rss_kb": int(r["rss_kb"]), "bytes": int(r["bytes"])} for r in rows]
            failed = [r for r in rows if r["status"] != "ok"]
            if failed:
                entry["failures"][tool] = [f"run {r['run']}: {r['status']}" for r in failed]
            ok = [x for x in entry["runs"][tool] if x["status"] == "ok"]
            entry["median"][tool] = {
                "wall_s": median([x["wall_s"] for x in ok]),
                "cpu_s": median([x["cpu_s"] for x in ok]),
                "peak_rss_mb": median([x["peak_rss_kb"] / 1024 for x in ok]),
                "size_mb": median([x["bytes"] / 1e6 for x in ok]),
            } if good else {}
            value = ssims.get((name, tool), "")
            entry["ssim"][tool] = float(value) if value not in ("", "n/a", "nan") else None
        r, f = entry["median"]["reel"], entry["median"]["ffmpeg"]
        if r and f:
            entry["ratios"] = {
                "wall": ratio(r["wall_s"], f["wall_s"]), "cpu": ratio(r["cpu_s"], f["cpu_s"]),
                "rss": ratio(r["peak_rss_mb"], f["peak_rss_mb"]), "size": ratio(r["size_mb"], f["size_mb"]),
            }
        if entry["ssim"]["reel"] is not None and entry["ssim"]["ffmpeg"] is not None:
            entry["ratios"]["ssim_diff"] = entry["ssim"]["reel"] - entry["ssim"]["ffmpeg"]
        reel_out, ff_out = case["reel_output"], case["ffmpeg_output"]
        entry["outputs"] = {"reel": reel_out, "ffmpeg": ff_out}
        entry["probe"] = {"reel": describe(reel_out), "ffmpeg": describe(ff_out)}
        entry["differences"] = differences(entry["probe"]["reel"], entry["probe"]["ffmpeg"])
        results["cases"][name] = entry

    results["targets"] = evaluate_targets(results["cases"])
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "ratios.dat"), "w") as f:
        f.write("# case wall_ratio rss_ratio cpu_ratio\n")
        for name, entry in results["cases"].items():
            ra = entry["ratios"]
            if ra.get("wall") is not None:
                f.write(f"{name} {ra['wall']:.4f} {ra['rss']:.4f} {ra['cpu']:.4f}\n")
    print_table(results)


def fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def print_table(results):
    head = f"{'case':12} {'tool':9} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8} {'size MB':>9} {'SSIM':>9}"
    print(head)
    print("-" * len(head))
    for name, e in results["cases"].items():
        for tool in ("reel", "ffmpeg"):
            m = e["median"][tool]
            ssim = e["ssim"][tool]
            print(f"{name:12} {tool:9} {fmt(m.get('wall_s'), '8.3f'):>8} {fmt(m.get('cpu_s'), '8.2f'):>8} "
                  f"{fmt(m.get('peak_rss_mb'), '8.1f'):>8} {fmt(m.get('size_mb'), '9.3f'):>9} "
                  f"{fmt(ssim, '9.5f', 'n/a'):>9}")
        ra = e["ratios"]
        x = lambda key, spec: "-" if ra.get(key) is None else format(ra[key], spec) + "x"
        print(f"{name:12} {'reel/ff':9} {x('wall', '7.2f'):>8} {x('cpu', '7.2f'):>8} {x('rss', '7.2f'):>8} "
              f"{x('size', '8.3f'):>9} {fmt(ra.get('ssim_diff'), '+9.5f', 'n/a'):>9}")
        print()
    for name, e in results["cases"].items():
        for tool, failures in e["failures"].items():
            for failure in failures:
                print(f"note: {name}: {tool} {failure}")
        for note in e["differences"]:
            if note.startswith("(same) "):
                print(f"note: {name}: {note[7:]}")
            else:
                print(f"note: {name}: outputs differ: {note}")


def evaluate_targets(cases):
    targets = []

    def add(name, ok, detail):
        targets.append({"target": name, "result": "SKIP" if ok is None else ("PASS" if ok else "FAIL"),
                        "detail": detail})

    def unmeasured(case, name):
        """A target that has no ratio: FAIL when Reel failed, SKIP when the case did not run."""
        e = cases.get(case)
        if e and "reel" in e["failures"]:
            add(name, False, "reel failed: " + "; ".join(e["failures"]["reel"]))
        else:
            add(name, None, "case not run" if not e else "ffmpeg failed")

    e = cases.get("720p")
    if e and e["ratios"].get("wall") is not None:
        ra = e["ratios"]
        add("720p wall ratio <= 0.95", ra["wall"] <= 0.95, f"{ra['wall']:.3f}")
        diff = ra.get("ssim_diff")
        add("720p |SSIM diff| <= 0.003", None if diff is None else abs(diff) <= 0.003,
            "n/a" if diff is None else f"{diff:+.5f}")
        add("720p size within 5%", abs(ra["size"] - 1) <= 0.05, f"{ra['size']:.3f}")
    else:
        unmeasured("720p", "720p (wall <= 0.95, SSIM within 0.003, size within 5%)")
    e = cases.get("remux")
    if e and e["ratios"].get("wall") is not None:
        add("remux wall ratio <= 1.0", e["ratios"]["wall"] <= 1.0, f"{e['ratios']['wall']:.3f}")
    else:
        unmeasured("remux", "remux wall ratio <= 1.0")
    for name, e in cases.items():
        rss = e["ratios"].get("rss")
        if "reel" in e["failures"]:
            add(f"{name} peak RSS ratio <= 1.5", False, "reel failed: " + "; ".join(e["failures"]["reel"]))
        else:
            add(f"{name} peak RSS ratio <= 1.5", None if rss is None else rss <= 1.5,
                "ffmpeg failed" if rss is None else f"{rss:.3f}")
    for name in ("batch", "batch-inproc"):
        e = cases.get(name)
        if e and e["ratios"].get("wall") is not None:
            add(f"{name} wall ratio <= 0.8", e["ratios"]["wall"] <= 0.8, f"{e['ratios']['wall']:.3f}")
        else:
            unmeasured(name, f"{name} wall ratio <= 0.8")
    return targets


def targets(out_dir):
    with open(os.path.join(out_dir, "results.json")) as f:
        results = json.load(f)
    for t in results["targets"]:
        print(f"{t['result']}  {t['target']}  ({t['detail']})")


def tree_rss(root, output):
    """Samples the process tree under ROOT every 50 ms until ROOT exits and writes the peaks of its
    summed RSS and of its summed PSS (kB). PSS divides each shared page among the processes mapping
    it, so a worker and its export children sharing the same libav libraries are not charged for
    them once per process, as a sum of RSS would."""
    import time
    root = int(root)
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    peak_rss = peak_pss = 0
    while os.path.exists(f"/proc/{root}"):
        children = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
        rss = pss = 0
        todo = list(children.get(root, []))
        while todo:
            pid = todo.pop()
            todo.extend(children.get(pid, []))
            try:
                with open(f"/proc/{pid}/statm") as f:
                    rss += int(f.read().split()[1]) * page_kb
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            pss += int(line.split()[1])
                            break
            except (OSError, IndexError, ValueError):
                pass
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.05)
    with open(output, "w") as f:
        f.write(f"{peak_rss} {peak_pss}\n")


def main(argv):
    if len(argv) >= 1 and argv[0] == "ffmpeg-args" and len(argv) == 5:
        for arg in ffmpeg_args(*argv[1:]):
            print(arg)
    elif len(argv) == 3 and argv[0] == "preset-name":
        print(find_preset(argv[1], argv[2])["name"])
    elif len(argv) == 2 and argv[0] == "report":
        report(argv[1])
    elif len(argv) == 3 and argv[0] == "tree-rss":
        tree_rss(argv[1], argv[2])
    elif len(argv) == 2 and argv[0] == "targets":
        targets(argv[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
