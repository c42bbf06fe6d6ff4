#!/usr/bin/env python3
"""storm_plot.py OUT LIMIT_MIB PNG: the MDS resident set over a storm_bench.sh run.

Reads OUT/SIDE.samples.tsv (t_s, rss_kib, then Weft's gauges) and
OUT/SIDE.phases ("t_s name" per phase) for SIDE weft and ceph, whichever
exist. Top: each MDS's RSS over time, with the limit and 1.5x the limit as
lines and the phases marked. Bottom (Weft only): its cache estimate and the
caps and directory leases alive.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on the benchmark machine
import matplotlib.pyplot as plt  # noqa: E402


def read_samples(path):
    rows = []
    with open(path) as f:
        header = f.readline().split()
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            row = {}
            for name, value in zip(header, parts):
                try:
                    row[name] = float(value)
                except ValueError:
                    pass
            rows.append(row)
    return rows


def read_phases(path):
    phases = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    phases.append((float(parts[0]), parts[1]))
    return phases


def series(rows, key, scale=1.0):
    xs = [r["t_s"] for r in rows if key in r and "t_s" in r]
    ys = [r[key] * scale for r in rows if key in r and "t_s" in r]
    return xs, ys


def main():
    out, limit, png = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 8), sharex=False)
    colors = {"weft": "tab:blue", "ceph": "tab:red"}
    for side in ("weft", "ceph"):
        path = os.path.join(out, side + ".samples.tsv")
        if not os.path.exists(path):
            continue
        rows = read_samples(path)
        xs, ys = series(rows, "rss_kib", 1 / 1024)
        top.plot(xs, ys, label=side + " MDS RSS", color=colors[side])
        for t, name in read_phases(os.path.join(out, side + ".phases")):
            top.axvline(t, color=colors[side], alpha=0.25, linestyle=":")
            top.annotate(side + " " + name, (t, limit * 0.05), rotation=90, fontsize=7,
                         color=colors[side])
        if side == "weft":
            xs, ys = series(rows, "weft_mds_cache_bytes", 1 / 1048576)
            bottom.plot(xs, ys, label="cache estimate, MiB", color="tab:blue")
            ax2 = bottom.twinx()
            for key, color in (("weft_mds_attr_caps", "tab:green"),
                               ("weft_mds_dir_leases", "tab:orange")):
                xs, ys = series(rows, key)
                ax2.plot(xs, ys, label=key[9:] + " alive", color=color, alpha=0.7)
            ax2.set_ylabel("caps / leases alive")
            ax2.legend(loc="upper right", fontsize=8)
    top.axhline(limit, color="gray", linestyle="--", label="mds_cache_memory_limit")
    top.axhline(1.5 * limit, color="black", linestyle="--", label="1.5 x limit (target)")
    top.set_ylabel("MiB")
    top.set_xlabel("seconds since the side started")
    top.set_title("MDS resident set during the metadata storm (bench/storm_bench.sh)")
    top.legend(loc="upper left", fontsize=8)
    bottom.set_ylabel("MiB")
    bottom.set_xlabel("seconds since Weft started")
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    main()
