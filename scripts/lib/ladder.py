"""scripts/ladder's table: what each rung of the software ladder adds to each parameter, from `logpbench
compare` between consecutive rungs that ran (its added cost and interval: other - baseline, the two runs'
95% half-widths combined in quadrature), and ladder.json (schema logpbench-ladder/1), written atomically.

usage: python3 scripts/lib/ladder.py LOGPBENCH OUT_DIR PLACE "METHODS"
Reads OUT_DIR/rungs.tsv, runs.tsv and state.tsv as scripts/ladder writes them. Exit 1 when a rung that was
available failed, or fewer than two rungs of a method ran (nothing to compare); else 0."""
import json
import os
import re
import subprocess
import sys

# The table's rows: the LogP parameters and their close kin, in this order where a method gives them;
# every other scalar parameter is in ladder.json only.
TABLE_KEYS = ["o_s", "o_r", "o_s_plus_o_r", "o_s_completion", "g", "L", "rtt", "G"]


def tsv(path, fields):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                rows.append(dict(zip(fields, parts + [""] * (len(fields) - len(parts)))))
    return rows


def write_atomically(path, doc):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def figure_of(p, unit="ns"):
    """A parameter of a result as compare's JSON holds it: {value, ci95, unit} or no value with a reason."""
    if not isinstance(p, dict):
        return None
    f = {"value": p.get("value_ns"), "ci95": p.get("ci95_ns"), "unit": unit}
    if p.get("value_ns") is None:
        f["error"] = p.get("error", "no value")
        for b in ("upper_bound_ns", "lower_bound_ns"):
            if p.get(b) is not None:
                f[b.replace("_ns", "")] = p[b]
    return f


def cell(f, unit="ns"):
    if not isinstance(f, dict):
        return "-"
    if f.get("value") is None:
        if f.get("upper_bound") is not None:
            return f"hidden, <= {f['upper_bound']:.1f}"
        if f.get("lower_bound") is not None:
            return f"n/a, >= {f['lower_bound']:.1f}"
        return "n/a"
    digits = 4 if unit == "ns/B" else 1
    ci = f.get("ci95")
    return f"{f['value']:.{digits}f} ± {ci:.{digits}f}" if ci is not None else f"{f['value']:.{digits}f} (no interval)"


def added_cell(f, resolved, unit="ns"):
    if not isinstance(f, dict) or f.get("value") is None:
        return "n/a (a rung's value is hidden or missing)"
    digits = 4 if unit == "ns/B" else 1
    ci = f.get("ci95")
    s = f"{f['value']:+.{digits}f} ± {ci:.{digits}f}" if ci is not None else f"{f['value']:+.{digits}f} (no interval)"
    return s + ("" if resolved else " (not resolved)")


def short(text, n=110):
    text = " ".join(str(text or "no reason given").split())
    return text if len(text) <= n else text[:n - 1] + "…"


def ucx_used(doc):
    """What a UCX rung's run used, in words, from meta.ucx: UCT's transport and device, or UCP's UCX_*
    environment and the transports/devices of its endpoint's lanes (ucp_ep_print_info's lines)."""
    u = doc.get("meta", {}).get("ucx") or {}
    if u.get("layer") == "uct":
        return f"UCT {u.get('tl')}/{u.get('dev')}"
    if u.get("layer") == "ucp":
        env = " ".join(f"{k}={v}" for k, v in sorted((u.get("environment") or {}).items()))
        info = (u.get("endpoint") or {}).get("info") or []
        lanes = []
        for line in info if isinstance(info, list) else str(info).splitlines():
            if "lane[" in line:
                lanes += [t for t in re.findall(r"\d+:(\w+/[\w:.]+?)(?:\.\d+)?\s", line + " ") if t not in lanes]
        return f"UCP ({env or 'no UCX_* variable set'}), lanes: {', '.join(lanes) or 'not recorded'}"
    return "a run without meta.ucx"


def compare(lpb, out, m, lower, upper):
    """`logpbench compare` of two rungs' results; (its JSON, the path of its text) or (None, reason)."""
    stem = os.path.join(out, f"cmp-{m}-{lower['name']}-{upper['name']}")
    p = subprocess.run([lpb, "compare", lower["json"], upper["json"], "--names", f"{lower['name']},{upper['name']}",
                        "--json", stem + ".json"], capture_output=True, text=True)
    with open(stem + ".txt", "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        return None, f"logpbench compare exited {p.returncode}: {(p.stderr or p.stdout).strip().splitlines()[-1:]}"
    with open(stem + ".json") as f:
        return json.load(f), stem + ".txt"


def step_rows(cmp, lower, upper):
    rows = {}
    for c in cmp.get("comparisons", []):
        for r in c.get("rows", []):
            if "(" in r["quantity"]:
                continue  # per-size rows: in the comparison's own JSON
            rows[r["quantity"]] = {"unit": r.get("unit", "ns"), "lower": r.get(lower), "upper": r.get(upper),
                                   "added": r.get("added"), "resolved": bool(r.get("resolved"))}
    return rows


def main():
    lpb, out, place, methods = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
    rungs = tsv(os.path.join(out, "rungs.tsv"), ["name", "label", "status", "setting", "command"])
    runs = tsv(os.path.join(out, "runs.tsv"), ["method", "rung", "status", "detail"])
    states = {s["method"]: s for s in tsv(os.path.join(out, "state.tsv"), ["method", "probes", "state"])}
    order = [r["name"] for r in rungs]
    doc = {"schema": "logpbench-ladder/1", "status": "complete", "place": place, "logpbench": lpb, "out": out,
           "methods": methods, "rungs": rungs, "results": {},
           "notes": "added = upper rung - the rung below it that ran (logpbench compare), ± the two runs' 95% "
                    "half-widths in quadrature; 'not resolved' where the difference is within that interval"}
    print(f"ladder {place}: the rungs, lowest first (results in {out}):")
    for r in rungs:
        status = "available" if r["status"] == "available" else f"NOT AVAILABLE: {r['status']}"
        print(f"  {r['name']:<5} {r['label']}: {status}")
    bad = []
    for m in methods:
        ran = []
        res = {"state": {}, "runs": {}, "steps": [], "whole": None, "table": []}
        st = states.get(m, {})
        res["state"] = {"probes_ns": [float(x) for x in st.get("probes", "").split()], "verdict": st.get("state", "")}
        for name in order:
            r = next((x for x in runs if x["method"] == m and x["rung"] == name), None)
            if r is None:
                res["runs"][name] = {"status": "not run"}
                continue
            if r["status"] == "ran":
                with open(r["detail"]) as f:
                    rd = json.load(f)
                res["runs"][name] = {"status": "ran", "json": r["detail"], "result_status": rd.get("status")}
                if name in ("uct", "ucp"):  # what UCX itself says it used (meta.ucx)
                    res["runs"][name]["ucx"] = ucx_used(rd)
                if name == "mpi":  # the pml the ranks were told (--mca pml ucx: Open MPI fails rather than fall back)
                    mpi = rd.get("meta", {}).get("mpi") or {}
                    pml = (mpi.get("mca_from_environment") or {}).get("pml")
                    res["runs"][name]["pml"] = pml
                    # UCX's own variables as the ranks saw them (UCX_TLS, UCX_NET_DEVICES, the Soft-RoCE
                    # workaround mpirun-lab adds); absent from a logpbench before they were recorded.
                    if "ucx_from_environment" in mpi:
                        res["runs"][name]["ucx_environment"] = mpi["ucx_from_environment"]
                    if pml != "ucx":
                        bad.append(f"{m}: rung mpi ran over pml {pml} (meta.mpi.mca_from_environment), not ucx")
                ran.append({"name": name, "json": r["detail"], "doc": rd})
            else:
                res["runs"][name] = {"status": r["status"], "reason": r["detail"]}
                if r["status"] == "failed":
                    bad.append(f"{m}: rung {name} failed: {r['detail']}")
        steps = {}
        for lo, up in zip(ran, ran[1:]):
            cmp, where = compare(lpb, out, m, lo, up)
            between = order[order.index(lo["name"]) + 1:order.index(up["name"])]
            step = {"lower": lo["name"], "upper": up["name"], "skipped": between}
            if cmp is None:
                step["error"] = where
            else:
                step["compare_json"] = where[:-4] + ".json"
                step["rows"] = step_rows(cmp, lo["name"], up["name"])
                step["warnings"] = cmp.get("warnings", [])
            res["steps"].append(step)
            steps[up["name"]] = step
        if len(ran) > 2:
            cmp, where = compare(lpb, out, m, ran[0], ran[-1])
            if cmp is not None:
                res["whole"] = {"lower": ran[0]["name"], "upper": ran[-1]["name"], "compare_json": where[:-4] + ".json",
                                "rows": step_rows(cmp, ran[0]["name"], ran[-1]["name"])}
        if len(ran) < 2:
            bad.append(f"{m}: {len(ran)} rung(s) ran: nothing to compare")
        probes = " / ".join(f"{p:.0f}" for p in res["state"]["probes_ns"]) or "none"
        print(f"== {m} (speed probe, bare cache-line ping-pong before, between and after the rungs: {probes} ns: "
              f"{res['state']['verdict']})")
        for name in ("uct", "ucp"):
            if res["runs"].get(name, {}).get("ucx"):
                print(f"  rung {name} ran over {res['runs'][name]['ucx']} (meta.ucx)")
        if "mpi" in res["runs"] and res["runs"]["mpi"].get("pml"):
            env = res["runs"]["mpi"].get("ucx_environment")
            env = (", " + (" ".join(f"{k}={v}" for k, v in sorted(env.items())) or "no UCX_* variable set") +
                   " (meta.mpi.ucx_from_environment)") if env is not None else ""
            print(f"  rung mpi ran over pml {res['runs']['mpi']['pml']} (meta.mpi.mca_from_environment){env}")
        print(f"  {'quantity':<14} {'rung':<5} {'value ± 95% CI (ns)':>24}   adds over the rung below (ns)")
        keys = []
        for k in TABLE_KEYS:
            if any(k in x["doc"].get("parameters", {}) for x in ran):
                keys.append(k)
        for k in keys:
            for name in order:
                info = res["runs"][name]
                row = {"quantity": k, "rung": name}
                if info["status"] != "ran":
                    why = info.get("reason") or ""
                    text = {"not available": "not available", "failed": "FAILED", "not run": "not run"}.get(info["status"], info["status"])
                    print(f"  {k:<14} {name:<5} {text:>24}   {why if info['status'] == 'failed' else ''}".rstrip())
                    row["status"] = info["status"]
                    res["table"].append(row)
                    continue
                me = next(x for x in ran if x["name"] == name)
                p = me["doc"].get("parameters", {}).get(k)
                unit = "ns/B" if k == "G" else "ns"
                f = figure_of(p, unit)
                row.update({"status": "ran", "value": f})
                step = steps.get(name)
                if f is None:
                    added = f"this method gives no {k} over {name}"
                elif f.get("value") is None:
                    added = f"n/a: {name}'s {k}: {short(f.get('error'))}"
                elif step is None:
                    added = "(the lowest rung that ran)"
                elif "error" in step:
                    added = step["error"]
                elif k not in step["rows"]:
                    added = f"n/a ({step['lower']} gives no {k})"
                elif step["rows"][k]["added"] is None or step["rows"][k]["added"].get("value") is None:
                    lo = step["rows"][k]["lower"] or {}
                    added = f"n/a over {step['lower']}: {step['lower']}'s {k}: {short(lo.get('error'))}"
                else:
                    s = step["rows"][k]
                    added = added_cell(s["added"], s["resolved"], unit) + f" over {step['lower']}"
                    if step["skipped"]:
                        added += f" ({', '.join(step['skipped'])} between them did not run)"
                    row.update({"added": s["added"], "resolved": s["resolved"], "over": step["lower"],
                                "skipped": step["skipped"]})
                print(f"  {k:<14} {name:<5} {cell(f, unit) if f else '-':>24}   {added}")
                res["table"].append(row)
            w = res["whole"]
            if w and k in w["rows"]:
                s = w["rows"][k]
                print(f"  {k:<14} {'all':<5} {'':>24}   {added_cell(s['added'], s['resolved'], 'ns/B' if k == 'G' else 'ns')} "
                      f"{w['upper']} over {w['lower']}")
        if not keys:
            print("  (no rung gave a parameter of the table)")
        doc["results"][m] = res
    doc["figure"] = figure_rows(doc, order)
    doc["problems"] = bad
    path = os.path.join(out, "ladder.json")
    write_atomically(path, doc)
    print(f"ladder.json: {path}")
    try:
        sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
        import ladder_plot
        png = os.path.join(out, "ladder.png")
        ladder_plot.draw(doc, png)
        print(f"figure (Bell et al. Fig. 3, one bar per rung): {png}")
    except ImportError as e:
        print(f"ladder: no figure: {e} (python3-matplotlib; scripts/setup installs it)")
    for b in bad:
        print(f"ladder: {b}", file=sys.stderr)
    sys.exit(1 if bad else 0)


# Bell et al. measure o_s and o_r with their own tests and EEL with a ping-pong (section 3): each part of a
# rung's bar from the first of these methods that ran and gave it.
FIGURE_SOURCES = {"o_s": ["kielmann", "signature"], "o_r": ["kielmann", "availability"],
                  "rtt": ["pingpong", "kielmann", "signature"]}


def figure_rows(doc, order):
    rows = []
    for name in order:
        row = {"name": name, "label": next(r["label"] for r in doc["rungs"] if r["name"] == name)}
        for k, sources in FIGURE_SOURCES.items():
            for m in sources:
                res = doc["results"].get(m)
                if not res or res["runs"].get(name, {}).get("status") != "ran":
                    continue
                with open(res["runs"][name]["json"]) as f:
                    p = json.load(f).get("parameters", {}).get(k)
                if p is not None:
                    row[k] = {"method": m, **figure_of(p)}
                    break
        ran = [m for m, res in doc["results"].items() if res["runs"].get(name, {}).get("status") == "ran"]
        if not ran:
            row["missing"] = next((res["runs"][name].get("reason") or res["runs"][name]["status"]
                                   for res in doc["results"].values() if name in res["runs"]), "not run")
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
