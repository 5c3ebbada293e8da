#!/usr/bin/env python3
"""Helpers for Scripts/bench: the ffmpeg command equivalent to a Reel export, and the report.

Subcommands (Scripts/bench calls them; nothing here times anything):

  ffmpeg-args REEL PRESET INPUT OUTPUT
      Prints, one per line, the ffmpeg arguments (without `ffmpeg` itself) that do what
      `reel export INPUT --preset PRESET -o OUTPUT --force-transcode` does. Nothing about Reel's rules
      is repeated here: the arguments are read off Reel's own plan (`reel export ... --estimate --json`:
      streams, output size, encoder, x264/x265 preset, CRF, VBV, profile, pixel format, colour tags,
      frame-rate cap, scaler, AAC bit rate, channels and sample rate, container and brand). Only how
      ffmpeg spells each of those is written down here; a plan that tone-maps HDR to SDR is spelt with
      ffmpeg's usual recipe for it (HDR_TO_SDR).

  ladder-ffmpeg-args REEL INPUT FOLDER RUNGS SEGMENT
      Prints, one per line, the arguments of ffmpeg's one-command HLS ladder (split + scale per rung,
      the hls muxer with fMP4 segments and -var_stream_map) into FOLDER, each rung encoded as
      `reel export INPUT --type hls --ladder RUNGS --segment-duration SEGMENT` encodes it.

  preset-info REEL PRESET INPUT
      Prints the preset's canonical name and its kind (video, audio or passthrough), from the plan of
      exporting INPUT with it.

  report OUT_DIR
      Reads OUT_DIR/{cases,runs,ssim,commands,deltae}.tsv, prints the results table, the HDR colour
      check (deltae.tsv) and the differences found between Reel's and ffmpeg's outputs, writes
      OUT_DIR/results.json and OUT_DIR/ratios.dat (the chart's data).

  targets OUT_DIR
      Prints the PASS/FAIL lines for the targets, from OUT_DIR/results.json.

  job-phases CASE SPOOL TOOL RUN
      Prints one phases.tsv row per job of the spool's status files: the job's threads (its share
      of the cores and x265's parameters) and its phase seconds (start-up of an isolated export
      process, probe, encode, flush, verify, publish) and elapsed seconds, from its result.

  tree-rss PID OUTPUT
      Until PID exits, samples the process tree under PID every 50 ms (PID itself, /usr/bin/time, is
      left out) and then writes the peaks of its summed RSS and of its summed PSS, in kB, to OUTPUT.
      /usr/bin/time's %M is the largest single process, which undercounts work spread over
      concurrent processes.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

# What ffmpeg needs to mux metadata as Reel does (Transcoder.muxerOptions: mdta keys); faststart is
# added when the plan asks for a network-optimised file.
METADATA_MOVFLAGS = "+use_metadata_tags"
# ffmpeg's usual CPU recipe for HDR (HLG, PQ) to SDR BT.709, as the colour issue states it: every
# full-size pixel to linear light in 32-bit float (reference white 203 cd/m2), BT.709 primaries,
# tonemap=mobius, back to BT.709; the scale to the output size comes last.
HDR_TO_SDR = ("zscale=t=linear:npl=203,format=gbrpf32le,zscale=p=bt709,tonemap=tonemap=mobius:desat=0,"
              "zscale=t=bt709:m=bt709:r=tv,format=yuv420p")


# ----------------------------------------------------------------------------------------------
# Reel's plan


def reel_plan(reel, preset, source, output=None):
    """The plan of `reel export SOURCE --preset PRESET [-o OUTPUT]`, re-encoding even a source that
    already fits (ffmpeg re-encodes it; smart passthrough is what the web720 case measures)."""
    out = subprocess.run(
        [reel, "export", source, "--preset", preset, "--estimate", "--json", "--force-transcode"]
        + (["-o", output] if output else []), capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench-lib: reel could not plan {source} with {preset}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def ffprobe(path):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main_streams(info):
    """The first real video track and the first audio track of a probed file (for the report)."""
    streams = info.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"
                  and not s.get("disposition", {}).get("attached_pic")), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    return video, audio


def stream_specifier(plan, index):
    """ffmpeg's name for the source stream `index`: `0:v:N` / `0:a:N` (its rank among the streams of
    its kind)."""
    kind = next(s["kind"] for s in plan["streams"] if s["index"] == index)
    rank = [s["index"] for s in plan["streams"] if s["kind"] == kind].index(index)
    return f"0:{kind[0]}:{rank}"


def movflags(plan):
    return ("+faststart" if plan["output"]["networkOptimized"] else "") + METADATA_MOVFLAGS


def ffmpeg_args(reel, preset, source, output):
    plan = reel_plan(reel, preset, source, output)
    args = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source]
    out = plan["output"]
    container = ["-f", out["muxer"], "-brand", out["brand"]] if out.get("brand") else []
    if plan["method"] != "transcode":
        copied = [s["index"] for s in plan["streams"] if s["action"] == "copy"]
        maps = ["-map", "0"] if len(copied) == len(plan["streams"]) else \
            [a for i in copied for a in ("-map", f"0:{i}")]
        return args + maps + ["-c", "copy"] + container + ["-movflags", movflags(plan), output]

    video, audio = plan.get("video"), plan.get("audio")

    def audio_args():
        extra = ["-ar", str(audio["sampleRate"])] if audio["sampleRate"] != audio["sourceSampleRate"] else []
        return ["-c:a", audio["codec"], "-b:a", str(audio["bitRate"]), "-ac", str(audio["channels"])] + extra

    if video is None and container:
        # Audio only (AppleM4A): one audio track and nothing else.
        return args + ["-map", stream_specifier(plan, audio["stream"]), "-vn", "-sn", "-dn"] + audio_args() + \
            container + ["-movflags", movflags(plan), output]

    if video is not None:
        args += ["-map", stream_specifier(plan, video["stream"])]
    if audio is not None:
        args += ["-map", stream_specifier(plan, audio["stream"])]
    if video is not None:
        # ffmpeg rotates first (autorotate), so the size applies to the upright picture, as in Reel.
        aspect = video.get("pixelAspect") or {"numerator": 1, "denominator": 1}
        scale = (f"scale={video['width']}:{video['height']}:flags={video['scaler']},"
                 f"setsar={aspect['numerator']}/{aspect['denominator']}")
        args += ["-vf", f"{HDR_TO_SDR},{scale}" if video["color"] == "tone-mapped" else scale]
        args += ["-c:v", video["encoder"], "-preset", video["encoderPreset"], "-crf", f"{video['crf']:g}"]
        if video.get("maxBitrate") and video.get("bufferSize"):
            args += ["-maxrate", str(video["maxBitrate"]), "-bufsize", str(video["bufferSize"])]
        if video.get("profile"):
            args += ["-profile:v", video["profile"]]
        if video.get("keyframeInterval"):
            args += ["-g", str(video["keyframeInterval"])]
        args += ["-pix_fmt", video["pixelFormat"]]
        tags = (("-color_primaries", "colorPrimaries"), ("-color_trc", "colorTransfer"),
                ("-colorspace", "colorSpace"), ("-color_range", "colorRange"))
        if video["color"] in ("bt709", "tone-mapped"):
            # Reel converts to BT.709 and tags it; a kept source's colours need no flags in ffmpeg.
            for flag, key in tags:
                args += [flag, video[key]]
        if video.get("frameRate") and video.get("sourceFrameRate") and video["frameRate"] < video["sourceFrameRate"]:
            args += ["-fpsmax", f"{video['frameRate']:g}"]
        if video.get("codecTag"):
            args += ["-tag:v", video["codecTag"]]
        if video["encoder"] == "libx265":
            args += ["-x265-params", "log-level=error"]
        if video["encoder"] == "libsvtav1":
            # Reel turns SVT-AV1's scene-change keyframes off (its default too).
            args += ["-svtav1-params", "scd=0"]
    if audio is not None:
        args += audio_args()
    return args + ["-sn", "-dn", "-threads", "0"] + container + ["-movflags", movflags(plan), output]


# Ladder.maxBitrate (ReelExport/Request/Ladder.swift): a rung's VBV cap, about 3.5 bits a second per
# pixel, at least 100 kbit/s, under the preset's own; the buffer is twice the cap. `--estimate` does not
# plan ladders yet, so this one rule of Reel's is repeated here (and `ladder-check` compares the rungs
# Reel wrote with the ones asked of ffmpeg).
def ladder_cap(width, height):
    return max(100_000, int(width * height * 3.5))


def ladder_sizes(rungs, source_width, source_height):
    """Ladder.rungs(forSourceWidth:height:): each box fitted to the source's aspect (even sides),
    dropped when that would upscale or repeat a larger rung."""
    kept = []
    for box in rungs.split(","):
        w, h = (int(x) for x in box.lower().split("x"))
        scale = min(w / source_width, h / source_height)
        fitted = (max(2, round(source_width * scale / 2) * 2), max(2, round(source_height * scale / 2) * 2))
        if scale <= 1.0001 and fitted not in kept:
            kept.append(fitted)
    return kept


def ladder_ffmpeg_args(reel, source, folder, rungs, segment):
    """ffmpeg's one-command ladder (split + scale per rung + the hls muxer with fMP4 segments and
    -var_stream_map), each rung encoded as Reel's ladder encodes it: the ladder's preset (1920x1080,
    Ladder.defaultPreset) planned for this source gives encoder, x264 preset, CRF, profile, pixel
    format, colour tags, scaler and the AAC settings; the rung's size and VBV cap are the ladder's;
    keyframes as LadderPipeline forces them (an IDR at every segment boundary, x264 keyint = one
    segment's frames, no scene cuts)."""
    plan = reel_plan(reel, "1920x1080", source)
    video, audio = plan["video"], plan.get("audio")
    info = ffprobe(source)
    stream = next(s for s in info["streams"] if s["codec_type"] == "video")
    num, den = (int(x) for x in stream["avg_frame_rate"].split("/"))
    keyint = max(1, -(-int(float(segment) * num) // den))  # ceil(segment x frame rate)
    sizes = ladder_sizes(rungs, int(stream["width"]), int(stream["height"]))
    split = f"[0:v]split={len(sizes)}" + "".join(f"[s{i}]" for i in range(len(sizes)))
    scales = [f"[s{i}]scale={w}:{h}:flags={video['scaler']},setsar=1[v{i}]" for i, (w, h) in enumerate(sizes)]
    args = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source,
            "-filter_complex", ";".join([split] + scales)]
    for i in range(len(sizes)):
        args += ["-map", f"[v{i}]"]
    if audio is not None:
        args += ["-map", stream_specifier(plan, audio["stream"])]
    args += ["-c:v", video["encoder"], "-preset", video["encoderPreset"], "-crf", f"{video['crf']:g}",
             "-profile:v", video.get("profile") or "high", "-pix_fmt", video["pixelFormat"]]
    for i, (w, h) in enumerate(sizes):
        cap = min(video.get("maxBitrate") or ladder_cap(w, h), ladder_cap(w, h))
        args += [f"-maxrate:v:{i}", str(cap), f"-bufsize:v:{i}", str(2 * cap)]
    args += ["-g", str(keyint), "-forced-idr", "1", "-x264-params", "scenecut=0",
             "-force_key_frames", f"expr:gte(t,n_forced*{segment})"]
    if video["color"] in ("bt709", "tone-mapped"):
        for flag, key in (("-color_primaries", "colorPrimaries"), ("-color_trc", "colorTransfer"),
                          ("-colorspace", "colorSpace"), ("-color_range", "colorRange")):
            args += [flag, video[key]]
    streams = " ".join(f"v:{i},agroup:aud" for i in range(len(sizes)))
    if audio is not None:
        args += ["-c:a", audio["codec"], "-b:a", str(audio["bitRate"]), "-ac", str(audio["channels"])]
        if audio["sampleRate"] != audio["sourceSampleRate"]:
            args += ["-ar", str(audio["sampleRate"])]
        streams += " a:0,agroup:aud,default:yes"
    return args + ["-sn", "-dn", "-threads", "0", "-f", "hls", "-hls_time", str(segment),
                   "-hls_playlist_type", "vod", "-hls_segment_type", "fmp4", "-hls_flags", "independent_segments",
                   "-master_pl_name", "master.m3u8", "-hls_segment_filename", f"{folder}/v%v/seg_%05d.m4s",
                   "-var_stream_map", streams, f"{folder}/v%v/index.m3u8"]


def ladder_sizes_written(folder):
    """The RESOLUTION of every variant of FOLDER/master.m3u8, in order."""
    sizes = []
    with open(os.path.join(folder, "master.m3u8")) as f:
        for line in f:
            if line.startswith("#EXT-X-STREAM-INF:") and "RESOLUTION=" in line:
                sizes.append(line.split("RESOLUTION=", 1)[1].split(",", 1)[0].strip())
    return sizes


def preset_info(reel, preset, source):
    plan = reel_plan(reel, preset, source)
    kind = "passthrough" if plan["method"] == "passthrough" else ("video" if plan.get("video") else "audio")
    return plan["preset"], kind


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
    """The MP4/QuickTime top-level atoms in file order, as ffprobe's own parser reports them (its trace
    log), so the moov check does not depend on a reader of our own."""
    trace = subprocess.run(["ffprobe", "-v", "trace", "-i", path], capture_output=True, text=True).stderr
    return [line.split("type:'", 1)[1][:4] for line in trace.splitlines() if "parent:'root'" in line]


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
    for case in cases:
        name = case["case"]
        # reel and ffmpeg, then what else the case measured (ladder: separate, reel-2, ffmpeg-2;
        # thumbs: reel-10), in the order it ran.
        tools = ["reel", "ffmpeg"]
        for r in runs:
            if r["case"] == name and r["tool"] not in tools:
                tools.append(r["tool"])
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
        # Reel against another way of doing the same work (the ladder's four separate exports).
        entry["ratios_to"] = {}
        for other in tools[2:]:
            o = entry["median"][other]
            if r and o and not other.startswith(("reel-", "ffmpeg-")):
                entry["ratios_to"][other] = {
                    "wall": ratio(r["wall_s"], o["wall_s"]), "cpu": ratio(r["cpu_s"], o["cpu_s"]),
                    "rss": ratio(r["peak_rss_mb"], o["peak_rss_mb"]), "size": ratio(r["size_mb"], o["size_mb"])}
        # The phone batch: each comparison the issue names, each pair at the same concurrency for
        # memory (peak summed PSS of the process tree: the worker and its export children against
        # bash and its ffmpeg processes, xargs included).
        pairs = {
            "reel/ffmpeg": ("reel", "ffmpeg", "isolated, --jobs = cores, against the sequential loop"),
            "inproc/ffmpeg": ("inproc", "ffmpeg", "--no-isolate against the sequential loop"),
            "reel/ffmpeg-p2": ("reel", "ffmpeg-p2", "isolated against ffmpeg two at a time (xargs -P2)"),
            "reel-j1/ffmpeg": ("reel-j1", "ffmpeg", "--jobs 1 against the loop: one export at a time each"),
        }
        entry["pairs"] = {}
        for label, (a, b, what) in pairs.items():
            ma, mb = entry["median"].get(a) or {}, entry["median"].get(b) or {}
            if ma and mb:
                entry["pairs"][label] = {
                    "what": what, "wall": ratio(ma["wall_s"], mb["wall_s"]), "cpu": ratio(ma["cpu_s"], mb["cpu_s"]),
                    "pss": ratio(ma["peak_rss_mb"], mb["peak_rss_mb"])}
        if entry["ssim"]["reel"] is not None and entry["ssim"]["ffmpeg"] is not None:
            entry["ratios"]["ssim_diff"] = entry["ssim"]["reel"] - entry["ssim"]["ffmpeg"]
        reel_out, ff_out = case["reel_output"], case["ffmpeg_output"]
        entry["outputs"] = {"reel": reel_out, "ffmpeg": ff_out}
        if case["kind"] == "images":
            # Folders of JPEGs: nothing of a movie to compare.
            entry["probe"], entry["differences"] = {}, []
        elif case["kind"] == "ladder":
            entry["probe"] = {t: ladder_describe(d) for t, d in (("reel", reel_out), ("ffmpeg", ff_out))}
            entry["differences"] = ladder_differences(entry["probe"]["reel"], entry["probe"]["ffmpeg"])
        else:
            entry["probe"] = {"reel": describe(reel_out), "ffmpeg": describe(ff_out)}
            entry["differences"] = differences(entry["probe"]["reel"], entry["probe"]["ffmpeg"])
        results["cases"][name] = entry

    results["hdr_colour"] = hdr_colour(read_tsv(os.path.join(out_dir, "deltae.tsv")))
    results["targets"] = evaluate_targets(results["cases"], results["hdr_colour"])
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
    print_phases(out_dir)


def ladder_describe(folder):
    """A ladder folder's variants (RESOLUTION, in the master's order) and each one's segment count."""
    if not folder or not os.path.isfile(os.path.join(folder, "master.m3u8")):
        return None
    sizes, counts = ladder_sizes_written(folder), []
    with open(os.path.join(folder, "master.m3u8")) as f:
        lines = [line.strip() for line in f]
    for i, line in enumerate(lines):
        if line.startswith("#EXT-X-STREAM-INF:") and i + 1 < len(lines):
            with open(os.path.join(folder, lines[i + 1])) as playlist:
                counts.append(sum(1 for x in playlist if x.startswith("#EXTINF:")))
    return {"resolutions": sizes, "segments": counts}


def ladder_differences(reel, ff):
    if reel is None or ff is None:
        return ["an output is missing"]
    notes = []
    if reel["resolutions"] != ff["resolutions"]:
        notes.append(f"rungs: reel {reel['resolutions']}, ffmpeg {ff['resolutions']}")
    if reel["segments"] != ff["segments"]:
        notes.append(f"segments per rung: reel {reel['segments']}, ffmpeg {ff['segments']}")
    return notes


def hdr_colour(rows):
    """The HDR colour check by source and tool: mean CIEDE2000 against the SDR original, zimg's, and
    the excess (None where it could not be measured)."""
    number = lambda v: float(v) if v not in ("", "n/a", "None", None) else None
    colour = {}
    for row in rows:
        colour.setdefault(row["source"], {})[row["tool"]] = {
            "mean": number(row["mean"]), "zimg": number(row["zimg"]), "excess": number(row["excess"])}
    return colour


def fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def print_table(results):
    head = f"{'case':12} {'tool':9} {'wall s':>8} {'CPU s':>8} {'mem MB':>8} {'size MB':>9} {'SSIM':>9}"
    print("mem MB: peak RSS of the largest single process (/usr/bin/time %M), except in batch, batch-inproc")
    print("and phone, where it is the peak of the summed PSS of the whole process tree for both tools")
    print("(the worker and its export children; bash and its ffmpeg processes), sampled every 50 ms.")
    print(head)
    print("-" * len(head))
    for name, e in results["cases"].items():
        for tool in e["median"]:
            m = e["median"][tool]
            ssim = e["ssim"].get(tool)
            print(f"{name:12} {tool:9} {fmt(m.get('wall_s'), '8.3f'):>8} {fmt(m.get('cpu_s'), '8.2f'):>8} "
                  f"{fmt(m.get('peak_rss_mb'), '8.1f'):>8} {fmt(m.get('size_mb'), '9.3f'):>9} "
                  f"{fmt(ssim, '9.5f', 'n/a'):>9}")
        ra = e["ratios"]
        x = lambda key, spec: "-" if ra.get(key) is None else format(ra[key], spec) + "x"
        print(f"{name:12} {'reel/ff':9} {x('wall', '7.2f'):>8} {x('cpu', '7.2f'):>8} {x('rss', '7.2f'):>8} "
              f"{x('size', '8.3f'):>9} {fmt(ra.get('ssim_diff'), '+9.5f', 'n/a'):>9}")
        for label, pair in e.get("pairs", {}).items():
            z = lambda key: "-" if pair.get(key) is None else format(pair[key], '7.2f') + "x"
            print(f"{name:12} {label:14} wall {z('wall'):>8}  CPU {z('cpu'):>8}  PSS {z('pss'):>8}  ({pair['what']})")
        if e.get("pairs"):
            print(f"{'':12} memory: peak of the process tree's summed PSS (sampled every 50 ms): reel's worker and")
            print(f"{'':12} its export children; ffmpeg's bash, xargs and ffmpeg processes. Pairs at the same")
            print(f"{'':12} concurrency: reel-j1/ffmpeg (one at a time), reel/ffmpeg-p2 (two at a time on 2 cores)")
        for other, ro in ([] if e.get("pairs") else e.get("ratios_to", {}).items()):
            y = lambda key, spec: "-" if ro.get(key) is None else format(ro[key], spec) + "x"
            label = "reel/" + other[:4]
            print(f"{name:12} {label:9} {y('wall', '7.2f'):>8} {y('cpu', '7.2f'):>8} {y('rss', '7.2f'):>8} "
                  f"{y('size', '8.3f'):>9}")
        print()
    colour = results.get("hdr_colour") or {}
    if colour:
        print("HDR colour: mean CIEDE2000 against the SDR original (zimg's exact inverse; excess over it)")
        for source, tools in colour.items():
            cells = []
            for tool in ("reel", "ffmpeg"):
                v = tools.get(tool, {})
                cells.append(f"{tool} {fmt(v.get('mean'), '.2f')} ({fmt(v.get('zimg'), '.2f')}; "
                             f"{fmt(v.get('excess'), '+.2f')})")
            print(f"  {source:12} " + "   ".join(cells))
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


def evaluate_targets(cases, colour=None):
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
    e = cases.get("remote")
    if e and e["ratios"].get("wall") is not None:
        add("remote wall vs curl + local export <= 1.05", e["ratios"]["wall"] <= 1.05, f"{e['ratios']['wall']:.3f}")
    else:
        unmeasured("remote", "remote wall vs curl + local export <= 1.05")
    for name, e in cases.items():
        rss = e["ratios"].get("rss")
        if "reel" in e["failures"]:
            add(f"{name} peak RSS ratio <= 1.5", False, "reel failed: " + "; ".join(e["failures"]["reel"]))
        else:
            add(f"{name} peak RSS ratio <= 1.5", None if rss is None else rss <= 1.5,
                "ffmpeg failed" if rss is None else f"{rss:.3f}")
    e = cases.get("hdr")
    if e and e["ratios"].get("wall") is not None:
        # The CPU ratio goes with each: on a loaded machine it moves far less than the wall time.
        add("hdr wall vs ffmpeg's recipe <= 0.75", e["ratios"]["wall"] <= 0.75,
            f"{e['ratios']['wall']:.3f}; CPU {e['ratios']['cpu']:.3f}")
        sdr = cases.get("hdr-sdr")
        mapped, plain = e["median"]["reel"], sdr["median"]["reel"] if sdr else {}
        if mapped.get("wall_s") is not None and plain.get("wall_s"):
            wall, cpu = mapped["wall_s"] / plain["wall_s"], ratio(mapped["cpu_s"], plain["cpu_s"])
            add("hdr wall vs the same export from SDR <= 1.1", wall <= 1.1,
                f"{wall:.3f}; CPU {fmt(cpu, '.3f')}")
        else:
            add("hdr wall vs the same export from SDR <= 1.1", None, "hdr-sdr not run")
    else:
        unmeasured("hdr", "hdr wall vs ffmpeg's recipe <= 0.75")
    for source, tools in (colour or {}).items():
        reel, ff = tools.get("reel", {}), tools.get("ffmpeg", {})
        excess = reel.get("excess")
        add(f"hdr colour {source}: CIEDE2000 over zimg's <= 1.0", excess is not None and excess <= 1.0,
            f"not measured (see logs/colour-{source}.*)" if excess is None else
            f"{excess:+.2f} ({reel['mean']:.2f} vs {reel['zimg']:.2f}); "
            f"ffmpeg's recipe {fmt(ff.get('excess'), '+.2f')}")
    e = cases.get("thumbs")
    if e and e["ratios"].get("wall") is not None:
        add("thumbs wall vs ffmpeg's seeks <= 0.5", e["ratios"]["wall"] <= 0.5, f"{e['ratios']['wall']:.3f}")
    else:
        unmeasured("thumbs", "thumbs wall vs ffmpeg's seeks <= 0.5")
    e = cases.get("thumbs")
    few = (e or {}).get("median", {}).get("reel-10", {})
    if e and e["median"]["reel"].get("peak_rss_mb") and few.get("peak_rss_mb"):
        grow = e["median"]["reel"]["peak_rss_mb"] / few["peak_rss_mb"]
        add("thumbs peak RSS flat: 30 images <= 1.1x 10 images", grow <= 1.1,
            f"{grow:.3f} ({e['median']['reel']['peak_rss_mb']:.1f} vs {few['peak_rss_mb']:.1f} MB)")
    else:
        unmeasured("thumbs", "thumbs peak RSS flat: 30 images <= 1.1x 10 images")
    e = cases.get("ladder")
    if e and e["ratios"].get("wall") is not None:
        add("ladder wall vs ffmpeg's one command <= 0.9", e["ratios"]["wall"] <= 0.9,
            f"{e['ratios']['wall']:.3f}; CPU {fmt(e['ratios'].get('cpu'), '.3f')}")
    else:
        unmeasured("ladder", "ladder wall vs ffmpeg's one command <= 0.9")
    separate = (e or {}).get("ratios_to", {}).get("separate", {})
    if separate.get("wall") is not None:
        add("ladder wall vs four separate reel exports <= 0.6", separate["wall"] <= 0.6,
            f"{separate['wall']:.3f}; CPU {fmt(separate.get('cpu'), '.3f')}")
    else:
        unmeasured("ladder", "ladder wall vs four separate reel exports <= 0.6")
    # Memory flat in the rungs: each rung holds an x264 encoder (its lookahead and reference frames),
    # which no tool can share, so the peak grows with the rungs in ffmpeg's one command too. Reel's
    # growth from 2 to 4 rungs (MB per added rung) may be at most 1.5x ffmpeg's, the RSS target's
    # factor, plus 10 MB of measurement noise: anything more is memory of Reel's own per rung.
    m = (e or {}).get("median", {})
    if all(m.get(t, {}).get("peak_rss_mb") for t in ("reel", "reel-2", "ffmpeg", "ffmpeg-2")):
        reel_slope = (m["reel"]["peak_rss_mb"] - m["reel-2"]["peak_rss_mb"]) / 2
        ff_slope = (m["ffmpeg"]["peak_rss_mb"] - m["ffmpeg-2"]["peak_rss_mb"]) / 2
        add("ladder peak RSS per added rung (2 -> 4 rungs) <= 1.5x ffmpeg's + 10 MB",
            reel_slope <= 1.5 * max(ff_slope, 0) + 10,
            f"reel {reel_slope:+.1f} MB/rung ({m['reel-2']['peak_rss_mb']:.1f} -> {m['reel']['peak_rss_mb']:.1f}), "
            f"ffmpeg {ff_slope:+.1f} MB/rung ({m['ffmpeg-2']['peak_rss_mb']:.1f} -> {m['ffmpeg']['peak_rss_mb']:.1f})")
    else:
        unmeasured("ladder", "ladder peak RSS per added rung (2 -> 4 rungs) <= 1.5x ffmpeg's + 10 MB")
    e = cases.get("phone")
    if e and e.get("pairs"):
        p = e["pairs"]
        for label, limit, key, what in (
                ("reel/ffmpeg", 0.70, "wall", "phone wall vs the ffmpeg loop <= 0.70"),
                ("inproc/ffmpeg", 0.70, "wall", "phone --no-isolate wall vs the ffmpeg loop <= 0.70"),
                ("reel/ffmpeg-p2", 1.05, "wall", "phone wall vs ffmpeg -P2 <= 1.05"),
                ("reel/ffmpeg-p2", 1.3, "pss", "phone PSS, 2 at a time (reel --jobs 2 vs ffmpeg -P2) <= 1.3"),
                ("reel-j1/ffmpeg", 1.3, "pss", "phone PSS, 1 at a time (reel --jobs 1 vs the loop) <= 1.3")):
            v = p.get(label, {}).get(key)
            cpu = p.get(label, {}).get("cpu")
            add(what, None if v is None else v <= limit,
                "not measured" if v is None else f"{v:.3f}" + (f"; CPU {cpu:.3f}" if key == "wall" and cpu else ""))
    else:
        unmeasured("phone", "phone targets (wall <= 0.70 of the loop, <= 1.05 of -P2, PSS <= 1.3)")
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


def job_phases(case, spool, tool, run):
    folder = os.path.join(spool, "status")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            status = json.load(f)
        result = status.get("result") or {}
        threads = result.get("threads") or {}
        phases = result.get("phases") or {}
        size = f"{result.get('width')}x{result.get('height')}" if result.get("width") else "-"
        cell = lambda v: "" if v is None else f"{v:.4f}"
        print("\t".join([case, tool, str(run), status.get("id", name[:-5]), os.path.basename(status.get("asset", "")),
                         size, str(threads.get("share", "")), threads.get("x265", "")]
                        + [cell(phases.get(k)) for k in ("startup", "probe", "encode", "flush", "verify", "publish")]
                        + [cell(result.get("elapsedSeconds"))]))


def print_phases(out_dir):
    """Per job of each reel tool's last run: threads and where the time went; then the medians over
    the jobs of every run, by tool."""
    rows = read_tsv(os.path.join(out_dir, "phases.tsv"))
    if not rows:
        return
    keys = ("startup", "probe", "encode", "flush", "verify", "publish", "elapsed")
    number = lambda v: float(v) if v not in ("", None) else None
    for (case, tool) in dict.fromkeys((r["case"], r["tool"]) for r in rows):
        mine = [r for r in rows if r["case"] == case and r["tool"] == tool]
        last = max(int(r["run"]) for r in mine)
        print(f"{case} {tool}: each job of run {last} (seconds; share = cores its codecs were given)")
        print(f"  {'asset':44} {'out':>9} {'share':>5} " + " ".join(f"{k:>8}" for k in keys))
        for r in (r for r in mine if int(r["run"]) == last):
            print(f"  {r['asset'][:44]:44} {r['size']:>9} {r['share']:>5} "
                  + " ".join(fmt(number(r[k]), '8.3f') for k in keys))
        runs = sorted({int(r["run"]) for r in mine})
        totals = {k: median([sum(number(r[k]) or 0 for r in mine if int(r["run"]) == n) for n in runs]) for k in keys}
        print(f"  {'sum over the jobs (median of runs)':54} {'':>5} "
              + " ".join(fmt(totals[k], '8.3f') for k in keys))
        shares = sorted({r['share'] for r in mine})
        x265 = sorted({r['x265'] for r in mine})
        print(f"  shares given: {', '.join(shares)}; x265 parameters: {', '.join(x265)}")
        print()


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


def quality(table, floor):
    """The quality case's report: per clip the fixed preset's bytes, CPU and SSIM against the
    target's, the set's totals as ratios, and the issue's targets as PASS/FAIL lines."""
    rows = read_tsv(table)
    floor = float(floor)
    runs = {}
    for row in rows:
        runs.setdefault(row["run"], {})[row["clip"]] = row
    fixed, target, target98 = runs.get("fixed", {}), runs.get("target", {}), runs.get("target98", {})
    print(f"quality: fixed CRF against --quality ssim:{floor:.4f} (the fixed preset's lowest SSIM on the set)")
    print(f"{'clip':<28}{'fixed bytes':>12}{'SSIM':>8}{'CPU s':>8}{'target bytes':>14}{'SSIM':>8}{'CPU s':>8}{'CRF':>6}"
          f"{'bytes':>7}{'@0.98 SSIM':>12}{'CRF':>6}")
    totals = {"fb": 0, "tb": 0, "fc": 0.0, "tc": 0.0}
    below, off98 = [], []
    for clip in fixed:
        f, t, n = fixed[clip], target.get(clip), target98.get(clip)
        if not t:
            continue
        fb, tb = int(f["bytes"]), int(t["bytes"])
        fc, tc = float(f["cpu"]), float(t["cpu"])
        totals["fb"] += fb
        totals["tb"] += tb
        totals["fc"] += fc
        totals["tc"] += tc
        if float(t["ssim"]) < floor - 0.002:
            below.append(f"{clip} {t['ssim']}")
        if n and abs(float(n["ssim"]) - 0.98) > 0.003:
            off98.append(f"{clip} {n['ssim']}")
        crf = (lambda row: f"{float(row['crf']):.1f}" if row and row["crf"] != "fixed" else "-")
        print(f"{clip:<28}{fb:>12}{float(f['ssim']):>8.4f}{fc:>8.1f}{tb:>14}{float(t['ssim']):>8.4f}{tc:>8.1f}"
              f"{crf(t):>6}{tb / fb:>7.2f}{(float(n['ssim']) if n else float('nan')):>12.4f}{crf(n):>6}")
    bytes_ratio = totals["tb"] / max(totals["fb"], 1)
    cpu_ratio = totals["tc"] / max(totals["fc"], 1e-9)
    print(f"{'set':<28}{totals['fb']:>12}{'':>8}{totals['fc']:>8.1f}{totals['tb']:>14}{'':>8}{totals['tc']:>8.1f}"
          f"{'':>6}{bytes_ratio:>7.2f}")
    print(f"  bytes ratio {bytes_ratio:.3f} (target <= 0.85), CPU ratio {cpu_ratio:.3f} (target <= 1.25)")
    print(f"{'PASS' if not below else 'FAIL'}  quality-floor: every clip at or above ssim {floor:.4f} within 0.002"
          + (f" (below: {', '.join(below)})" if below else ""))
    print(f"{'PASS' if bytes_ratio <= 0.85 else 'FAIL'}  quality-bytes: {bytes_ratio:.3f} of the fixed preset's bytes (<= 0.85)")
    print(f"{'PASS' if cpu_ratio <= 1.25 else 'FAIL'}  quality-cpu: {cpu_ratio:.3f} of its CPU time (<= 1.25)")
    print(f"{'PASS' if not off98 else 'FAIL'}  quality-0.98: every clip within 0.003 of ssim 0.98"
          + (f" (off: {', '.join(off98)})" if off98 else ""))


def rung_ssim(track, source, width, height):
    """ffmpeg's SSIM (All) of a rung's track scaled to WxH (bicubic: the size itself, or a smaller
    rung scaled up as a player shows it) against the source scaled there, converted to BT.709 as
    Reel converts an untagged SD source."""
    graph = (f"[0:v]scale={width}:{height}:flags=bicubic,setpts=PTS-STARTPTS,format=yuv420p[out];"
             f"[1:v]scale={width}:{height}:flags=bicubic:out_color_matrix=bt709:out_range=tv,"
             f"setpts=PTS-STARTPTS,format=yuv420p[ref];[out][ref]ssim")
    run = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-i", track, "-i", source, "-an", "-sn", "-dn",
                          "-filter_complex", graph, "-f", "null", "-"], capture_output=True, text=True)
    found = re.findall(r"All:([0-9.]+)", run.stderr)
    return float(found[-1]) if found else None


def pertitle_rows(source, folder, json_path, run, stem, cpu):
    """Rows of the pertitle table for one ladder: every rung asked for (by the ladder's result, in
    its order), its video bytes (init + segments), SSIM and whether it was written; a rung a
    per-title ladder dropped is scored as the smaller rung kept below it, scaled up, with 0 bytes.
    The CPU time goes on the first row."""
    with open(json_path) as f:
        lines = [json.loads(line) for line in f if line.startswith("{")]
    ladder = (lines[-1] if lines else {}).get("ladder") or {}
    quality = ladder.get("quality") or {}
    with open(os.path.join(folder, "master.m3u8")) as f:
        master = [line.strip() for line in f]
    written = {}  # WxH -> (track file, bytes)
    for i, line in enumerate(master):
        if not line.startswith("#EXT-X-STREAM-INF:") or i + 1 >= len(master):
            continue
        size = re.search(r"RESOLUTION=(\d+x\d+)", line).group(1)
        playlist = os.path.join(folder, master[i + 1])
        rung = os.path.dirname(playlist)
        with open(playlist) as f:
            entries = [x.strip() for x in f]
        init = next((re.search(r'URI="([^"]+)"', x).group(1) for x in entries if x.startswith("#EXT-X-MAP:")), None)
        parts = ([init] if init else []) + [x for x in entries if x and not x.startswith("#")]
        track = os.path.join(os.path.dirname(folder), f"{os.path.basename(folder)}.{size}.mp4")
        total = 0
        with open(track, "wb") as out:
            for part in parts:
                with open(os.path.join(rung, part), "rb") as f:
                    data = f.read()
                total += len(data)
                out.write(data)
        written[size] = (track, total)
    asked = [r["size"] for r in quality.get("rungs", [])] or list(written)
    crfs = {r["size"]: r["crf"] for r in quality.get("rungs", [])}
    rows = []
    for index, size in enumerate(asked):
        width, height = (int(v) for v in size.split("x"))
        if size in written:
            track, total = written[size]
            kept = 1
        else:
            below = next((s for s in asked[index + 1:] if s in written), None)
            track, total, kept = (written[below][0] if below else None), 0, 0
        score = rung_ssim(track, source, width, height) if track else None
        crf = f"{crfs[size]:.1f}" if size in crfs else "fixed"
        rows.append(f"{stem}\t{run}\t{size}\t{total}\t{cpu if index == 0 else 0}\t"
                    f"{'n/a' if score is None else f'{score:.6f}'}\t{kept}\t{crf}")
    print("\n".join(rows))


def pertitle(table, floor):
    """The pertitle case's report: per clip and rung the fixed ladder's bytes and SSIM against the
    per-title one's, the set's totals as ratios, and the issue's target as PASS/FAIL lines."""
    rows = read_tsv(table)
    floor = float(floor)
    by = {}
    for row in rows:
        by.setdefault((row["run"], row["clip"]), []).append(row)
    print(f"pertitle: fixed ladders against per-title ones at --quality ssim:{floor:.4f} (the fixed ladders' "
          f"lowest rung SSIM on the set); video bytes, init + segments")
    print(f"{'clip':<16}{'rung':>10}{'fixed bytes':>13}{'SSIM':>8}{'per-title':>11}{'SSIM':>8}{'CRF':>6}  kept")
    totals = {"fb": 0, "tb": 0, "fc": 0.0, "tc": 0.0}
    below = []
    for (run, clip), fixed in by.items():
        if run != "fixed":
            continue
        target = {r["size"]: r for r in by.get(("target", clip), [])}
        if not target:
            continue
        totals["fc"] += sum(float(r["cpu"]) for r in fixed)
        totals["tc"] += sum(float(r["cpu"]) for r in target.values())
        for f in fixed:
            t = target.get(f["size"])
            fb, tb = int(f["bytes"]), int(t["bytes"]) if t else 0
            totals["fb"] += fb
            totals["tb"] += tb
            ts = float(t["ssim"]) if t and t["ssim"] != "n/a" else float("nan")
            if not (ts >= floor - 0.002):
                below.append(f"{clip} {f['size']} {ts:.4f}")
            crf = f"{float(t['crf']):.1f}" if t and t["crf"] != "fixed" else "-"
            kept = "yes" if t and t["kept"] == "1" else "dropped (the rung below, scaled up)"
            print(f"{clip:<16}{f['size']:>10}{fb:>13}{float(f['ssim']):>8.4f}{tb:>11}{ts:>8.4f}{crf:>6}  {kept}")
    bytes_ratio = totals["tb"] / max(totals["fb"], 1)
    cpu_ratio = totals["tc"] / max(totals["fc"], 1e-9)
    print(f"{'set':<16}{'':>10}{totals['fb']:>13}{'':>8}{totals['tb']:>11}")
    print(f"  bytes ratio {bytes_ratio:.3f} (target <= 0.80), CPU ratio {cpu_ratio:.3f} (CPU s {totals['fc']:.1f} "
          f"fixed, {totals['tc']:.1f} per title)")
    print(f"{'PASS' if not below else 'FAIL'}  pertitle-floor: every rung at or above ssim {floor:.4f} within 0.002"
          + (f" (below: {', '.join(below)})" if below else ""))
    print(f"{'PASS' if bytes_ratio <= 0.80 else 'FAIL'}  pertitle-bytes: {bytes_ratio:.3f} of the fixed ladders' "
          f"video bytes (<= 0.80)")


def main(argv):
    parser = argparse.ArgumentParser(prog="bench-lib.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("ffmpeg-args")
    for name in ("reel", "preset", "input", "output"):
        command.add_argument(name)
    command = commands.add_parser("ladder-ffmpeg-args")
    for name in ("reel", "input", "folder", "rungs", "segment"):
        command.add_argument(name)
    command = commands.add_parser("preset-info")
    for name in ("reel", "preset", "input"):
        command.add_argument(name)
    commands.add_parser("report").add_argument("out_dir")
    commands.add_parser("targets").add_argument("out_dir")
    command = commands.add_parser("job-phases")
    for name in ("case", "spool", "tool", "run"):
        command.add_argument(name)
    command = commands.add_parser("quality")
    command.add_argument("table")
    command.add_argument("floor")
    command = commands.add_parser("pertitle-rows")
    for name in ("source", "folder", "json", "run", "stem", "cpu"):
        command.add_argument(name)
    command = commands.add_parser("pertitle")
    command.add_argument("table")
    command.add_argument("floor")
    command = commands.add_parser("tree-rss")
    command.add_argument("pid")
    command.add_argument("output")
    args = parser.parse_args(argv)
    if args.command == "ffmpeg-args":
        for arg in ffmpeg_args(args.reel, args.preset, args.input, args.output):
            print(arg)
    elif args.command == "ladder-ffmpeg-args":
        for arg in ladder_ffmpeg_args(args.reel, args.input, args.folder, args.rungs, args.segment):
            print(arg)
    elif args.command == "preset-info":
        print(*preset_info(args.reel, args.preset, args.input))
    elif args.command == "report":
        report(args.out_dir)
    elif args.command == "targets":
        targets(args.out_dir)
    elif args.command == "job-phases":
        job_phases(args.case, args.spool, args.tool, args.run)
    elif args.command == "quality":
        quality(args.table, args.floor)
    elif args.command == "pertitle-rows":
        pertitle_rows(args.source, args.folder, args.json, args.run, args.stem, args.cpu)
    elif args.command == "pertitle":
        pertitle(args.table, args.floor)
    elif args.command == "tree-rss":
        tree_rss(args.pid, args.output)


if __name__ == "__main__":
    main(sys.argv[1:])
