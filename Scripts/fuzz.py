#!/usr/bin/env python3
"""Fuzzes `reel export`, `reel image` and `reel probe` with mutated seeds (driven by Scripts/fuzz;
standard library only).

Seeds are small lavfi clips in many containers and small photos (a HEIC with an embedded thumbnail from
heif-enc, an AVIF, a progressive JPEG with EXIF orientation 6, PNG, WebP, GIF), made once and cached in
bench-out/fuzz/seeds. Each iteration mutates one seed (a reproducible choice: the plan of iteration i
depends only on --seed and i) and runs it under `timeout -s KILL`: a clip through `reel export` with a
random preset, a photo through `reel image` (a random size, content mode and format) or `reel probe`
(`--commands` picks which). The outcome is classified:

  success         exit 0, the output exists and ffprobe (vipsheader for a photo's render) reads it;
                  for `reel probe`, exit 0 with a JSON report and nothing written
  clean failure   non-zero exit with exactly one stderr line, starting `reel: error: `
  messy failure   non-zero exit with anything else on stderr            (finding)
  crash           killed by a signal (Swift traps are SIGILL/SIGTRAP)    (finding)
  hang            still running at the timeout                           (finding)
  bad output      exit 0 but no readable output or no `completed` line  (finding)
  leftover        the output folder holds more than the output on success, or anything at all
                  after a failure (e.g. Reel's hidden .<name>.reel-XXXX.partial)   (finding)

Findings keep their input in bench-out/fuzz/findings/<kind>-<iteration>.<ext> next to a .txt with
the exact command, exit status and stderr.
"""
import argparse
import concurrent.futures as futures
import hashlib
import json
import os
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time
import random
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "bench-out", "fuzz")
SEEDS = os.path.join(OUT, "seeds")
WORK = os.path.join(OUT, "work")
FINDINGS = os.path.join(OUT, "findings")

PRESETS = ["LowQuality", "MediumQuality", "1280x720", "Passthrough", "AppleM4A", "HEVC1920x1080"]
VIDEO_TYPES = ["mp4", "mp4", "mov", "m4v"]
DEFECTS = ["crash", "hang", "messy", "leftover", "badoutput"]
CLASSES = ["success", "clean", "messy", "crash", "hang", "badoutput"]
LABELS = {"success": "success", "clean": "clean failure", "messy": "messy failure", "crash": "crash",
          "hang": "hang", "badoutput": "bad output", "leftover": "leftover"}

# ---------------------------------------------------------------------------------------------
# Seeds


def video(size, duration, rate=30):
    return ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate={rate}:duration={duration}"]


def audio(duration, rate=44100, frequency=440):
    return ["-f", "lavfi", "-i", f"sine=frequency={frequency}:sample_rate={rate}:duration={duration}"]


X264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "15"]
AAC = ["-c:a", "aac", "-b:a", "64k", "-ac", "2"]

# (file name, ffmpeg arguments between `ffmpeg -y` and the output path). `{seeds}` is the seed folder.
RECIPES = [
    ("h264_aac.mp4", video("320x180", 1) + audio(1) + X264 + AAC + ["-shortest"]),
    ("h264_aac_faststart.mp4", video("240x136", 0.5) + audio(0.5, 48000) + X264 + AAC
     + ["-shortest", "-movflags", "+faststart"]),
    ("h264_rotate90.mov", ["-i", "{seeds}/h264_aac.mp4", "-c", "copy", "-metadata:s:v:0", "rotate=90"]),
    ("h264_video_only.mp4", video("160x90", 0.5) + X264),
    ("h264_aac_fragmented.mp4", video("192x108", 1) + audio(1) + X264 + AAC
     + ["-shortest", "-movflags", "frag_keyframe+empty_moov+default_base_moof"]),
    ("hevc_aac.mkv", video("192x108", 0.5) + audio(0.5) + ["-c:v", "libx265", "-preset", "ultrafast",
     "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"] + AAC + ["-shortest"]),
    ("vp9_opus.webm", video("160x90", 1) + audio(1, 48000) + ["-c:v", "libvpx-vp9", "-deadline", "realtime",
     "-cpu-used", "8", "-b:v", "200k", "-c:a", "libopus", "-b:a", "48k", "-shortest"]),
    ("mpeg2_mp2.mpg", video("320x180", 0.5) + audio(0.5, 48000) + ["-c:v", "mpeg2video", "-b:v", "800k",
     "-c:a", "mp2", "-b:a", "128k", "-shortest", "-f", "vob"]),
    ("h264_aac.ts", video("256x144", 1) + audio(1, 48000) + X264 + AAC + ["-shortest", "-f", "mpegts"]),
    ("mpeg4_mp3.avi", video("176x96", 1) + audio(1) + ["-c:v", "mpeg4", "-q:v", "5",
     "-c:a", "libmp3lame", "-b:a", "64k", "-shortest"]),
    ("mjpeg_pcm.avi", video("160x90", 0.5) + audio(0.5, 22050) + ["-c:v", "mjpeg", "-pix_fmt", "yuvj420p",
     "-q:v", "8", "-c:a", "pcm_s16le", "-shortest"]),
    ("aac.m4a", audio(1) + AAC),
    ("audio.flac", audio(1, 44100, 660) + ["-c:a", "flac", "-ac", "2"]),
    ("audio.wav", audio(0.5, 22050, 880) + ["-c:a", "pcm_s16le"]),
]


# Photos: (file name, commands run in order, `{out}` the file being made, `{seeds}` the seed folder).
PHOTO_RECIPES = [
    ("photo.png", [["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=480x360",
                    "-frames:v", "1", "{out}"]]),
    ("photo.heic", [["heif-enc", "-q", "40", "-t", "160", "-o", "{out}", "{seeds}/photo.png"]]),
    ("photo.avif", [["heif-enc", "-A", "-q", "40", "-o", "{out}", "{seeds}/photo.png"]]),
    ("photo_progressive.jpg", [["vips", "jpegsave", "{seeds}/photo.png", "{out}", "--interlace", "--Q", "80"],
                               ["exiftool", "-q", "-overwrite_original", "-n", "-Orientation=6",
                                "-Make=Pixel", "-GPSLatitude=48.85", "-GPSLatitudeRef=N", "{out}"]]),
    ("photo.webp", [["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", "{seeds}/photo.png", "{out}"]]),
    ("photo.gif", [["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", "{seeds}/photo.png", "{out}"]]),
]
PHOTO_SEEDS = {name for name, _ in PHOTO_RECIPES}
COMMANDS = ["export", "image", "probe"]


def make_photo_seeds():
    for name, steps in PHOTO_RECIPES:
        target = os.path.join(SEEDS, name)
        temp = os.path.join(SEEDS, "tmp-" + name)
        for step in steps:
            command = [a.replace("{seeds}", SEEDS).replace("{out}", temp) for a in step]
            done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if done.returncode != 0 or not os.path.exists(temp):
                sys.exit(f"fuzz: error: cannot make seed {name}: {shlex.join(command)}\n{done.stderr}")
        os.replace(temp, target)


def make_seeds():
    """Creates the seed clips unless the cache already holds them for the same recipes."""
    stamp = hashlib.sha256(json.dumps([RECIPES, PHOTO_RECIPES]).encode()).hexdigest()
    stamp_file = os.path.join(SEEDS, ".recipes")
    try:
        cached = open(stamp_file).read().strip() == stamp
    except OSError:
        cached = False
    if cached and all(os.path.isfile(os.path.join(SEEDS, name)) and os.path.getsize(os.path.join(SEEDS, name)) > 0
                      for name, _ in RECIPES + PHOTO_RECIPES):
        return
    print("fuzz: generating seed clips in", os.path.relpath(SEEDS, ROOT), flush=True)
    shutil.rmtree(SEEDS, ignore_errors=True)
    os.makedirs(SEEDS)
    for name, args in RECIPES:
        target = os.path.join(SEEDS, name)
        temp = os.path.join(SEEDS, "tmp-" + name)
        command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"] \
            + [a.replace("{seeds}", SEEDS) for a in args] + [temp]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(temp):
            sys.exit(f"fuzz: error: cannot make seed {name}: {shlex.join(command)}\n{done.stderr}")
        os.replace(temp, target)
    make_photo_seeds()
    with open(stamp_file, "w") as f:
        f.write(stamp + "\n")


def load_seeds(commands):
    """The seeds the chosen commands read: clips for export, photos for image and probe."""
    names = ([name for name, _ in RECIPES] if "export" in commands else []) \
        + ([name for name, _ in PHOTO_RECIPES] if {"image", "probe"} & set(commands) else [])
    return [(name, open(os.path.join(SEEDS, name), "rb").read()) for name in names]


# ---------------------------------------------------------------------------------------------
# Mutations: each takes (rng, data: bytearray, seeds) and returns a description, or None when it
# does not apply (e.g. no MP4 atom to corrupt).

INTERESTING32 = [0, 1, 2, 7, 8, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
INTERESTING8 = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]

MP4_ATOMS = [b"ftyp", b"moov", b"mvhd", b"trak", b"tkhd", b"edts", b"elst", b"mdia", b"mdhd", b"hdlr",
             b"minf", b"vmhd", b"smhd", b"dinf", b"dref", b"stbl", b"stsd", b"stts", b"ctts", b"stss",
             b"stsc", b"stsz", b"stco", b"co64", b"avc1", b"avcC", b"hvcC", b"mp4a", b"esds", b"mdat",
             b"moof", b"mfhd", b"traf", b"tfhd", b"tfdt", b"trun", b"mvex", b"trex", b"udta", b"meta",
             b"free", b"sgpd", b"sbgp", b"sidx", b"colr", b"pasp", b"btrt"]
# HEIF's boxes (the meta box's items, properties and references) and JPEG and PNG's markers and chunks.
HEIF_BOXES = [b"meta", b"hdlr", b"pitm", b"iloc", b"iinf", b"infe", b"iref", b"dimg", b"thmb", b"auxl",
              b"cdsc", b"iprp", b"ipco", b"ipma", b"ispe", b"irot", b"imir", b"clap", b"pixi", b"colr",
              b"hvcC", b"av1C", b"auxC", b"grid", b"idat"]
MP4_ATOMS += HEIF_BOXES
JPEG_MARKERS = [bytes([0xFF, m]) for m in (0xC0, 0xC2, 0xC4, 0xDB, 0xDA, 0xDD, 0xE0, 0xE1, 0xE2)]
PNG_CHUNKS = [b"IHDR", b"PLTE", b"IDAT", b"IEND", b"gAMA", b"sRGB", b"iCCP", b"eXIf", b"tRNS"]
RIFF_CHUNKS = [b"RIFF", b"WEBP", b"VP8 ", b"VP8L", b"VP8X", b"ALPH", b"EXIF", b"ICCP", b"LIST", b"avih", b"strh", b"strf", b"movi", b"idx1", b"fmt ", b"data",
               b"00dc", b"01wb", b"JUNK", b"strl", b"hdrl"]
EBML_IDS = [bytes.fromhex(h) for h in ["1A45DFA3", "18538067", "114D9B74", "1549A966", "1654AE6B",
                                       "1F43B675", "1C53BB6B", "63A2", "2AD7B1", "4489", "E0", "E1"]]


def pos(rng, data):
    return rng.randrange(len(data))


def m_bitflip(rng, data, seeds):
    if not data:
        return None
    n = rng.choice([1, 1, 2, 4, 8, 32])
    for _ in range(n):
        data[pos(rng, data)] ^= 1 << rng.randrange(8)
    return f"flip {n} bit(s)"


def m_bytes(rng, data, seeds):
    if not data:
        return None
    n = rng.choice([1, 2, 4, 16])
    for _ in range(n):
        data[pos(rng, data)] = rng.choice(INTERESTING8) if rng.random() < 0.5 else rng.randrange(256)
    return f"set {n} random byte(s)"


def m_overwrite(rng, data, seeds):
    if not data:
        return None
    start = pos(rng, data)
    length = rng.randint(1, max(1, min(4096, len(data) // 8, len(data) - start)))
    fill = rng.choice(["random", "0x00", "0xFF"])
    chunk = bytes(rng.randrange(256) for _ in range(length)) if fill == "random" \
        else bytes([0 if fill == "0x00" else 0xFF]) * length
    data[start:start + length] = chunk
    return f"overwrite {length} bytes at {start} with {fill}"


def m_truncate(rng, data, seeds):
    if not data:
        return None
    at = rng.choice([pos(rng, data), pos(rng, data), pos(rng, data), rng.randrange(min(len(data), 1024))])
    del data[at:]
    return f"truncate at {at}"


def m_duplicate(rng, data, seeds):
    if not data:
        return None
    start = pos(rng, data)
    length = rng.randint(1, min(65536, len(data) - start))
    chunk = data[start:start + length]
    at = rng.randrange(len(data) + 1)
    data[at:at] = chunk
    return f"duplicate {length} bytes from {start} to {at}"


def m_delete(rng, data, seeds):
    if not data:
        return None
    start = pos(rng, data)
    length = rng.randint(1, min(65536, len(data) - start))
    del data[start:start + length]
    return f"delete {length} bytes at {start}"


def m_splice(rng, data, seeds):
    name, other = rng.choice(seeds)
    a = rng.randrange(len(data) + 1)
    b = rng.randrange(len(other))
    data[a:] = other[b:]
    return f"splice: first {a} bytes + {name} from {b}"


def m_zero_head(rng, data, seeds):
    if not data:
        return None
    n = min(len(data), rng.choice([4, 8, 12, 16, 32, 188, 512, 4096, rng.randint(1, 256)]))
    data[:n] = bytes(n)
    return f"zero first {n} bytes"


def m_header_bytes(rng, data, seeds):
    if not data:
        return None
    span = min(len(data), 256)
    n = rng.choice([1, 2, 4])
    for _ in range(n):
        data[rng.randrange(span)] = rng.choice(INTERESTING8) if rng.random() < 0.5 else rng.randrange(256)
    return f"set {n} byte(s) in the first {span}"


def m_int(rng, data, seeds):
    if len(data) < 8:
        return None
    at = rng.randrange(len(data) - 8)
    value = rng.choice(INTERESTING32)
    fmt = rng.choice([">I", "<I", ">H", "<H", ">Q"])
    width = struct.calcsize(fmt)
    data[at:at + width] = struct.pack(fmt, value & ((1 << (8 * width)) - 1))
    return f"write {value:#x} as {fmt} at {at}"


def find_tags(data, tags, minimum_offset):
    hits = []
    for tag in tags:
        start = data.find(tag, minimum_offset)
        while start != -1 and len(hits) < 4000:
            hits.append((start, tag))
            start = data.find(tag, start + 1)
    return hits


def corrupt_value(rng, original):
    choice = rng.random()
    if choice < 0.6:
        return rng.choice(INTERESTING32)
    if choice < 0.8:
        return (original + rng.choice([-8, -4, -1, 1, 4, 8, 1000])) & 0xFFFFFFFF
    return rng.getrandbits(32)


def m_mp4_atom(rng, data, seeds):
    hits = find_tags(data, MP4_ATOMS, 4)
    if not hits:
        return None
    at, tag = rng.choice(hits)
    name = tag.decode("latin-1")
    what = rng.random()
    if what < 0.45:  # the 32-bit size in front of the type
        old = struct.unpack(">I", data[at - 4:at])[0]
        new = corrupt_value(rng, old)
        data[at - 4:at] = struct.pack(">I", new)
        return f"'{name}' at {at}: size {old:#x} -> {new:#x}"
    if what < 0.8:  # a 32-bit field after the type (version/flags, counts, timescale, sizes, ...)
        field = at + 4 + 4 * rng.randrange(6)
        if field + 4 > len(data):
            return None
        old = struct.unpack(">I", data[field:field + 4])[0]
        new = corrupt_value(rng, old)
        data[field:field + 4] = struct.pack(">I", new)
        return f"'{name}' at {at}: field +{field - at - 4} {old:#x} -> {new:#x}"
    if what < 0.93:  # one byte of the first 16 after the type (avcC profile, NAL length size, counts)
        field = at + 4 + rng.randrange(16)
        if field >= len(data):
            return None
        new = rng.choice(INTERESTING8) if rng.random() < 0.6 else rng.randrange(256)
        data[field] = new
        return f"'{name}' at {at}: byte +{field - at - 4} -> {new:#x}"
    new = rng.choice([b"free", b"skip", b"\0\0\0\0", rng.choice(MP4_ATOMS)])  # rename the atom
    data[at:at + 4] = new
    return f"'{name}' at {at}: renamed to {new!r}"


def m_riff_chunk(rng, data, seeds):
    hits = find_tags(data, RIFF_CHUNKS, 0)
    if not hits:
        return None
    at, tag = rng.choice(hits)
    field = at + 4 + (0 if rng.random() < 0.6 else 4 * rng.randrange(1, 8))
    if field + 4 > len(data):
        return None
    old = struct.unpack("<I", data[field:field + 4])[0]
    new = corrupt_value(rng, old)
    data[field:field + 4] = struct.pack("<I", new)
    return f"RIFF '{tag.decode('latin-1')}' at {at}: field +{field - at - 4} {old:#x} -> {new:#x}"


def m_jpeg_marker(rng, data, seeds):
    hits = find_tags(data, JPEG_MARKERS, 0)
    if not hits:
        return None
    at, tag = rng.choice(hits)
    field = at + 2 + 2 * rng.randrange(4)  # the length, then the first fields (precision, height, width)
    if field + 2 > len(data):
        return None
    old = struct.unpack(">H", data[field:field + 2])[0]
    new = rng.choice([0, 1, 2, 0x7FFF, 0xFDE8, 0xFFFF, (old + rng.choice([-2, -1, 1, 2])) & 0xFFFF])
    data[field:field + 2] = struct.pack(">H", new)
    return f"JPEG marker {tag.hex()} at {at}: field +{field - at - 2} {old:#x} -> {new:#x}"


def m_png_chunk(rng, data, seeds):
    hits = find_tags(data, PNG_CHUNKS, 8)
    if not hits:
        return None
    at, tag = rng.choice(hits)
    field = at - 4 if rng.random() < 0.4 else at + 4 + 4 * rng.randrange(3)  # length, or width/height/...
    if field < 0 or field + 4 > len(data):
        return None
    old = struct.unpack(">I", data[field:field + 4])[0]
    new = corrupt_value(rng, old)
    data[field:field + 4] = struct.pack(">I", new)
    return f"PNG '{tag.decode('latin-1')}' at {at}: field +{field - at} {old:#x} -> {new:#x}"


def m_ebml_size(rng, data, seeds):
    hits = find_tags(data, EBML_IDS, 0)
    if not hits:
        return None
    at, tag = rng.choice(hits)
    field = at + len(tag)
    if field >= len(data):
        return None
    old = data[field]
    new = rng.choice([0x80, 0xFF, 0x01, 0x08, 0x10, 0x40, rng.randrange(256)])
    data[field] = new
    if new == 0x01 and field + 8 <= len(data):  # 8-byte size: make it huge
        data[field + 1:field + 8] = b"\xff" * 7
    return f"EBML {tag.hex()} at {at}: size byte {old:#x} -> {new:#x}"


MUTATIONS = [  # (function, weight)
    (m_bitflip, 12), (m_bytes, 8), (m_overwrite, 8), (m_truncate, 8), (m_duplicate, 5),
    (m_delete, 5), (m_splice, 4), (m_zero_head, 3), (m_header_bytes, 6), (m_int, 6),
    (m_mp4_atom, 18), (m_riff_chunk, 5), (m_ebml_size, 5), (m_jpeg_marker, 5), (m_png_chunk, 4),
]
IMAGE_SIZES = ["100x100", "320x240", "250x250", "1x1", "max", "4000x4000", "33x999"]
IMAGE_FORMATS = ["jpg", "jpg", "webp", "png", "avif"]


def plan(seed, iteration, seeds, commands=COMMANDS):
    """What iteration `iteration` does; depends only on the fuzz seed and the iteration number."""
    rng = random.Random(f"reel-fuzz:{seed}:{iteration}")
    name, original = rng.choice(seeds)
    data = bytearray(original)
    steps = []
    count = 0 if rng.random() < 0.03 else rng.choices([1, 2, 3, 4, 6], weights=[40, 25, 15, 12, 8])[0]
    functions, weights = zip(*MUTATIONS)
    attempts = 0
    while len(steps) < count and attempts < 50:
        attempts += 1
        function = rng.choices(functions, weights=weights)[0]
        description = function(rng, data, seeds)
        if description:
            steps.append(description)
    if name in PHOTO_SEEDS:
        # What the photo is asked for goes where a clip's preset goes: the command and its options.
        command = rng.choice([c for c in ("image", "probe") if c in commands])
        if command == "probe":
            return {"seed_clip": name, "ext": os.path.splitext(name)[1], "data": bytes(data), "mutations": steps,
                    "command": "probe", "preset": "probe", "options": ["--json"], "type": "json"}
        size, mode = rng.choice(IMAGE_SIZES), rng.choice(["fit", "fill"])
        options = ["--size", size, "--content-mode", mode, "--json"]
        if rng.random() < 0.15:
            options += ["--crop", rng.choice(["0,0,0.5,0.5", "0.25,0.25,0.5,0.5", "0.9,0.9,0.1,0.1"])]
        if rng.random() < 0.3:
            options += ["--metadata", rng.choice(["keep", "sharing", "strip"])]
        return {"seed_clip": name, "ext": os.path.splitext(name)[1], "data": bytes(data), "mutations": steps,
                "command": "image", "preset": "image " + " ".join(options[:4]), "options": options,
                "type": rng.choice(IMAGE_FORMATS)}
    preset = rng.choice(PRESETS)
    output_type = "m4a" if preset == "AppleM4A" else rng.choice(VIDEO_TYPES)
    return {"seed_clip": name, "ext": os.path.splitext(name)[1], "data": bytes(data), "mutations": steps,
            "command": "export", "preset": preset, "options": ["--preset", preset, "--json"], "type": output_type}


# ---------------------------------------------------------------------------------------------
# Running one export


def limits(memory_mb):
    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if memory_mb > 0:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 30, 2 << 30))
    return apply


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_one(options, iteration, item):
    ext = item["ext"]
    input_path = os.path.join(WORK, f"{iteration}{ext}")
    out_dir = os.path.join(WORK, f"out-{iteration}")
    os.makedirs(out_dir, exist_ok=True)
    with open(input_path, "wb") as f:
        f.write(item["data"])
    output = os.path.join(out_dir, f"out.{item['type']}")
    export = [options.reel, item["command"], os.path.relpath(input_path, ROOT)] + item["options"]
    if item["command"] != "probe":
        export += ["-o", os.path.relpath(output, ROOT)]
    command = ["timeout", "-s", "KILL", str(options.timeout)] + export
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                              preexec_fn=limits(options.memory_mb), timeout=options.timeout + 60)
        rc, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:  # timeout(1) itself did not return; should not happen
        rc, stdout, stderr = -signal.SIGKILL, expired.stdout or b"", expired.stderr or b""
    elapsed = time.monotonic() - started
    stdout = stdout.decode("utf-8", "replace")
    stderr = stderr.decode("utf-8", "replace")
    err_lines = [line for line in stderr.splitlines()
                 if line.strip() and not line.startswith("timeout: the monitored command dumped core")]
    left = sorted(os.listdir(out_dir))

    kinds, status, note = [], f"exit {rc}", ""
    # timeout(1) with -s KILL kills its own process group, so a timed-out run ends with SIGKILL; a
    # signalled child makes timeout(1) die of the same signal (or exit 128+n when it cannot).
    # reel itself exits 130 for a cancelled export, with its `reel: error:` line: not a signal.
    reel_exited = any(line.startswith("reel: error: ") for line in err_lines)
    signalled = -rc if rc < 0 else (rc - 128 if rc > 128 and rc != 255 and not reel_exited else 0)
    if signalled == signal.SIGKILL and elapsed >= options.timeout - 0.5:
        primary, status = "hang", f"killed after the {options.timeout} s timeout"
    elif signalled:
        primary, status = "crash", f"exit {rc}: {signal_name(signalled)}"
        if signalled == signal.SIGKILL:
            note = "SIGKILL before the timeout: probably the memory limit or the OOM killer"
        elif signalled == signal.SIGXFSZ:
            note = "SIGXFSZ: the output grew past the 2 GiB file-size limit (runaway export)"
    elif rc == 0 and item["command"] == "probe":
        primary = "success"
        try:
            json.loads(stdout)
        except ValueError:
            primary, note = "badoutput", "stdout is not one JSON report"
        if left:
            kinds.append("leftover")
    elif rc == 0 and item["command"] == "image":
        primary = "success"
        problems = []
        if not os.path.isfile(output):
            problems.append("the output file does not exist")
        else:
            header = subprocess.run(["vipsheader", output], stdin=subprocess.DEVNULL, capture_output=True,
                                    text=True, timeout=120)
            if header.returncode != 0:
                problems.append(f"vipsheader cannot read the output: {header.stderr.strip()[:300]}")
        try:
            if json.loads(stdout.strip().splitlines()[-1]).get("file") is None:
                problems.append("the JSON line names no file")
        except (ValueError, IndexError):
            problems.append("stdout does not end with a JSON line")
        if problems:
            primary, note = "badoutput", "; ".join(problems)
        if left != [os.path.basename(output)] and os.path.isfile(output):
            kinds.append("leftover")
    elif rc == 0:
        primary = "success"
        problems = []
        if not os.path.isfile(output):
            problems.append("the output file does not exist")
        else:
            try:
                probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type",
                                        "-of", "json", output], stdin=subprocess.DEVNULL, capture_output=True,
                                       text=True, timeout=120)
                probe_rc, probe_err = probe.returncode, probe.stderr.strip()
                streams = json.loads(probe.stdout or "{}").get("streams", [])
            except subprocess.TimeoutExpired:
                probe_rc, probe_err, streams = "timeout", "ffprobe did not finish in 120 s", []
            except ValueError:
                streams = []
            if probe_rc != 0 or not streams:
                problems.append(f"ffprobe cannot read the output (exit {probe_rc}, "
                                f"{len(streams)} streams){': ' + probe_err[:500] if probe_err else ''}")
        last = stdout.strip().splitlines()[-1:] or [""]
        try:
            completed = json.loads(last[0]).get("event") == "completed"
        except ValueError:
            completed = False
        if not completed:
            problems.append("stdout does not end with a {\"event\":\"completed\"} line")
        if problems:
            primary, note = "badoutput", "; ".join(problems)
        if left != [os.path.basename(output)] and os.path.isfile(output):
            kinds.append("leftover")
        elif left and not os.path.isfile(output):
            kinds.append("leftover")
    else:
        clean = len(err_lines) == 1 and err_lines[0].startswith("reel: error: ")
        primary = "clean" if clean else "messy"
        if left:
            kinds.append("leftover")
    if primary in DEFECTS:
        kinds.insert(0, primary)

    result = {"iteration": iteration, "class": primary, "kinds": kinds, "rc": rc, "status": status,
              "note": note, "elapsed": elapsed, "stderr": stderr, "stdout": stdout, "left": left,
              "command": command, "export": export, "seed_clip": item["seed_clip"],
              "mutations": item["mutations"], "preset": item["preset"], "type": item["type"],
              "options": item["options"],
              "first_error": err_lines[0] if err_lines else ""}
    for kind in kinds:
        keep_finding(options, result, kind, input_path, ext)
    os.remove(input_path)
    shutil.rmtree(out_dir, ignore_errors=True)
    return result


def keep_finding(options, result, kind, input_path, ext):
    iteration = result["iteration"]
    kept = os.path.join(FINDINGS, f"{kind}-{iteration}{ext}")
    shutil.copyfile(input_path, kept)
    reproduce = [options.reel, result["export"][1], os.path.relpath(kept, ROOT)] + result["options"] \
        + ([] if result["export"][1] == "probe" else ["-o", f"/tmp/reel-repro/out.{result['type']}"])
    result.setdefault("findings", []).append(os.path.relpath(kept, ROOT))
    result["reproduce"] = "mkdir -p /tmp/reel-repro && rm -rf /tmp/reel-repro/* /tmp/reel-repro/.[!.]* && " \
        + shlex.join(reproduce)
    stdout_tail = "\n".join(result["stdout"].splitlines()[-15:])
    text = [
        f"kind:        {LABELS[kind]}" + (f" (run classified as {LABELS[result['class']]})"
                                          if kind != result["class"] else ""),
        f"status:      {result['status']}" + (f" ({result['note']})" if result["note"] else ""),
        f"elapsed:     {result['elapsed']:.2f} s",
        f"iteration:   {iteration} of a run with --seed {options.seed}",
        f"seed clip:   {result['seed_clip']}",
        "mutations:   " + ("; ".join(result["mutations"]) or "none (the seed as made)"),
        f"preset:      {result['preset']} -> .{result['type']}",
        f"output dir after the run: {result['left'] or 'empty'}",
        "",
        "command (run from the package root; the input is now the kept copy below):",
        "  (cd " + shlex.quote(ROOT) + " && " + shlex.join(result["command"]) + ")",
        "reproduce:",
        "  (cd " + shlex.quote(ROOT) + " && " + result["reproduce"] + ")",
        f"kept input:  {os.path.relpath(kept, ROOT)}",
        "",
        "--- stderr ---",
        result["stderr"].rstrip() or "(empty)",
        "--- stdout (last 15 lines) ---",
        stdout_tail or "(empty)",
        "",
    ]
    with open(os.path.splitext(kept)[0] + ".txt", "w") as f:
        f.write("\n".join(text))


# ---------------------------------------------------------------------------------------------


def counts_line(counts):
    return ", ".join(f"{LABELS[k]} {counts[k]}" for k in CLASSES + ["leftover"])


def main():
    parser = argparse.ArgumentParser(prog="Scripts/fuzz",
                                     description="Fuzz `reel export`, `reel image` and `reel probe` with mutated seeds.")
    parser.add_argument("--reel", required=True, help=argparse.SUPPRESS)
    parser.add_argument("--iterations", type=int, help="exports to run (default 200 unless --minutes is given)")
    parser.add_argument("--minutes", type=float, help="stop after this many minutes")
    parser.add_argument("--seed", type=int, help="RNG seed; the same seed repeats the same inputs")
    parser.add_argument("--jobs", type=int, default=2, help="parallel exports (default 2)")
    parser.add_argument("--timeout", type=int, default=60, help="seconds before an export counts as a hang (default 60)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space limit per export in MiB, 0 for none (default 4096)")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="which commands to fuzz, comma-separated: export (clips), image and probe (photos); "
                             "default all")
    options = parser.parse_args()
    options.commands = [c.strip() for c in options.commands.split(",") if c.strip()]
    if not options.commands or any(c not in COMMANDS for c in options.commands):
        parser.error(f"--commands takes {', '.join(COMMANDS)}")
    if options.iterations is None and options.minutes is None:
        options.iterations = 200
    if options.seed is None:
        options.seed = random.SystemRandom().randrange(1_000_000)
    if options.jobs < 1 or options.timeout < 1 or (options.iterations is not None and options.iterations < 1):
        parser.error("--jobs, --timeout and --iterations must be positive")

    make_seeds()
    seeds = load_seeds(options.commands)
    for folder in (WORK, FINDINGS):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)

    limit = f"{options.iterations} iterations" if options.iterations else ""
    if options.minutes is not None:
        limit += (" or " if limit else "") + f"{options.minutes:g} minutes"
    print(f"fuzz: {limit}, --seed {options.seed}, {options.jobs} jobs, {options.timeout} s timeout, "
          f"{len(seeds)} seeds, commands {','.join(options.commands)}, reel at {options.reel}", flush=True)

    started = time.monotonic()
    deadline = started + options.minutes * 60 if options.minutes is not None else None
    counts = {k: 0 for k in CLASSES + ["leftover"]}
    results = []
    next_iteration, done = 1, 0
    interrupted = False

    def may_start():
        if options.iterations is not None and next_iteration > options.iterations:
            return False
        return deadline is None or time.monotonic() < deadline

    with futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        running = set()
        try:
            while True:
                while len(running) < options.jobs and may_start():
                    item = plan(options.seed, next_iteration, seeds, options.commands)
                    running.add(pool.submit(run_one, options, next_iteration, item))
                    next_iteration += 1
                if not running:
                    break
                finished, running = futures.wait(running, return_when=futures.FIRST_COMPLETED)
                for future in finished:
                    result = future.result()
                    results.append(result)
                    counts[result["class"]] += 1
                    if "leftover" in result["kinds"]:
                        counts["leftover"] += 1
                    done += 1
                    for kind in result["kinds"]:
                        print(f"fuzz: #{result['iteration']} {LABELS[kind]}: {result['status']}"
                              f" [{result['seed_clip']} -> {result['preset']}] "
                              f"{result['first_error'][:160]}", flush=True)
                    if done % 25 == 0:
                        minutes = (time.monotonic() - started) / 60
                        print(f"fuzz: {done} done in {minutes:.1f} min: {counts_line(counts)}", flush=True)
        except KeyboardInterrupt:
            interrupted = True
            print("fuzz: interrupted; waiting for the running exports", flush=True)
            for future in running:
                future.cancel()
            for future in running:
                try:
                    result = future.result()
                except (futures.CancelledError, Exception):
                    continue
                results.append(result)
                counts[result["class"]] += 1
                counts["leftover"] += "leftover" in result["kinds"]
                done += 1

    minutes = (time.monotonic() - started) / 60
    results.sort(key=lambda r: r["iteration"])
    findings = [(kind, r) for r in results for kind in r["kinds"]]
    print()
    print(f"fuzz summary (--seed {options.seed}){' — interrupted' if interrupted else ''}")
    print(f"  iterations      {done}")
    print(f"  minutes         {minutes:.1f}")
    for key in CLASSES + ["leftover"]:
        if key == "badoutput" and counts[key] == 0:
            continue
        print(f"  {LABELS[key]:15} {counts[key]}" + ("   (also counted in its class above)" if key == "leftover" else ""))
    errors = {}
    for r in results:
        if r["class"] == "clean":
            message = r["first_error"][len("reel: error: "):].replace(WORK + os.sep, "")
            message = re.sub(r"\b(out-)?\d+\.\w+", "<file>", message)
            errors[message[:90]] = errors.get(message[:90], 0) + 1
    if errors:
        print("  clean failures, most common messages:")
        for message, n in sorted(errors.items(), key=lambda e: -e[1])[:8]:
            print(f"    {n:4}  {message}")
    if findings:
        print(f"  findings ({len(findings)}), inputs and details in {os.path.relpath(FINDINGS, ROOT)}/:")
        for kind, r in findings:
            detail = r["note"] or r["first_error"] or (f"left {r['left']}" if kind == "leftover" else "")
            if kind == "leftover":
                detail = f"left {r['left']}"
            print(f"    {kind}-{r['iteration']}{os.path.splitext(r['seed_clip'])[1]}  {r['status']}  "
                  f"[{r['seed_clip']} -> {r['preset']} .{r['type']}]  {detail[:200]}")
    else:
        print("  findings        none")

    with open(os.path.join(OUT, "summary.json"), "w") as f:
        json.dump({"seed": options.seed, "iterations": done, "minutes": round(minutes, 2), "counts": counts,
                   "interrupted": interrupted,
                   "findings": [{"kind": kind, "iteration": r["iteration"], "seed_clip": r["seed_clip"],
                                 "preset": r["preset"], "type": r["type"], "status": r["status"],
                                 "mutations": r["mutations"], "stderr": r["stderr"][-2000:],
                                 "left": r["left"], "reproduce": r.get("reproduce")}
                                for kind, r in findings]}, f, indent=2)
    shutil.rmtree(WORK, ignore_errors=True)
    if interrupted:
        return 130
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
