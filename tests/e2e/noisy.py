#!/usr/bin/env python3
"""The noisy-core lab: each method on an emulated NI of known parameters while another process (bench/steal)
takes a known share of the requester's or the replier's core, and every published figure that has a truth
classified as
  right    within the truth matrix's tolerance (tests/e2e/truth.py: max(5%, max(100 ns, the floor) + the
           timer's reads), a hidden parameter null with a tight bound, a bottleneck named as the truth's);
  refused  value null, with its cause (the figure's `error`, or a `disturbed` text);
  wrong    a value outside the tolerance, a hidden one given a value or a bound outside its range, another
           bottleneck, or a null that gives no cause.
A run that fails (no complete JSON) publishes nothing: it is counted apart, and fails the lab as a wrong does.

usage: noisy.py LOGPBENCH SOURCE_DIR [--runs R] [--methods m,..] [--shares 0,10,..] [--cores requester,replier]
                [--machine 1990s|modern] [--short] [--out FILE] [--steal PATH]
(scripts/noisy-lab runs it under the CPU lock.) Exit 1 when a figure is wrong or a run failed, else 0.

The truth, what each method can observe and the tolerance are truth.py's own (its rows_for, Row, abs_ns):
the lab runs the same commands as the truth matrix, pinned (--cpu 0 --peer-cpu 1), with the thief on one of
those cores. The share 0 is one quiet cell per method (no thief, so no core).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402  (reads LOGPBENCH SOURCE_DIR from argv, as lpbtest does)
from lpbtest import BIN, load, probe_floor_ns  # noqa: E402

# Machines the truth matrix has not seen. 1990s: g > o_s + o_r, so the NI's gap sets every stream (the
# signature's steady state and the flood's g); modern: o_s, o_r < g < o_s + o_r, so the requester's pair
# sets the signature's steady state while a one-way flood still sees the NI's gap.
MACHINES = {
    "1990s": dict(os=1100, orr=1900, g=6200, L=4700, W=32),
    "modern": dict(os=900, orr=1300, g=1700, L=2600, W=32),
}
METHODS = ("signature", "kielmann", "flood", "availability", "pingpong")
# The thief spins busy_us of every PERIOD_US: 10% is 0.5 ms of every 5 ms, as the issue measured it.
PERIOD_US = 5000
CORES = {"requester": 0, "replier": 1}  # --cpu 0 --peer-cpu 1: the requester (leader) on 0, the replier on 1
RUN_TIMEOUT_S = 300
SHORT = dict(methods=["flood", "signature"], shares=[0, 10], cores=["requester"], runs=2)
# What a cause is shortened to in the table: digits collapsed so that one cause counts once.
CAUSE_CHARS = 70


class Thief:
    """bench/steal pinned to one core, for the time of one run; always stopped (stop() or the lab's finally)."""
    live = []

    def __init__(self, exe, cpu, share):
        busy = share / 100 * PERIOD_US
        # --seconds: a lab killed outright (SIGKILL) leaves a thief that still ends on its own.
        self.p = subprocess.Popen([exe, "--cpu", str(cpu), "--busy-us", f"{busy:g}", "--period-us", str(PERIOD_US),
                                   "--seconds", str(RUN_TIMEOUT_S + 60)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        Thief.live.append(self.p)
        time.sleep(0.05)  # pinned and in its first period before the run starts
        if self.p.poll() is not None:
            raise RuntimeError(f"steal exited {self.p.returncode}: {self.p.stderr.read().strip()}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=10)
        Thief.live.remove(self.p)
        if self.p.returncode != 0 or not out.strip():
            raise RuntimeError(f"steal exited {self.p.returncode}: {err.strip()}")
        return json.loads(out.strip().splitlines()[-1])

    @staticmethod
    def kill_all():
        for p in list(Thief.live):
            if p.poll() is None:
                p.kill()
            p.wait()
            Thief.live.remove(p)


class Absent(dict):
    """A method that did not run, for truth.rows_for's other methods: every figure absent, no sizes, no runs."""
    def __missing__(self, key):
        return {}


def absent_doc():
    return {"parameters": Absent(), "per_size": [], "runs": [], "checks": []}


class Lab:
    def __init__(self, machine, steal_exe, tmp):
        self.machine, self.steal_exe, self.tmp = machine, steal_exe, tmp
        truth.M[self.name] = MACHINES[machine]
        self.quiet_timer_ns = 0.0  # the timer's cost as quiet runs measured it (truth.TIMER; see run_once)

    @property
    def name(self):
        return f"noisy_{self.machine}"

    def logpbench(self, bench, extra, out):
        """truth.logpbench's command, pinned; the document, or (None, why) when the run failed."""
        args = [BIN, "local", "--transport", "shm", "--cpu", str(CORES["requester"]), "--peer-cpu",
                str(CORES["replier"]), "--bench", bench, "--emulate", truth.spec(self.name), "--json", out,
                "-q"] + extra
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, f"no answer within {RUN_TIMEOUT_S} s"
        doc = load(out) if os.path.exists(out) else None
        if p.returncode != 0 or doc is None or doc.get("status") != "complete":
            msg = (p.stderr.strip() or p.stdout.strip() or (doc or {}).get("error") or "").splitlines()
            return None, f"exit {p.returncode}, status {(doc or {}).get('status')}: {msg[-1] if msg else ''}"
        return doc, None

    def rows(self, method, out):
        """One run of `method`: (its truth rows, its document, why it failed)."""
        if method == "pingpong":  # not in the truth matrix: its round trip, held as the signature's is
            doc, why = self.logpbench("pingpong", ["--runs", "1"], out)
            if doc is None:
                return [], None, why
            t = truth.M[self.name]
            rtt = truth.value(doc["parameters"].get("rtt"))
            return [truth.Row(self.name, "pingpong", "rtt", truth.rtt(t), rtt)], doc, None
        ran = {}

        def one(machine, bench, extra, timeout=RUN_TIMEOUT_S):
            if bench != method:
                return absent_doc()
            doc, why = self.logpbench(bench, extra, out)
            ran["doc"], ran["why"] = doc, why
            return doc if doc is not None else absent_doc()

        truth.logpbench = one  # truth.rows_for's runs, one method of them, pinned
        rows = [r for r in truth.rows_for(self.name) if r.method == method]
        if ran.get("doc") is None:
            return [], None, ran.get("why", "did not run")
        return rows, ran["doc"], None


def param_of(method, row, doc):
    """The JSON object behind a row (None where there is none), to read its cause."""
    p, name = doc.get("parameters") or {}, row.param
    keys = {"g (method's sense)": "g0" if method == "kielmann" else "g", "bottleneck": "g",
            "o_s (overlap)": "o_s_completion", "o_r (overlap)": "o_r_stream", "rtt (EEL, 8 B)": "rtt",
            "o_s(1)": "o_s", "o_r(1)": "o_r", "L (Table 1)": "L", "replier service": "replier_service"}
    m = re.match(r"(send|recv) overhead\((\d+)\)", name) or re.match(r"(o_s|o_r)\((\d+)\)$", name)
    if m and name not in keys:
        for e in doc.get("per_size") or []:
            if e.get("bytes") == int(m.group(2)):
                return (e.get(m.group(1)) or {}).get("overhead") if "overhead" in name else e.get(m.group(1))
        return None
    return p.get(keys.get(name, name))


def cause_of(obj):
    """A null figure's cause: its `error` (or `why`), marked "disturbed: " where the figure says it was
    (`disturbed`: true, or the text itself); None where it gives none."""
    if not isinstance(obj, dict):
        return None
    text = next((obj[k] for k in ("error", "why") if isinstance(obj.get(k), str) and obj[k]), None)
    flag = obj.get("disturbed")
    if isinstance(flag, str) and flag:
        text = flag if not text else f"{flag}: {text}"
    if text and (flag is True or isinstance(flag, str)) and not text.startswith("disturbed"):
        text = "disturbed: " + text
    return text


def classify(method, row, doc):
    """(verdict, detail): right, refused (detail: its cause), wrong (detail: why), or not judged."""
    if row.unjudged.startswith("floor"):
        return "not judged", row.unjudged
    cause = cause_of(param_of(method, row, doc))
    if row.kind == "equals":
        if row.got == row.expect:
            return "right", ""
        if row.got in (None, "unknown"):  # the signature names no stage where it could not tell them apart
            why = cause or cause_of((doc.get("parameters") or {}).get("g_ni"))
            return "refused", f"{row.param} {row.got or 'null'}" + (f": {why}" if why else "")
        return "wrong", f"{row.got} for {row.expect}"
    if row.kind == "hidden" and row.got is not None:
        return "wrong", f"a value {row.got:.0f} where the NI's gap is hidden (truth {row.expect:.0f})"
    if row.got is None and (row.kind == "value" or row.bound is None):
        return ("refused", cause) if cause else ("wrong", "null with no cause")
    saved, row.unjudged = row.unjudged, ""  # truth.py's own excuse (the replier's core taken) is not one here
    ok = row.ok()
    row.unjudged = saved
    if ok:
        return "right", ""
    exp, got = row.cells()
    return "wrong", f"{got} for {exp} (allowed +-{row.tolerance():.0f})"


def short_cause(c):
    c = re.sub(r"\d+(\.\d+)?", "#", c)
    return c if len(c) <= CAUSE_CHARS else c[:CAUSE_CHARS - 1] + "…"


def failed_checks(doc):
    return sorted({c.get("name", "?") for c in doc.get("checks") or [] if not c.get("ok", True)})


class Cell:
    def __init__(self, method, share, core):
        self.method, self.share, self.core = method, share, core
        self.runs, self.failed = 0, []
        self.count = Counter()
        self.causes = Counter()
        self.wrongs = []  # (run, figure, detail, failed checks)
        self.thief = []  # the share each run's thief got

    def line(self):
        got = f" (got {sum(self.thief) / len(self.thief):.1%})" if self.thief else ""
        return (f"{self.method} {self.share}%{got} {self.core}: {self.runs} runs, right {self.count['right']}, "
                f"refused {self.count['refused']}, wrong {self.count['wrong']}"
                + (f", not judged {self.count['not judged']}" if self.count["not judged"] else "")
                + (f", failed runs {len(self.failed)}" if self.failed else ""))


def run_cell(lab, cell, runs):
    for i in range(runs):
        out = os.path.join(lab.tmp, f"{cell.method}-{cell.share}-{cell.core}-{i}.json")
        before = probe_floor_ns()
        thief = Thief(lab.steal_exe, CORES[cell.core], cell.share) if cell.share else None
        try:
            rows, doc, why = lab.rows(cell.method, out)
        finally:
            got = thief.stop() if thief else None
        after = probe_floor_ns()
        cell.runs += 1
        if got is not None and got.get("achieved_share") is not None:
            cell.thief.append(got["achieved_share"])
        if doc is None:
            cell.failed.append(f"run {i}: {why}")
            print(f"  run {i}: FAILED: {why}", flush=True)
            continue
        # The timer's reads are part of the tolerance (truth.TIMER_READS): its cost as the quiet runs measured
        # it, so that a thief that slows the timer's calibration does not widen the tolerance it is judged by.
        cost = ((doc.get("meta") or {}).get("tsc") or {}).get("timer_cost_ns") or 0.0
        if not cell.share:
            lab.quiet_timer_ns = max(lab.quiet_timer_ns, cost)
        truth.TIMER["ns"] = lab.quiet_timer_ns or cost
        t = truth.M[lab.name]
        limit = max(truth.ABS_NS, min(t["os"], t["orr"]) / truth.CLASSIFY_SHARE)
        verdicts = []
        for r in rows:
            r.floor_ns = max(before, after)
            if before > limit and r.kind in ("equals", "hidden"):
                r.unjudged = f"floor {before:.0f} ns > {limit:.0f}"
            v, detail = classify(cell.method, r, doc)
            cell.count[v] += 1
            verdicts.append(v[0])
            if v == "refused":
                cell.causes[short_cause(detail)] += 1
            elif v == "wrong":
                cell.wrongs.append((i, r.param, detail, ", ".join(failed_checks(doc)) or "none"))
        print(f"  run {i}: {''.join(verdicts)} (floor {before:.0f}/{after:.0f} ns"
              + (f", thief got {got['achieved_share']:.1%}, worst lateness {got['worst_lateness_us']:.0f} us"
                 if got else "")
              + ")", flush=True)


def markdown(cells, args, machine, elapsed):
    t = MACHINES[machine]
    out = [f"Machine `{machine}`: o_s {t['os']} ns, o_r {t['orr']} ns, g {t['g']} ns, L {t['L']} ns, window {t['W']}; "
           f"thief (bench/steal): busy (share x {PERIOD_US / 1000:g} ms) of every {PERIOD_US / 1000:g} ms, pinned, "
           f"SCHED_OTHER; 'got' is its own run time over wall time. "
           f"{sum(c.runs for c in cells)} runs in {elapsed:.0f} s.", "",
           "| method | stolen (asked, got) | core | runs | right | refused (causes) | wrong | not judged "
           "| failed runs |",
           "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        got = f"{c.share}%, {sum(c.thief) / len(c.thief):.1%}" if c.thief else f"{c.share}%"
        causes = "; ".join(f"{n}x {k}" for k, n in c.causes.most_common())
        refused = f"{c.count['refused']}" + (f" ({causes})" if causes else "")
        out.append(f"| {c.method} | {got} | {c.core} | {c.runs} | {c.count['right']} | {refused} | "
                   f"{c.count['wrong']} | {c.count['not judged']} | {len(c.failed)} |")
    wrongs = [(c, w) for c in cells for w in c.wrongs]
    if wrongs:
        out += ["", "Wrong figures:", "",
                "| method | stolen | core | run | figure | recovered / truth | failed checks |",
                "|---|---|---|---|---|---|---|"]
        out += [f"| {c.method} | {c.share}% | {c.core} | {i} | {p} | {d} | {chk} |" for c, (i, p, d, chk) in wrongs]
    failed = [(c, f) for c in cells for f in c.failed]
    if failed:
        out += ["", "Failed runs:", ""] + [f"- {c.method} {c.share}% {c.core}: {f}" for c, f in failed]
    return "\n".join(out) + "\n"


def parse(argv):
    ap = argparse.ArgumentParser(prog="noisy-lab", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--shares", default="0,10,20,40", help="stolen shares in %% (busy share x 5 ms of every 5 ms)")
    ap.add_argument("--cores", default="requester,replier")
    ap.add_argument("--machine", choices=sorted(MACHINES), default="1990s")
    ap.add_argument("--short", action="store_true",
                    help="CI: flood and signature, 0%% and 10%% on the requester, 2 runs")
    ap.add_argument("--out", help="write the table as markdown")
    ap.add_argument("--steal", help="bench/steal (default: next to LOGPBENCH's build)")
    a = ap.parse_args(argv)
    if a.short:
        a.methods, a.shares, a.cores, a.runs = SHORT["methods"], SHORT["shares"], SHORT["cores"], SHORT["runs"]
    else:
        a.methods = a.methods.split(",")
        a.cores = a.cores.split(",")
        try:
            a.shares = [int(s) for s in a.shares.split(",")]
        except ValueError:
            ap.error(f"--shares: {a.shares!r} is not a list of whole percentages")
    for m in a.methods:
        if m not in METHODS:
            ap.error(f"--methods: unknown method {m!r} (one of {', '.join(METHODS)})")
    for c in a.cores:
        if c not in CORES:
            ap.error(f"--cores: unknown core {c!r} (requester, replier)")
    if any(s < 0 or s > 100 for s in a.shares) or a.runs < 1:
        ap.error("--shares must be within 0-100 and --runs at least 1")
    a.steal = a.steal or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(BIN))), "bench", "steal")
    if not os.access(a.steal, os.X_OK):
        ap.error(f"no steal program at {a.steal} (build it: cmake --build build --target steal)")
    return a


def main():
    a = parse(sys.argv[3:])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally below stops the thief
    t0 = time.monotonic()
    lab = Lab(a.machine, a.steal, tempfile.mkdtemp(prefix="logpb-noisy-"))
    print(f"noisy lab: machine {a.machine} ({truth.spec(lab.name)}), runs kept in {lab.tmp}", flush=True)
    cells = []
    try:
        for m in a.methods:
            for share in sorted(set(a.shares)):
                for core in (a.cores if share else ["(none)"]):
                    cell = Cell(m, share, core)
                    print(f"{m}, {share}% stolen" + (f" on the {core}'s core" if share else "") + ":", flush=True)
                    run_cell(lab, cell, a.runs)
                    print("  " + cell.line(), flush=True)
                    cells.append(cell)
    finally:
        Thief.kill_all()
    elapsed = time.monotonic() - t0
    text = markdown(cells, a, a.machine, elapsed)
    print("\n" + text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    wrong = sum(c.count["wrong"] for c in cells)
    failed = sum(len(c.failed) for c in cells)
    print(f"noisy lab: {wrong} wrong, {failed} failed runs; elapsed {elapsed:.0f} s")
    sys.exit(1 if wrong or failed else 0)


if __name__ == "__main__":
    main()
