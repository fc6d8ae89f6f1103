"""The software ladder in the style of Bell et al. Figure 3: one bar per rung, o_s and o_r stacked and the rest
of the end-to-end latency (EEL = RTT/2) on top, so the bar's height is the rung's EEL and the steps between
bars are what each layer adds. Drawn from scripts/ladder's ladder.json (schema logpbench-ladder/1).

usage: python3 scripts/lib/ladder_plot.py ladder.json OUT.png|OUT.svg   (scripts/plot ladder.json OUT does the same)

As in analysis/logpb_plots.py's comparison figure, a part a rung could not observe is left out of its bar
and named under it, never drawn as 0; where o_s + o_r exceed the EEL (Bell et al. saw it for MPI on the T3E
and Myrinet: the overheads come from other tests than the latency), that is said and nothing negative drawn.
A rung that did not run keeps its place on the axis with the reason, so a missing layer is never mistaken
for a free one."""
import json
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _us(f):
    if not isinstance(f, dict) or f.get("value") is None:
        return None, 0
    return f["value"] / 1e3, (f.get("ci95") or 0) / 1e3


def draw(doc, out):
    rows = doc.get("figure", [])
    fig, a = plt.subplots(figsize=(max(6, 1.8 * len(rows) + 2), 5.2))
    seen = set()

    def once(label):
        if label in seen:
            return None
        seen.add(label)
        return label

    # The axis stops at twice the largest EEL: one run's stall (a UCT send that waited 14 µs for resources in
    # one of three runs, say) would otherwise flatten every other bar. What is cut off is written on the bar.
    eels = [_us(r.get("rtt"))[0] / 2 for r in rows if _us(r.get("rtt"))[0] is not None]
    top = 2 * max(eels) if eels else None
    prev_eel = None
    for i, r in enumerate(rows):
        os_, os_e = _us(r.get("o_s"))
        or_, or_e = _us(r.get("o_r"))
        rtt, rtt_e = _us(r.get("rtt"))
        if r.get("missing"):
            a.annotate("\n".join(textwrap.wrap(f"did not run: {r['missing']}", 26)[:10]), (i, 0),
                       textcoords="offset points", xytext=(0, 8), ha="center", fontsize=6, color="C3")
            continue
        bottom, notes = 0.0, []
        for v, e, label, color in ((os_, os_e, "o_s", "C0"), (or_, or_e, "o_r", "C1")):
            if v is None:
                notes.append(f"{label} n/a")
                continue
            a.bar(i, v, 0.6, bottom=bottom, color=color, label=once(label))
            a.errorbar(i + (0.12 if label == "o_r" else -0.12), bottom + v, yerr=e, color="k", capsize=2, lw=0.8)
            bottom += v
        if rtt is None:
            notes.append("EEL n/a")
        else:
            eel = rtt / 2
            rest = eel - bottom
            if rest >= 0:
                a.bar(i, rest, 0.6, bottom=bottom, color="C2", alpha=0.5 if os_ is not None and or_ is not None else 0.25,
                      hatch=None if os_ is not None and or_ is not None else "//", label=once("rest of EEL (RTT/2)"))
            else:
                notes.append(f"o_s + o_r exceed EEL by {-rest:.3g} µs")
            a.errorbar(i, eel, yerr=rtt_e / 2, fmt="_", color="k", ms=18, capsize=3)
            text = f"{eel:.3g}"
            if prev_eel is not None:
                text += f"\n({eel - prev_eel:+.3g})"
            a.annotate(text, (i, eel), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=7)
            prev_eel = eel
        high = max(os_ or 0, 0) + max(or_ or 0, 0)
        if top is not None and (high > top or bottom + max(os_e, or_e) > top):
            cut = ", ".join(f"{k} = {v:.3g} ± {e:.3g} µs" for k, v, e in (("o_s", os_, os_e), ("o_r", or_, or_e))
                            if v is not None)
            a.annotate(f"cut off at {top:.3g} µs:\n{cut}", (i, top), textcoords="offset points", xytext=(0, -22),
                       ha="center", fontsize=6, color="C3", bbox={"fc": "white", "ec": "none", "alpha": 0.9})
        srcs = sorted({r[k]["method"] for k in ("o_s", "o_r", "rtt") if isinstance(r.get(k), dict)})
        notes.append("from " + ", ".join(srcs) if srcs else "")
        a.annotate("\n".join(n for n in notes if n), (i, 0), textcoords="offset points", xytext=(0, -50),
                   ha="center", fontsize=6, color="C3" if any("n/a" in n or "exceed" in n for n in notes) else "0.3")
    a.set_xticks(range(len(rows)))
    a.set_xticklabels(["\n".join(textwrap.wrap(r["label"].split(":")[0], 18)) for r in rows], fontsize=7)
    a.set_ylabel("µs")
    a.set_ylim(bottom=0, top=top * 1.05 if top else None)
    a.set_title(f"The software ladder ({doc.get('place')}): o_s, o_r and the rest of EEL = RTT/2 per rung; "
                "above each bar its EEL and (what it adds over the bar to its left)\n"
                "in the style of Bell et al., Figure 3", fontsize=8)
    if seen:
        a.legend(fontsize=7, loc="upper left")
    a.grid(alpha=0.3, axis="y")
    fig.subplots_adjust(bottom=0.25)
    fig.savefig(out, dpi=130)
    plt.close(fig)


def _cell(f):
    if not isinstance(f, dict):
        return ""
    unit = f.get("unit", "ns")
    digits = 4 if unit == "ns/B" else 1
    if f.get("value") is None:
        bound = f.get("upper_bound")
        return f"hidden, ≤ {bound:.{digits}f} {unit}" if bound is not None else f"n/a ({f.get('error', '')})"
    ci = f.get("ci95")
    return f"{f['value']:.{digits}f}" + (f" ± {ci:.{digits}f}" if ci is not None else " (no interval)") + f" {unit}"


def section(path, doc, outdir):
    """Markdown lines for scripts/report's 'The software ladder' section: the rungs, each method's table of
    what each rung adds over the one below (logpbench compare's figures), and the figure."""
    import os
    lines = ["## The software ladder", "",
             f"`{os.path.basename(path)}` (`scripts/ladder {doc.get('place')}`): the same methods through each layer, "
             "lowest first. ± 95% half-widths; added = this rung − the rung below it that ran "
             "(`logpbench compare`), its half-width the two runs' combined in quadrature.", ""]
    for r in doc.get("rungs", []):
        status = "" if r["status"] == "available" else f" — **not available**: {r['status']}"
        lines.append(f"- **{r['name']}**: {r['label']}{status}")
    lines.append("")
    for m, res in doc.get("results", {}).items():
        probes = " / ".join(f"{p:.0f}" for p in res.get("state", {}).get("probes_ns", []))
        lines += [f"### {m}", "", f"Speed probe (bare cache-line ping-pong, ns): {probes or 'none'}: "
                  f"{res.get('state', {}).get('verdict', '')}.", "",
                  "| quantity | rung | value | adds over the rung below |", "|---|---|---|---|"]
        for row in res.get("table", []):
            if row.get("status") != "ran":
                lines.append(f"| {row['quantity']} | {row['rung']} | {row.get('status')} | |")
                continue
            added = ""
            if row.get("added"):
                added = ("+" if (row["added"].get("value") or 0) > 0 else "") + _cell(row["added"]) + ("" if row.get("resolved") else " (not resolved)") + f" over {row['over']}"
                if row.get("skipped"):
                    added += f" ({', '.join(row['skipped'])} did not run)"
            lines.append(f"| {row['quantity']} | {row['rung']} | {_cell(row.get('value'))} | {added} |")
        lines.append("")
    stem = os.path.splitext(os.path.basename(path))[0]
    png = os.path.join(outdir, f"{stem}-ladder.png")
    draw(doc, png)
    lines += [f"![o_s, o_r and EEL per rung (Bell et al. Fig. 3)]({os.path.basename(png)})", ""]
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        draw(json.load(f), sys.argv[2])
    print(sys.argv[2])
