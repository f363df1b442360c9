#!/usr/bin/env python3
"""Writes the Ignition configs the MCS stand-in serves: for each pool, one
rendering per spec family (spec2/POOL: 2.2.0, spec3/POOL: 3.0.0, which every Ignition 3.x reads), as the MCS
picks by the Accept header. Each is a valid config of about SIZE bytes (a
file whose data: URL pads it), so proxies relay realistic bodies.

usage: mcs-data.py DIR [SIZE] [POOL...]"""
import json, os, sys

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
PERIOD = "".join(ALPHABET[(i * 7919 + i // 61) % 62] for i in range(61 * 62))

def config(version, pool, size):
    files = [{"path": "/etc/skewgate-demo-pool", "mode": 420,
              "contents": {"source": "data:," + pool}}]
    if version.startswith("2."):
        for f in files:
            f["filesystem"] = "root"
    doc = {"ignition": {"version": version}, "storage": {"files": files}}
    base = len(json.dumps(doc, separators=(",", ":")))
    pad = max(0, size - base - 120)
    if pad:
        # Deterministic, compressible-resistant-enough filler of URL-safe bytes:
        # alphabet[(i * 7919 + i // 61) % 62] for each i. That repeats every
        # 61 * 62 bytes (7919 * 3782 and 3782 // 61 are both multiples of 62),
        # so one period is computed and repeated: the same bytes, without a
        # Python loop over each of them (16 MiB took 2.5 s, and mcs_start
        # writes six).
        filler = (PERIOD * (pad // len(PERIOD) + 1))[:pad]
        pad_file = {"path": "/var/lib/skewgate-demo/padding", "mode": 420,
                    "contents": {"source": "data:," + filler}}
        if version.startswith("2."):
            pad_file["filesystem"] = "root"
        files.append(pad_file)
    return json.dumps(doc, separators=(",", ":"))

def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 300 * 1024
    pools = sys.argv[3:] or ["worker", "master"]
    for spec, version in (("spec2", "2.2.0"), ("spec3", "3.0.0")):
        os.makedirs(os.path.join(out, spec), exist_ok=True)
        for pool in pools:
            with open(os.path.join(out, spec, pool), "w") as f:
                f.write(config(version, pool, size))

main()
