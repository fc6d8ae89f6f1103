"""Doerfler & Brightwell's figures: overhead and application availability against message size."""
import math

import logpb_plots as lp  # analysis/logpb_plots.py, which loads this file


def figures(doc, kind, path_for):
    if kind != "availability":
        return []
    draw_availability(doc, path_for("availability"))
    return [("Overhead and availability (Doerfler & Brightwell Figs. 3-6)", path_for("availability"))]


def draw_availability(doc, out):
    """Doerfler & Brightwell Figures 3-6: overhead and availability against message size."""
    fig, (a, b) = lp.plt.subplots(1, 2, figsize=(11, 4.5))
    for side in ("send", "recv"):
        xs = [e["bytes"] for e in doc["per_size"]]
        ov = [(e[side]["overhead"]["value_ns"] or math.nan) / 1e3 for e in doc["per_size"]]
        av = [e[side]["availability"] if e[side]["availability"] is not None else math.nan for e in doc["per_size"]]
        a.plot(xs, ov, marker="o", label=side)
        b.plot(xs, [100 * x for x in av], marker="o", label=side)
    for ax, yl in ((a, "overhead (µs)"), (b, "application availability (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    b.set_ylim(0, 105)
    fig.suptitle("Overhead and availability: " + lp.title_of(doc), fontsize=9)
    lp.save(fig, out)
