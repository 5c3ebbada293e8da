#!/usr/bin/env python3
"""Colour difference that sees hue: mean CIEDE2000 of a video against the SDR original it should match.

Usage: Scripts/deltae.py EXPORT ORIGINAL [--hdr HDR] [--times 1.5,4.0,6.5] [--json]

Takes one frame of each file at each of --times seconds (default 1.5, 4.0 and 6.5), scales both to
640x360 (area) as ffmpeg decodes them (rgb24, each file's own colour tags), and prints the mean over
the frames of the mean and of the 95th percentile of CIEDE2000 (sRGB decoding, CIE L*a*b* with a D65
white). With --hdr, the HDR file EXPORT was made from: the same figures for zimg's exact inverse of
it (ffmpeg's zscale from its transfer, primaries and matrix back to BT.709 at npl=203, HLG with
agamma=0: BT.2100's OOTF on luminance, which is how the test and benchmark clips are made), and the
excess, EXPORT's mean minus zimg's: what the conversion loses beyond the HDR encode's own losses.
Reel's target is an excess of at most 1.0.

The maths is a port of the deltae.py the colour issue (#24) was measured with, cross-checked against
it once: bit-identical L*a*b* and CIEDE2000 on 200,000 random colour pairs, identical frames, and the
same printed figures on Reel's HLG and PQ exports of the benchmark's Mandelbrot clip. (Its hue mean
adds 360 where some write -360: the same angle, so the same result.) Needs python3-numpy (Scripts/
setup installs it) and ffmpeg/ffprobe.
"""
import argparse
import json
import subprocess
import sys

import numpy as np

WIDTH, HEIGHT = 640, 360


def frame(path, seconds, filters=""):
    """One frame at `seconds` as RGB in [0, 1], WIDTH x HEIGHT."""
    chain = (filters + "," if filters else "") + f"scale={WIDTH}:{HEIGHT}:flags=area,format=rgb24"
    out = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-ss", str(seconds), "-i", path, "-frames:v", "1", "-vf", chain,
         "-f", "rawvideo", "-"], capture_output=True)
    size = WIDTH * HEIGHT * 3
    if out.returncode != 0 or len(out.stdout) < size:
        sys.exit(f"deltae: no frame at {seconds} s in {path}: {out.stderr.decode(errors='replace').strip()}")
    return np.frombuffer(out.stdout[:size], np.uint8).reshape(HEIGHT, WIDTH, 3).astype(np.float64) / 255


def lab(rgb):
    """sRGB (0...1) to CIE L*a*b* (D65)."""
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = linear @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def ciede2000(lab1, lab2):
    """CIEDE2000 (kL = kC = kH = 1) of each pair of L*a*b* colours."""
    l1, a1, b1 = lab1[..., 0], lab1[..., 1], lab1[..., 2]
    l2, a2, b2 = lab2[..., 0], lab2[..., 1], lab2[..., 2]
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    dlp, dcp = l2 - l1, c2p - c1p
    dh = h2p - h1p
    dh = np.where(dh > 180, dh - 360, dh)
    dh = np.where(dh < -180, dh + 360, dh)
    dh = np.where(c1p * c2p == 0, 0, dh)
    dhp = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    lbp, cbp = (l1 + l2) / 2, (c1p + c2p) / 2
    hs = h1p + h2p
    # Where the hues are more than 180 degrees apart the mean is taken the short way round.
    hbp = np.where(np.abs(h1p - h2p) > 180, (hs + 360) / 2, hs / 2)
    hbp = np.where(c1p * c2p == 0, hs, hbp)
    t = (1 - 0.17 * np.cos(np.radians(hbp - 30)) + 0.24 * np.cos(np.radians(2 * hbp))
         + 0.32 * np.cos(np.radians(3 * hbp + 6)) - 0.20 * np.cos(np.radians(4 * hbp - 63)))
    dtheta = 30 * np.exp(-(((hbp - 275) / 25) ** 2))
    rc = 2 * np.sqrt(cbp ** 7 / (cbp ** 7 + 25 ** 7))
    sl = 1 + 0.015 * (lbp - 50) ** 2 / np.sqrt(20 + (lbp - 50) ** 2)
    sc = 1 + 0.045 * cbp
    sh = 1 + 0.015 * cbp * t
    rt = -np.sin(np.radians(2 * dtheta)) * rc
    return np.sqrt((dlp / sl) ** 2 + (dcp / sc) ** 2 + (dhp / sh) ** 2 + rt * (dcp / sc) * (dhp / sh))


def score(path, original, times, filters=""):
    """(mean, 95th percentile) of CIEDE2000, each averaged over the frames."""
    means, p95 = [], []
    for seconds in times:
        d = ciede2000(lab(frame(path, seconds, filters)), lab(frame(original, seconds)))
        means.append(d.mean())
        p95.append(np.percentile(d, 95))
    return float(np.mean(means)), float(np.mean(p95))


def zimg_inverse(hdr):
    """zscale's exact conversion of `hdr` (HLG or PQ) back to BT.709 with reference white at 203 cd/m2."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
         "stream=color_transfer,color_primaries,color_space", "-of", "json", hdr], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"deltae: cannot read {hdr}: {out.stderr.strip()}")
    streams = json.loads(out.stdout).get("streams") or [{}]
    stream = streams[0]
    transfer = stream.get("color_transfer")
    if transfer not in ("arib-std-b67", "smpte2084"):
        sys.exit(f"deltae: {hdr} is not HLG or PQ (transfer {transfer})")
    primaries = stream.get("color_primaries") or "bt2020"
    matrix = stream.get("color_space") or "bt2020nc"
    return (f"zscale=tin={transfer}:min={matrix}:pin={primaries}:rin=tv:t=bt709:m=bt709:p=bt709:r=tv:npl=203"
            + (":agamma=0" if transfer == "arib-std-b67" else ""))


def main(argv):
    parser = argparse.ArgumentParser(prog="deltae.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export")
    parser.add_argument("original")
    parser.add_argument("--hdr", help="the HDR file EXPORT was made from: also score zimg's exact inverse of it")
    parser.add_argument("--times", default="1.5,4.0,6.5", help="seconds of the frames compared (comma-separated)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    times = [float(t) for t in args.times.split(",") if t]
    mean, p95 = score(args.export, args.original, times)
    result = {"mean": round(mean, 4), "p95": round(p95, 4)}
    if args.hdr:
        zmean, zp95 = score(args.hdr, args.original, times, zimg_inverse(args.hdr))
        result.update({"zimg_mean": round(zmean, 4), "zimg_p95": round(zp95, 4), "excess": round(mean - zmean, 4)})
    if args.json:
        print(json.dumps(result))
    else:
        line = f"meanDE2000 {mean:.2f} p95 {p95:.2f}"
        if args.hdr:
            line += f" zimg {result['zimg_mean']:.2f} p95 {result['zimg_p95']:.2f} excess {result['excess']:+.2f}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
