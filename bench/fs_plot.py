#!/usr/bin/env python3
"""fs_plot.py CSV PNG [--title T]: the fs_bench.sh table as a bar chart.

One horizontal bar per metric: Weft's figure against Ceph's, oriented so that
above 1x is always Weft better (weft/ceph for rates, ceph/weft for times and
p99 latencies), on a log axis. A line at 1x (parity) and one at the 0.8x
floor; each metric's own target (1.5x, 2x, 1x, 0.8x) as a tick across its
bar. Bars are green where the target is met, orange where it is missed,
red below the floor; a metric that failed on Weft is marked FAILED. The
client RSS figures (an absolute target) go in the footer.

Reads the CSV fs_bench.sh writes: metric, unit, better, ceph, weft,
weft_vs_ceph, target, verdict, ceph_rounds, weft_rounds.
"""
import argparse
import csv
import math
import textwrap

import matplotlib

matplotlib.use("Agg")  # no display on the benchmark machine
import matplotlib.pyplot as plt  # noqa: E402

FLOOR = 0.8


def number(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default="Weft vs CephFS, fsbench.sh")
    args = ap.parse_args()

    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    bars = [r for r in rows if number(r["target"]) is not None]
    rss = {r["metric"]: r for r in rows}.get("client_rss_MiB")
    if not bars:
        raise SystemExit("fs_plot.py: no metric with a target in " + args.csv)

    ratios = [number(r["weft_vs_ceph"]) for r in bars]
    known = [x for x in ratios if x] + [number(r["target"]) for r in bars] + [FLOOR, 1.0]
    lo = 2 ** math.floor(math.log2(min(known)) - 0.5)
    hi = 2 ** math.ceil(math.log2(max(known)) + 0.5)

    fig, ax = plt.subplots(figsize=(9, 0.42 * len(bars) + 2.2))
    ys = list(range(len(bars)))[::-1]  # first metric on top
    for y, r, x in zip(ys, bars, ratios):
        target = number(r["target"])
        if x is None:
            if r["weft"] == "FAILED":
                text = "FAILED on Weft" + (" and Ceph" if r["ceph"] == "FAILED" else "")
            else:
                text = "n/a" + (" (failed on Ceph)" if r["ceph"] == "FAILED" else "")
            ax.text(1.0, y, "  " + text, va="center", ha="left",
                    color="firebrick" if text.startswith("FAILED") else "grey", fontweight="bold")
        else:
            colour = "seagreen" if x >= target else ("darkorange" if x >= FLOOR else "firebrick")
            # Bars start at 1x: to the right Weft is better, to the left worse.
            ax.barh(y, x - 1.0, left=1.0, height=0.6, color=colour)
            ax.text(x * (1.04 if x >= 1 else 0.96), y, f"{x:.2f}x", va="center",
                    ha="left" if x >= 1 else "right", fontsize=8)
        ax.plot([target, target], [y - 0.4, y + 0.4], color="black", lw=2)
    ax.axvline(1.0, color="black", lw=1)
    ax.axvline(FLOOR, color="firebrick", lw=1, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo, hi)
    ticks = [t for t in (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 1.5, 2, 4, 8, 16, 32, 64)
             if lo <= t <= hi]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"1/{round(1 / t)}x" if t < 1 else f"{t:g}x" for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r['metric']} ({r['unit']}{', inverted' if r['better'] == 'lower' else ''})"
                        for r in bars], fontsize=9)
    ax.set_ylim(-0.7, len(bars) - 0.3)
    ax.set_xlabel("Weft vs Ceph (> 1x: Weft better; rates weft/ceph, times and p99 ceph/weft)")
    ax.set_title("\n".join(textwrap.wrap(args.title, 90)), fontsize=10)  # long titles wrap
    ax.grid(axis="x", which="major", alpha=0.3)

    footer = "black tick: the metric's target (issue 5); dashed: 0.8x floor"
    if rss:
        footer += (f"\nclient peak RSS: Weft {rss['weft'] or '-'} MiB (target <= 1024 MiB,"
                   f" {rss['verdict'] or 'n/a'}), ceph-fuse {rss['ceph'] or '-'} MiB")
    fig.text(0.01, 0.01, footer, fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
