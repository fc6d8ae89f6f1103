"""Figures and the one-page summary for logpbench results, drawn the way the papers draw them.
Used by scripts/plot (one figure) and scripts/report (all figures and a Markdown summary)."""
import importlib.util
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

# The signature publishes no o_r: its o_s_plus_o_r (g' - Delta) is the pair it defines (issue 36).
PARAMS = ("o_s", "o_r", "o_s_plus_o_r", "g", "g_ni", "G", "L", "rtt")


def load(path):
    with open(path) as f:
        return json.load(f)


def title_of(doc):
    meta = doc.get("meta", {})
    flags = meta.get("flags", {})
    emu = (meta.get("emulation") or {}).get("spec")
    t = meta.get("transport", {})
    dev = t.get("device") or t.get("driver") or ""
    return f"{flags.get('transport', '?')}{' ' + dev if dev else ''}" + (f" emulating {emu}" if emu else "") + \
        f" — {meta.get('host', '')}"


def us(x):
    return None if x is None else x / 1e3


def draw_signature(doc, out, run=0):
    """Culler et al. Figures 4-7: message cost against burst length, one curve per Delta."""
    curves = doc["runs"][run]["signature"]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for c in curves:
        pts = c["points"]
        ax.errorbar([p["M"] for p in pts], [p["cost_ns"] / 1e3 for p in pts],
                    yerr=[(p["ci95_ns"] or 0) / 1e3 for p in pts], marker="o", ms=3, capsize=2,
                    label=f"Δ = {c['delta_achieved_ns'] / 1e3:.2f} µs")
    params = doc.get("parameters", {})
    for key, style in (("o_s", ":"), ("g", "--")):
        v = params.get(key, {}).get("value_ns")
        if v is not None:
            ax.axhline(v / 1e3, color="grey", ls=style, lw=1)
            ax.annotate(f"{key} = {v / 1e3:.3f} µs", (1, v / 1e3), textcoords="offset points", xytext=(4, 3),
                        color="grey", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("burst length M (messages)")
    ax.set_ylabel("average message cost (µs)")
    ax.set_title("LogP signature: " + title_of(doc), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out)


def draw_rtt(doc, out, run=0):
    r = doc["runs"][run]["rtt"]
    h = r["histogram"]
    lo, hi, counts = h["lo_ns"], h["hi_ns"], h["counts"]
    w = (hi - lo) / len(counts)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar([(lo + (i + 0.5) * w) / 1e3 for i in range(len(counts))], counts, width=w / 1e3)
    med = r["summary"]["median_ns"]
    ax.axvline(med / 1e3, color="k", lw=1, ls="--")
    ax.set_xlabel(f"round trip (µs); median {med / 1e3:.3f} µs, {h['above_hi']} above p99.9")
    ax.set_ylabel("count")
    ax.set_title("Round trip: " + title_of(doc), fontsize=9)
    save(fig, out)


def per_size_series(doc, key, sub=None):
    xs, ys, es = [], [], []
    for e in doc.get("per_size", []):
        v = e.get(sub, {}).get(key) if sub else e.get(key)
        if isinstance(v, dict) and v.get("value_ns") is not None and e["bytes"] > 0:
            xs.append(e["bytes"])
            ys.append(v["value_ns"] / 1e3)
            es.append((v.get("ci95_ns") or 0) / 1e3)
    return xs, ys, es


def draw_sizes(doc, out, series, ylabel, title, logy=False, fit=None):
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, (xs, ys, es) in series:
        if xs:
            ax.errorbar(xs, ys, yerr=es, marker="o", ms=3, capsize=2, label=label)
    if fit:
        xs = sorted({x for _, (xx, _, _) in series for x in xx})
        ax.plot(xs, [fit(x) / 1e3 for x in xs], "k--", lw=1, label="g + G·n")
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title + ": " + title_of(doc), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out)


def save(fig, out):
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def method_plots():
    """Each method's own figures: methods/<folder>/plot.py, a module with figures(doc, kind, path_for) that
    draws what belongs to `kind` (meta.method.plot) with the helpers here and returns [(caption, file)]."""
    global _METHOD_PLOTS
    if _METHOD_PLOTS is None:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "methods")
        _METHOD_PLOTS = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder, "plot.py")
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location(f"logpb_method_plot_{folder}", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                _METHOD_PLOTS.append(module)
    return _METHOD_PLOTS


_METHOD_PLOTS = None


def plot_kind(doc):
    """The figure kind the method's descriptor names (meta.method.plot); older results: the bench name."""
    meta = doc.get("meta", {})
    method = meta.get("method") or {}
    return method.get("plot", meta.get("flags", {}).get("bench", "?"))


def figures(doc, outdir, stem):
    """All figures for one result; returns [(caption, file name)]."""
    bench = plot_kind(doc)
    made = []

    def f(name):
        return os.path.join(outdir, f"{stem}-{name}.png")

    runs = doc.get("runs") or []
    if runs and runs[0].get("signature"):
        draw_signature(doc, f("signature"))
        made.append(("LogP signature (Culler et al. Figs. 4-7)", f("signature")))
    if runs and runs[0].get("rtt", {}).get("histogram"):
        draw_rtt(doc, f("rtt"))
        made.append(("Round-trip distribution", f("rtt")))
    for module in method_plots():
        made += module.figures(doc, bench, f)
    return made


def fmt(p):
    if not isinstance(p, dict):
        return ""
    v = p.get("value_ns")
    if v is None:
        if p.get("upper_bound_ns") is not None:  # not observable by this method, but bounded
            return f"≤ {p['upper_bound_ns'] / 1e3:.4g} (hidden)"
        if p.get("lower_bound_ns") is not None:  # a steady state cut off in its transition: at least this
            return f"≥ {p['lower_bound_ns'] / 1e3:.4g} (not reached)"
        return "n/a" + (f" ({p['error']})" if p.get("error") else "")
    ci = p.get("ci95_ns")
    s = f"{v / 1e3:.4g}" if abs(v) >= 1 else f"{v:.3g} ns"
    if ci:
        s += f" ± {ci / 1e3:.2g}"
    return s


def summary(docs_and_paths, outdir):
    """Markdown: one section per result, then the LogGP parameters every method reported, side by side;
    a LoGPC model's JSON (logpbench model) adds a 'Contention: model vs measurement' section at the end, a
    comparison's JSON (logpbench compare) a 'Comparison' section."""
    lines = ["# logpbench report", ""]
    side = []
    models = [(p, d) for p, d in docs_and_paths if is_model(d)]
    comparisons = [(p, d) for p, d in docs_and_paths if is_compare(d)]
    ladders = [(p, d) for p, d in docs_and_paths if is_ladder(d)]
    for path, doc in docs_and_paths:
        if is_model(doc) or is_compare(doc) or is_ladder(doc):
            continue
        meta = doc.get("meta", {})
        flags = meta.get("flags", {})
        stem = os.path.splitext(os.path.basename(path))[0]
        lines += [f"## {flags.get('bench', '?')} over {title_of(doc)}", "",
                  f"`{os.path.basename(path)}` — status **{doc.get('status')}**, logpbench {meta.get('version', '?')}, "
                  f"{meta.get('cpu', '')}, TSC {meta.get('tsc', {}).get('hz', 0) / 1e9:.3f} GHz, started {meta.get('started_utc', '')}", ""]
        params = doc.get("parameters", {})
        if params:
            lines += ["| parameter | value (µs, ± 95% CI) |", "|---|---|"]
            for k, v in params.items():
                lines.append(f"| {k} | {fmt(v)} |")
            lines.append("")
        failed = [c for c in doc.get("checks", []) if not c.get("ok", True)]
        if failed:
            lines += ["Checks that failed:", ""] + [f"- {c['name']}: {c['detail']}" for c in failed] + [""]
        elif doc.get("checks"):
            lines += ["All consistency checks passed.", ""]
        for caption, png in figures(doc, outdir, stem):
            lines += [f"![{caption}]({os.path.basename(png)})", ""]
        t = meta.get("transport", {})
        emu = (meta.get("emulation") or {}).get("spec")
        where = " ".join(x for x in (flags.get("transport", "?"), t.get("device") or t.get("driver") or "") if x)
        side.append((flags.get("bench", "?"), where + (f" emulating {emu}" if emu else ""), params))
    lines += ["## LogGP side by side", "",
              "What each method says the parameters are (µs; G in ns per byte). The methods define them "
              "differently — Kielmann's g(m) includes per-byte CPU costs, Doerfler's overhead includes completing "
              "the operation, Bell's g is a flood's time per message — so disagreement is information, not error. "
              "`g` is each method's own g; `g_ni` is the NI's gap, given only where the method could see it "
              "(else bounded: ≤, hidden behind the stage named under 'g limited by').", "",
              "| method | transport | " + " | ".join(PARAMS) + " | g limited by |", "|---|---|" + "---|" * (len(PARAMS) + 1)]
    for bench, transport, params in side:
        cells = []
        for k in PARAMS:
            p = params.get(k)
            cells.append(f"{p['value_ns']:.4g} ns/B" if k == "G" and isinstance(p, dict) and p.get("value_ns") is not None
                         else fmt(p))
        gni = params.get("G_ni")
        if isinstance(gni, dict) and gni.get("value_ns") is None and gni.get("upper_bound_ns") is not None:
            cells[PARAMS.index("G")] += f" (NI's G ≤ {gni['upper_bound_ns']:.4g} ns/B)"
        g = params.get("g") or {}
        g0 = params.get("g0") or {}
        limit = g.get("bottleneck") or g0.get("bottleneck") or ""
        lines.append(f"| {bench} | {transport} | " + " | ".join(cells) + f" | {limit} |")
    lines.append("")
    for path, doc in models:
        lines += model_section(path, doc, outdir)
    for path, doc in comparisons:
        lines += compare_section(path, doc, outdir)
    for path, doc in ladders:
        lines += _ladder_plot().section(path, doc, outdir)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(lines))
    return os.path.join(outdir, "report.md")


# ---- The software ladder (scripts/ladder's ladder.json, schema logpbench-ladder/1): drawn by scripts/lib/ladder_plot.py

def is_ladder(doc):
    return str(doc.get("schema", "")).startswith("logpbench-ladder/")


def _ladder_plot():
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "scripts", "lib", "ladder_plot.py")
    spec = importlib.util.spec_from_file_location("ladder_plot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- LoGPC model vs measurement (logpbench model's JSON, schema logpbench-model/1) --------------------

def is_model(doc):
    return str(doc.get("schema", "")).startswith("logpbench-model/")


def _v(p, scale=1e3):
    """value and 95% half-width of a {value_ns, ci95_ns} entry, in µs; (None, 0) when missing."""
    if not isinstance(p, dict) or p.get("value_ns") is None:
        return None, 0
    return p["value_ns"] / scale, (p.get("ci95_ns") or 0) / scale


def draw_model(doc, out):
    """In the style of the LoGPC paper's Figs. 6, 9 and 11: the models' predictions as lines, the
    measurement as points with their intervals. Left: K-to-1 per-sender gap against K (Culler et al. 3.5);
    middle: all-to-all cost per iteration, synchronous and asynchronous; right: the same against message size."""
    pred = doc.get("predictions", {})
    cmp = doc.get("comparison", {})
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4.8))
    # K-to-1
    ks = [r["k"] for r in pred.get("k_to_one", [])]
    logp = [_v(r["logp"]["g"])[0] for r in pred.get("k_to_one", [])]
    if ks and all(x is not None for x in logp):
        a.plot(ks, logp, "k-", label="LogP = LoGPC: K · max(g, o_r + o_s)")
    m = cmp.get("k_to_one", {}).get("per_k", [])
    pts = [(e["k"], *_v(e.get("measured_g"))) for e in m if _v(e.get("measured_g"))[0] is not None]
    if pts:
        a.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], fmt="o", color="C3",
                   capsize=3, label="measured")
    a.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    a.set_xlabel("senders K")
    a.set_ylabel("per-sender gap g(K) (µs)")
    a.set_title("K-to-1", fontsize=9)
    # all-to-all bars
    a2a = pred.get("all_to_all", {})
    labels, models = ["synchronous", "asynchronous"], [("LogP", "logp"), ("LoPC", "lopc"), ("LoGPC", "logpc")]
    width = 0.2
    for i, (name, key) in enumerate(models):
        vals = [_v(a2a.get(mode, {}).get(key if key in a2a.get(mode, {}) else "logp"))[0] for mode in labels]
        b.bar([j + (i - 1.5) * width for j in range(2)], [v if v is not None else 0 for v in vals], width, label=name)
    meas = [_v((cmp.get("all_to_all", {}).get(mode) or {}).get("measured")) for mode in labels]
    if any(v is not None for v, _ in meas):
        b.bar([j + 1.5 * width for j in range(2)], [v or 0 for v, _ in meas], width, yerr=[e for _, e in meas],
              capsize=3, color="C3", label="measured")
    b.set_xticks(range(2))
    b.set_xticklabels(labels)
    b.set_ylabel("cost per iteration (µs)")
    b.set_title("all-to-all remap (LoGPC Table 4)", fontsize=9)
    # against message size
    curve = doc.get("curves", {}).get("all_to_all_by_bytes", [])
    for key, label, style in (("sync_logp_ns", "sync LogP", "k:"), ("sync_lopc_ns", "sync LoPC", "k--"),
                              ("sync_logpc_ns", "sync LoGPC", "k-"), ("async_logpc_ns", "async LoGPC", "C0-"),
                              ("long_T_c_ns", "long messages T_c (eq. 13)", "C2-")):
        xs = [p["bytes"] for p in curve if p.get(key) is not None]
        if xs:
            c.plot(xs, [p[key] / 1e3 for p in curve if p.get(key) is not None], style, label=label)
    aa = cmp.get("all_to_all", {})
    for mode, color in (("synchronous", "C3"), ("asynchronous", "C1")):
        v, e = _v((aa.get(mode) or {}).get("measured"))
        if v is not None and aa.get("bytes"):
            c.errorbar([aa["bytes"]], [v], yerr=[e], fmt="o", color=color, capsize=3, label=f"measured {mode[:5]}")
    c.set_xscale("log", base=2)
    c.set_yscale("log")
    c.set_xlabel("message size B (bytes)")
    c.set_ylabel("µs per iteration")
    c.set_title("against message size", fontsize=9)
    for ax in (a, b, c):
        ax.grid(alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(fontsize=7)
    net = doc.get("network", {})
    src = doc.get("source", {})
    emu = (src.get("emulation") or {}).get("spec")
    fig.suptitle(f"LoGPC model vs measurement — {net.get('spec', '?')}, P = {net.get('ranks')}, "
                 f"parameters from {os.path.basename(src.get('path', '?'))}" + (f" (emulating {emu})" if emu else ""),
                 fontsize=9)
    save(fig, out)


def cmp_of(doc, kind):
    return (doc.get("comparison") or {}).get(kind)


def model_section(path, doc, outdir):
    """Markdown lines for the report's 'Contention: model vs measurement' section."""
    stem = os.path.splitext(os.path.basename(path))[0]
    net, src = doc.get("network", {}), doc.get("source", {})
    emu = (src.get("emulation") or {}).get("spec")
    lines = ["## Contention: model vs measurement", "",
             f"`{os.path.basename(path)}`: LoGPC (Moritz & Frank) on `{net.get('spec')}` with P = {net.get('ranks')} ranks, "
             f"B = {net.get('bytes')} bytes, from the parameters of `{os.path.basename(src.get('path', '?'))}` "
             f"({src.get('bench')} over {src.get('transport')}{' emulating ' + emu if emu else ''}). µs, ± 95% CI.", ""]
    for kind in ("k_to_one", "one_to_k", "all_to_all"):
        m = cmp_of(doc, kind)
        if m:
            emu_m = (m.get("emulation") or {}).get("spec")
            lines.append(f"- measured {kind.replace('_', '-')}: `{os.path.basename(m.get('path', '?'))}`"
                         + (f" emulating {emu_m}" if emu_m else "") + (f" — {m['label']}" if m.get("label") else ""))
    for k in doc.get("missing", []):
        lines.append(f"- {k} missing: {doc['parameters'][k].get('error', '')}")
    a2a = doc.get("predictions", {}).get("all_to_all", {})
    cmp = doc.get("comparison", {})
    lines += ["", "| all-to-all | LogP | LoPC | LoGPC | C_n | measured |", "|---|---|---|---|---|---|"]
    for mode in ("synchronous", "asynchronous"):
        r = a2a.get(mode, {})
        meas = (cmp.get("all_to_all", {}).get(mode) or {}).get("measured")
        lines.append(f"| {mode}{' (saturated)' if r.get('saturated') else ''} | {fmt(r.get('logp'))} | "
                     f"{fmt(r.get('lopc', r.get('logp')))} | {fmt(r.get('logpc'))} | {fmt(r.get('C_n'))} | {fmt(meas) or '—'} |")
    lg = a2a.get("long_message", {})
    ratio = lg.get("ratio")
    lines.append(f"| long messages (T = 2BG → T_c) | {fmt(lg.get('T'))} | | {fmt(lg.get('T_c'))} | "
                 f"{'T_c/T = %.3f' % ratio if ratio is not None else ''} | |")
    kto = cmp.get("k_to_one", {}).get("per_k", [])
    if kto:
        lines += ["", "| K | LogP g(K) | LogP ratio | measured g(K) | measured ratio |", "|---|---|---|---|---|"]
        for e in kto:
            mr = e.get("measured_ratio") or {}
            mrs = f"{mr['value']:.3g} ± {mr.get('ci95') or 0:.2g}" if mr.get("value") is not None else "—"
            pr = e.get("predicted_ratio")
            lines.append(f"| {e['k']} | {fmt(e.get('predicted_g'))} | {pr if pr is None else round(pr, 3)} | "
                         f"{fmt(e.get('measured_g')) or '—'} | {mrs} |")
    otk = cmp.get("one_to_k", {}).get("per_k", [])
    if otk:
        def gain_text(mg):
            v, c = mg.get("value"), mg.get("ci95")
            return "—" if v is None else (f"{v:.3f} ± {c:.3f}" if c is not None else f"{v:.3f}")
        lines += ["", "| K | LogP g(K) (gain 1) | measured g(K) | measured gain |", "|---|---|---|---|"]
        for e in otk:
            mg = e.get("measured_gain") or {}
            lines.append(f"| {e['k']} | {fmt(e.get('predicted_g'))} | {fmt(e.get('measured_g')) or '—'} | "
                         f"{gain_text(mg)} |")
    for n in doc.get("notes", []):
        lines.append(f"\nNote: {n}")
    png = os.path.join(outdir, f"{stem}-model.png")
    draw_model(doc, png)
    lines += ["", f"![LoGPC model vs measurement]({os.path.basename(png)})", ""]
    return lines


# ---- Comparison of runs (logpbench compare's JSON, schema logpbench-compare/1) ----------------------

def is_compare(doc):
    return str(doc.get("schema", "")).startswith("logpbench-compare/")


def _fig_v(f):
    """value and half-width of a comparison figure {value, ci95, unit} in µs (ns in the JSON); (None, 0)."""
    if not isinstance(f, dict) or f.get("value") is None:
        return None, 0
    return f["value"] / 1e3, (f.get("ci95") or 0) / 1e3


def draw_compare(doc, out):
    """In the style of Bell et al. Figure 3: for each run a stacked bar of o_s, o_r and the rest of the
    end-to-end latency (EEL = RTT/2), and the runs' g(m) curves overlaid. A parameter a run could not
    observe is left out of its bar and named under it, never drawn as 0."""
    runs = doc.get("runs", [])
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5))
    names = [r["name"] for r in runs]
    labelled = set()

    def once(label):  # each part in the legend once, whichever run has it first
        if label in labelled:
            return None
        labelled.add(label)
        return label

    for i, r in enumerate(runs):
        f = r.get("figure", {})
        os_, os_e = _fig_v(f.get("o_s"))
        or_, or_e = _fig_v(f.get("o_r"))
        rtt, rtt_e = _fig_v(f.get("rtt"))
        missing = [k for k, v in (("o_s", os_), ("o_r", or_), ("RTT", rtt)) if v is None]
        bottom = 0
        for v, e, label, color in ((os_, os_e, "o_s", "C0"), (or_, or_e, "o_r", "C1")):
            if v is not None:
                a.bar(i, v, 0.6, bottom=bottom, color=color, label=once(label))
                a.errorbar(i + 0.12 * (1 if label == "o_r" else -1), bottom + v, yerr=e, color="k", capsize=2, lw=0.8)
                bottom += v
        note = ""
        if rtt is not None:
            eel = rtt / 2
            rest = eel - bottom
            if rest >= 0:
                if os_ is None or or_ is None:  # the rest then holds the overhead the run could not observe
                    a.bar(i, rest, 0.6, bottom=bottom, color="C2", alpha=0.3, hatch="//",
                          label=once("rest of EEL, with the overhead not observed"))
                else:
                    a.bar(i, rest, 0.6, bottom=bottom, color="C2", alpha=0.6, label=once("rest of EEL (RTT/2)"))
            else:  # measured by different methods, o_s + o_r can exceed the EEL: said, not drawn negative
                note = f"o_s + o_r exceed EEL by {-rest:.3g} µs"
            a.errorbar(i, eel, yerr=rtt_e / 2, fmt="_", color="k", ms=18, capsize=3)
            a.annotate(f"{eel:.3g}", (i, eel), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7)
        if missing:
            note = (note + "; " if note else "") + ", ".join(missing) + " n/a"
        if note:
            a.annotate(note, (i, 0), textcoords="offset points", xytext=(0, -28), ha="center", fontsize=7, color="C3")
    a.set_xticks(range(len(runs)))
    a.set_xticklabels(names)
    a.set_ylabel("µs")
    a.set_title("o_s, o_r and the rest of EEL = RTT/2 (Bell et al. Fig. 3)", fontsize=9)
    a.legend(fontsize=8)
    a.grid(alpha=0.3, axis="y")
    drawn, curves = False, False
    for i, r in enumerate(runs):
        f = r.get("figure", {})
        pts = [(p["bytes"], *_fig_v(p)) for p in f.get("g_curve", []) if p.get("value") is not None and p["bytes"] > 0]
        if pts:
            b.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", ms=3,
                       capsize=2, color=f"C{i}", label=f"{r['name']} ({f.get('bench', '?')})")
            drawn = curves = True
        else:
            g, _ = _fig_v(f.get("g"))
            if g is not None:  # a method of one size (the signature): its g as a level
                b.axhline(g, color=f"C{i}", ls="--", lw=1, label=f"{r['name']}: g = {g:.3g} µs ({f.get('bench', '?')}, one size)")
                drawn = True
    if drawn:
        if curves:
            b.set_xscale("log", base=2)
        else:
            b.set_xticks([])
            b.text(0.5, 0.04, "no run measured g over sizes: each g as a level", ha="center", transform=b.transAxes, fontsize=8)
        b.set_yscale("log")
        b.legend(fontsize=8)
    else:
        b.text(0.5, 0.5, "no g in these runs", ha="center", va="center", transform=b.transAxes)
    b.set_xlabel("message size m (bytes)")
    b.set_ylabel("g(m) (µs)")
    b.set_title("g(m) of each run", fontsize=9)
    b.grid(alpha=0.3)
    fig.suptitle("Comparison: " + ", ".join(f"{r['name']} = {os.path.basename(r.get('path', '?'))}" for r in runs), fontsize=9)
    save(fig, out)


def compare_section(path, doc, outdir):
    """Markdown lines for the report's 'Comparison' section: every shared quantity of every pair, the
    warnings, and the figure."""
    stem = os.path.splitext(os.path.basename(path))[0]
    lines = ["## Comparison", "",
             f"`{os.path.basename(path)}` (`logpbench compare`): baseline **{doc.get('baseline')}**. "
             "± 95% half-widths; added = other − baseline, its half-width the two runs' combined in quadrature "
             "(independent runs). A value a run could not observe is shown with its bound and reason.", ""]
    for r in doc.get("runs", []):
        emu = (r.get("emulation") or {}).get("spec")
        lines.append(f"- **{r['name']}**: `{os.path.basename(r.get('path', '?'))}` — {r.get('bench')} over {r.get('transport')}"
                     + (f" emulating {emu}" if emu else "") + f", {str(r.get('cpu') or '').strip()}")
    lines.append("")
    for w in doc.get("warnings", []):
        lines.append(f"> warning: {w}")
    if doc.get("warnings"):
        lines.append("")

    def cell(f):
        if not isinstance(f, dict):
            return ""
        unit = f.get("unit", "")
        if f.get("value") is None:
            if f.get("upper_bound") is not None:
                return f"hidden, ≤ {f['upper_bound']:.1f} {unit} ({f.get('error', '')})"
            return f"n/a ({f.get('error', '')})"
        digits = {"ns": 1, "ns/B": 4, "B": 0}.get(unit, 3)  # as the command's lines print them
        s = f"{f['value']:.{digits}f}"
        s += f" ± {f['ci95']:.{digits}f}" if f.get("ci95") is not None else " (no interval)"
        return s + (f" {unit}" if unit else "")

    for c in doc.get("comparisons", []):
        a, o = c["baseline"], c["other"]
        lines += [f"| {a}-vs-{o} | {a} | {o} | added |", "|---|---|---|---|"]
        for r in c.get("rows", []):
            added = cell(r.get("added")) + (" *" if r.get("resolved") else "")
            lines.append(f"| {r['quantity']} | {cell(r.get(a))} | {cell(r.get(o))} | {added} |")
        lines += ["", "\\* the difference exceeds its interval.", ""]
    png = os.path.join(outdir, f"{stem}-compare.png")
    draw_compare(doc, png)
    lines += [f"![o_s, o_r and EEL per run; g(m) overlaid (Bell et al. Fig. 3)]({os.path.basename(png)})", ""]
    return lines
