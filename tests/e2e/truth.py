#!/usr/bin/env python3
"""The truth matrix: every method run against emulated NIs whose parameters are known, in every regime.

usage: truth.py LOGPBENCH SOURCE_DIR MACHINE|all [--table-only]

For each machine x method x parameter the row says what the emulator was set to, what the method should
see, and what it reported. A row passes when either
  - the method reports the value within 5% or 100 ns (whichever is larger) of what it can observe, or
  - the method reports the parameter unobservable (value null) with an upper bound that is tight: at least
    the truth (within the same tolerance) and at most STAGE_SLACK x the time of the stage that hides it
    (o_s + o_r for the signature's processor, RTT / W for its window, the larger overhead for a flood).
    (Any steady-state time is >= the NI's gap in LogP, so ">= the truth" alone could not fail.)
and fails otherwise. Each machine is measured once: the only retry is scripts/test's rerun of a failed
test, which it names. Each machine's figures are also judged against another machine's truth: that
negative control must fail, so the tolerance really tells machines apart.

What each method can observe (docs/design.md §9), for a LogGP machine with overheads o_s + a n and
o_r + b n, gap g, per-byte gap G, latency L, window W:
  signature  o_s, o_s + o_r (its o_s_plus_o_r; o_r_remainder = that - o_s), L, RTT; its g (Culler) is the
             steady state max(g, o_s + o_r, RTT/W), and the NI's own gap is seen only when it is the largest
             of these;
  flood      its g (Bell) is max(g, o_s, o_r); the NI's gap only when larger than both overheads; o_s and
             o_r by the overlap test; G = max(G, a, b) per byte;
  overlap    o_s(n), o_r(n);
  kielmann   o_s(m), o_r(m), RTT; g(0) by saturation as the flood; L by Table 1 = RTT(0)/2 - o_s - o_r;
  availability  o_s(n) and o_r(n), waiting for local completion.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import load, probe_floor_ns, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-truth-")
# The replier's polls' mean over their median above which its core is taken too much for the steady state to
# hold the emulated parameters (signature_rows): the VM's own ticks give about 1.05.
REPLIER_TAKEN = 1.15
REL, ABS_NS = 0.05, 100.0
# The machine's own floor: half the bare cache-line ping-pong between the two cores (bench/shm_bare_pingpong),
# probed before and after a machine's runs, the larger kept. An emulated overhead is padded from the
# operation's entry, so the real cost of pulling a frame's line across cores is inside the pad only while
# shorter than it; a VM in its slow state (bare round trip 430-550 ns, against 70-140 in its fast one, the
# same 2-core AMD EPYC) adds the rest to every stage, and connectx's 150 + 200 ns signature read 483-499 for
# 350. A value is then held to max(5%, max(100 ns, this floor) + the timer reads below): a figure can be no
# finer than the machine it runs on, and a fast machine gets no more room than 100 ns and its timer's reads.
# Each row keeps its own machine's floor (Row.floor_ns).


def abs_ns(floor_ns, ops=1):
    return max(ABS_NS, floor_ns) + ops * TIMER_READS * TIMER["ns"]


# A hidden parameter's bound is the steady-state time, which the emulator pads to the stage's time plus its
# overshoot (a few %): 20% is room for that on a loaded machine, while a bound taken from a slower stage
# (o_s + o_r where a flood's stage is one overhead, a round trip where the signature's is o_s + o_r) misses.
# As for values, a stage of a few hundred ns gets 100 ns instead: the AM layer's own per-message work (the
# cross-core frame included) rides on the emulated overheads, ~25 ns a side here (connectx: 350 -> 430).
STAGE_SLACK = 1.2
# The emulated NI reads the timer where a real one does not: on entering a send (its pad starts there), on
# leaving each padded overhead (the spin's last read), and to poll a local completion or an arrival; Bell's
# overlap loop and Doerfler's stamp each message's computation besides. About four timer reads per message
# fall outside the pads, on top of the AM layer's own cost. On the AMD EPYC VM (timer 20 ns): the overlap's
# o_s = 2000 read 2085-2112 with or without jitter (cloud failed CI twice at 2101-2102), o_s 500-8000 read
# +60-110 ns, availability's receive overhead 2043-2104 for 2000, fast_ni's flood 1101-1103 for 1000. Every
# value gets TIMER_READS x the largest timer cost its runs measured (meta.tsc.timer_cost_ns) on top of the
# tolerance, so a machine with a slow timer is not failed for its timer, and one with a fast timer gets less.
TIMER_READS = 4
TIMER = {"ns": 0.0}
# A figure the method reports with a 95% interval wider than the tolerance (Kielmann's L under jitter) is
# held to that interval (at most this share of the truth) plus the machine's own allowance, abs_ns: the
# interval is the sampling error around what this machine's L is, and that L carries the machine's one-way
# transfer as every value does. On the VM's slow state (floor 275 ns) the cloud's RTT(m) medians read
# 43207-44155 for an emulated 43035, and L by Table 1 (9 runs; four repeats) 17546-18194 for 17517: a bias
# of about the floor, under a 9-run interval of 800-920. Held to the interval alone, it failed a CI run
# (18479, +962, at stop 33).
JITTER_CI_CAP = 0.10

# Parameters in ns; a, b: per-byte o_s and o_r (ns/B); G: per-byte gap (ns/B); W: window (capacity).
M = {
    # Culler et al. Table 3: the 1990s regime, g > o_s + o_r.
    "paragon": dict(os=1400, orr=2200, g=7600, L=6300, W=32),
    "meiko": dict(os=1700, orr=1600, g=13600, L=7500, W=32),
    "myrinet": dict(os=2000, orr=2600, g=12400, L=11100, W=32),
    # Today's regime: g < o_s + o_r (the processor limits a request/reply stream), and g < o_s (it limits
    # even a one-way flood).
    "modern": dict(os=1000, orr=1200, g=1500, L=3000, W=32),
    "fast_ni": dict(os=1000, orr=800, g=200, L=2000, W=32),
    # Capacity-limited: a window of 4 against L/g = 20.
    "capacity": dict(os=500, orr=500, g=1000, L=20000, W=4),
    # Per-byte costs: a Paragon that copies by the CPU (o_s(n), o_r(n)) and has a per-byte wire time G.
    "perbyte": dict(os=1400, orr=2200, g=7600, L=6300, W=32, G=0.2, a=0.1, b=0.05),
    # NIs that behave like real ones (the keys after W are emulated behaviours, shm/emulation.hpp).
    # ConnectX-like: software overheads of a few hundred ns against a 5 ns gap, a CQ polled 16 at a time,
    # every 16th send signalled, and local completion when the RC ACK is back (2L).
    "connectx": dict(os=150, orr=200, g=5, L=600, W=32, batch=16, signal=16, cq=1200),
    # Completion-moderated: a send is reported complete 6 us after it left, so the flood's default queue
    # (q = 8) would limit it below the NI's gap unless the queue is deepened.
    "moderated": dict(os=500, orr=600, g=1500, L=2000, W=32, cq=6000, batch=4),
    # Replier-bound (Culler et al. 3.5): the replier's handler makes its turnaround (o_r + h + o_s = 2.8 us)
    # the slowest stage of a request/reply stream; one-way floods carry no handler time.
    "replier": dict(os=300, orr=500, g=200, L=2000, W=32, h=2000),
    # A jittery cloud NI: L 15 us with an exponential tail of mean 3 us (g gets J g / L = 400 ns of its own),
    # and a 50 us stall every 20 ms.
    "cloud": dict(os=2000, orr=2000, g=2000, L=15000, W=32, jitter=3000, stall=(20e6, 50e3)),
}
# Exponential tails: the median of one draw of mean J is J ln 2; of the sum of two (a round trip's two
# latencies), about 1.678 J (the median of a Gamma(2, J)).
MEDIAN_EXP1, MEDIAN_EXP2 = 0.6931, 1.6783
NEGATIVE = {"paragon": "myrinet", "meiko": "paragon", "myrinet": "meiko", "modern": "fast_ni",
            "fast_ni": "modern", "capacity": "modern", "perbyte": "meiko", "connectx": "fast_ni",
            "moderated": "modern", "replier": "modern", "cloud": "myrinet"}


def spec(m):
    t = M[m]
    s = f"os={t['os']}ns,or={t['orr']}ns,g={t['g']}ns,L={t['L']}ns,C={t['W']}"
    if "G" in t:
        s += f",G={t['G']}ns,os_per_byte={t['a']}ns,or_per_byte={t['b']}ns"
    for k in ("batch", "signal"):
        if k in t:
            s += f",{k}={t[k]}"
    for k in ("cq", "h", "jitter"):
        if k in t:
            s += f",{k}={t[k]}ns"
    if "stall" in t:
        s += f",stall={t['stall'][0]:.0f}ns/{t['stall'][1]:.0f}ns"
    return s


def rtt(t, n=0):
    """The median round trip: both latencies' tails (jitter) and the replier's handler h are inside it."""
    return 2 * (t["os"] + t["orr"] + t["L"]) + n * (t.get("a", 0) + t.get("G", 0) + t.get("b", 0)) + \
        t.get("h", 0) + MEDIAN_EXP2 * t.get("jitter", 0)


def latency(t):
    """L as RTT/2 - o_s - o_r sees it: the replier's handler and half the round trip's tail are inside."""
    return rtt(t) / 2 - t["os"] - t["orr"]


def gap_mean(t):
    """The NI's mean gap: jitter adds an exponential of mean J g / L to each departure's g."""
    return t["g"] * (1 + t.get("jitter", 0) / t["L"]) if t.get("jitter") else t["g"]


def turnaround(t):
    """The replier's time per request: its o_r, the handler, and the reply's o_s (Culler et al. 3.5)."""
    return t["orr"] + t.get("h", 0) + t["os"]


def o_s(t, n=0):
    return t["os"] + t.get("a", 0) * n


def o_r(t, n=0):
    return t["orr"] + t.get("b", 0) * n


def sig_steady(t):
    return max(gap_mean(t), t["os"] + t["orr"], rtt(t) / t["W"], turnaround(t))


def flood_gap(t, n=8):
    return max(gap_mean(t) + t.get("G", 0) * n, o_s(t, n), o_r(t, n))


class Row:
    """One judged figure. A hidden row also carries `stage`: the truth's time of the stage that hides it."""
    def __init__(self, machine, method, param, expect, got, bound=None, kind="value", note="", stage=None,
                 own_ci_ns=0.0, ops=1):
        self.machine, self.method, self.param = machine, method, param
        self.ops = ops  # operations the figure spans, each with its timer reads outside the pads (TIMER_READS)
        self.expect, self.got, self.bound, self.kind, self.note = expect, got, bound, kind, note
        self.stage = stage
        self.own_ci_ns = own_ci_ns  # the method's own interval, where it may widen the tolerance (JITTER_CI_CAP)
        self.unjudged = ""  # why this row is shown but not judged (a classification on a machine too slow for it)
        self.floor_ns = 0.0  # its machine's floor, probed around the runs (rows_on_floor)
        if kind == "hidden" and stage is None:
            raise ValueError(f"hidden row {method} {param} needs the time of the stage that hides it")

    def tolerance(self, expect=None):
        """How far a value may sit from `expect` (this row's truth by default)."""
        e = self.expect if expect is None else expect
        return max(REL * abs(e), abs_ns(self.floor_ns, self.ops) + self.own_ci_ns)

    def ok(self):
        if self.unjudged:
            return True
        if self.kind == "value":
            return self.got is not None and abs(self.got - self.expect) <= self.tolerance()
        if self.kind == "hidden":  # value null, with a bound >= the truth (within tolerance) and near the stage
            return self.got is None and self.bound is not None and \
                self.bound >= self.expect - self.tolerance() and \
                self.bound <= max(STAGE_SLACK * self.stage, self.stage + abs_ns(self.floor_ns))
        if self.kind == "equals":
            return self.got == self.expect
        raise ValueError(self.kind)

    def cells(self):
        if self.kind == "equals":
            return str(self.expect), str(self.got)
        exp = f"{self.expect:.0f}" if self.kind == "value" else \
            f"hidden, truth {self.expect:.0f}, stage {self.stage:.0f}"
        if self.got is None:
            got = f"unobservable <= {self.bound:.0f}" if self.bound is not None else "null (no bound)"
        else:
            got = f"{self.got:.0f}"
        return exp, got


def value(p):
    return None if p is None else p.get("value_ns")


def bound(p):
    return None if p is None else p.get("upper_bound_ns")


def logpbench(machine, bench, extra, timeout=900):
    out = os.path.join(TMP, f"{machine}-{bench}.json")
    run(["local", "--bench", bench, "--emulate", spec(machine), "--json", out, "-q"] + extra, timeout=timeout)
    doc = load(out)
    assert doc["status"] == "complete", (machine, bench, doc.get("status"), doc.get("error"))
    cost = doc.get("meta", {}).get("tsc", {}).get("timer_cost_ns")
    if isinstance(cost, (int, float)) and cost > 0:
        TIMER["ns"] = max(TIMER["ns"], cost)
    return doc


def measured(p, a, b, combine):
    """The stage's own time as the method measured it (its o_s and o_r rows are held to the truth on their
    own): the AM layer's per-message work rides on emulated overheads of 150-200 ns, and a bound must be
    within 20% of the stage it sits on, not of the stage's emulated part alone. 0 when either is missing."""
    x, y = value(p.get(a)), value(p.get(b))
    return combine([x, y]) if x is not None and y is not None else 0


def gap_rows(machine, method, t, p, seen, ni_visible, rows, key_ni="g_ni", stage=None, ops=1):
    """The paper's g (what the method sees) and the NI's own gap: its value when visible, else hidden behind
    the stage whose time is `stage`. ops: the operations one message of that stage spans (Row.ops)."""
    rows.append(Row(machine, method, "g (method's sense)", seen, value(p.get("g" if method != "kielmann" else "g0")),
                    ops=ops))
    gni = p.get(key_ni)
    if ni_visible:
        rows.append(Row(machine, method, "g_ni", gap_mean(t), value(gni)))
    else:
        rows.append(Row(machine, method, "g_ni", t["g"], value(gni), bound(gni), kind="hidden", stage=stage))


def signature_rows(machine, name, t):
    """The signature's rows: run on `machine`, judged against truth t. The signature publishes no o_r: its
    o_s_plus_o_r (g' - Delta) is the requester's cost per pair, o_r_remainder that pair less o_s. On the
    emulated NI the empty poll inside o_s costs ~nothing, so they are the truth's o_s + o_r and o_r."""
    rows = []
    d = logpbench(machine, "signature", ["--runs", "1"])
    p = d["parameters"]
    rows.append(Row(name, "signature", "o_s", o_s(t), value(p["o_s"])))
    # The pair is two operations (the request's send, the reply's receive) and the remainder holds the receive
    # with the Delta loop's own stamps: each gets two operations' timer reads. Fast state (floor 50 ns, timer
    # 20 ns): meiko's pair read 3398-3502 for 3300, perbyte's 3807-3825 for 3600 and its remainder 2383 for
    # 2200, where one operation's allowance is 180 ns.
    rows.append(Row(name, "signature", "o_s_plus_o_r", o_s(t) + o_r(t), value(p.get("o_s_plus_o_r")), ops=2))
    rows.append(Row(name, "signature", "o_r_remainder", o_r(t), value(p.get("o_r_remainder")), ops=2))
    # L = RTT/2 - o_s_plus_o_r takes the pair's two operations off (moderated, fast state: 1792 for 2000).
    rows.append(Row(name, "signature", "L", latency(t), value(p["L"]), ops=2))
    rows.append(Row(name, "signature", "rtt", rtt(t), value(p["rtt"])))
    steady = sig_steady(t)
    if steady == gap_mean(t) and gap_mean(t) > 1.05 * max(t["os"] + t["orr"], rtt(t) / t["W"], turnaround(t)):
        bott = "network interface"
    elif turnaround(t) > 1.1 * (t["os"] + t["orr"]) and turnaround(t) >= max(rtt(t) / t["W"], gap_mean(t)):
        bott = "replier"
    elif rtt(t) / t["W"] > t["os"] + t["orr"]:
        bott = "capacity"
    else:
        bott = "processor"
    if t.get("h"):
        rows.append(Row(name, "signature", "replier service", turnaround(t), value(p.get("replier_service"))))
    pair = value(p.get("o_s_plus_o_r")) or 0
    # A steady state set by the requester's pair or the replier's turnaround spans two operations (a send and a
    # receive), each with its timer reads: ConnectX-like, slow state, its replier's turnaround read 541 ns for
    # 350 in one run and the steady state 573.
    gap_rows(name, "signature", t, p, steady, bott == "network interface", rows,
             stage=max(t["os"] + t["orr"], rtt(t) / t["W"], turnaround(t), pair),
             ops=2 if bott in ("processor", "replier") else 1)
    rows.append(Row(name, "signature", "bottleneck", bott, p["g"].get("bottleneck"), kind="equals"))
    # The replier's own core, measured: its timed polls' mean against their median (runs[].replier_polls). The
    # VM's ticks part them by about 5% (slow state: mean 3017 against median 2855 ns on the replier machine).
    # In the VM's fast state the replier's core was seen taken far more (modern: mean 2941 against 2254 ns,
    # +30%), every burst then waits on it, and the steady state holds that time (g 2527 for 2200, named the
    # network interface). The machine then does not deliver the emulated parameters the truth assumes: the
    # steady-state rows are shown but not judged, and the output says why.
    # (Where the replier could set the steady state: see below.)
    polls = (d.get("runs") or [{}])[0].get("replier_polls") or {}
    mean, median = polls.get("mean_ns"), polls.get("median_ns")
    g_got = value(p.get("g"))
    # Only where the replier can set the steady state: its mean time per request reaches it (a capacity-bound
    # machine's replier idles between requests, and its mean then holds ticks that cost the stream nothing).
    if (isinstance(mean, (int, float)) and isinstance(median, (int, float)) and median > 0
            and mean > REPLIER_TAKEN * median and g_got is not None and mean >= 0.9 * g_got):
        why = (f"the replier's core was taken: its polls averaged {mean:.0f} ns against a median of {median:.0f} "
               f"(+{100 * (mean / median - 1):.0f}%, over {REPLIER_TAKEN:.2f}x)")
        for r in rows:
            if r.param in ("g (method's sense)", "g_ni", "bottleneck"):
                r.unjudged = why
    return rows


def rows_for(machine, truth_of=None):
    """Runs every method on `machine`; judges against truth_of's parameters (default: its own)."""
    t = M[truth_of or machine]
    rows = []
    name = machine if truth_of is None else f"{machine} as {truth_of}"

    rows += signature_rows(machine, name, t)

    sizes = "8,4096,32768" if "G" in t else "8"
    common = ["--messages", "2000", "--bell-runs", "3", "--runs", "1"]
    # Under jitter q = 8 is too shallow: sends go in halves of q, and four gaps of g + Exp(J g / L) can drain
    # faster than four sends refill them, so the NI idles. The flood's doubling stops once a doubling gains
    # under 3%, and each gains less (cloud: q 8 -> 16 gave 2503 -> 2462 ns, q 16 -> 32 stopped there): its
    # time per message read 2495-2578 for 2400 at q = 8, 2424-2430 at q = 32. Bell's q, set as a user would.
    deep = ["--queue-depth", "32"] if M[machine].get("jitter") else []
    d = logpbench(machine, "flood", ["--sizes", sizes] + common + deep)
    p = d["parameters"]
    seen = flood_gap(t)
    ni = gap_mean(t) > 1.05 * max(o_s(t, 8), o_r(t, 8))
    gap_rows(name, "flood", t, p, seen, ni, rows,
             stage=max(o_s(t, 8), o_r(t, 8), measured(p, "o_s_completion", "o_r_stream", max)))
    # The emulated NI hands up one frame per poll unless batch= is set, so a stream's cost per message is o_r.
    rows.append(Row(name, "flood", "o_s (overlap)", o_s(t, 8), value(p.get("o_s_completion"))))
    rows.append(Row(name, "flood", "o_r (overlap)", o_r(t, 8), value(p.get("o_r_stream"))))
    rows.append(Row(name, "flood", "rtt (EEL, 8 B)", rtt(t, 8), value(p["rtt"])))
    if "G" in t:
        Gseen = max(t["G"], t["a"], t["b"])
        rows.append(Row(name, "flood", "G (ns/B x 1000)", Gseen * 1000, (value(p["G"]) or 0) * 1000))

    if "G" in t:
        d = logpbench(machine, "overlap", ["--sizes", "8,4096,32768"] + common)
        for e in d["per_size"]:
            n = e["bytes"]
            rows.append(Row(name, "overlap", f"o_s({n})", o_s(t, n), value(e["o_s_completion"])))
            rows.append(Row(name, "overlap", f"o_r({n})", o_r(t, n), value(e["o_r_stream"])))

    # Under jitter, one Kielmann run is too few for its L by Table 1 (RTT(1) - RTT(0)/2 - o_s - o_r): each
    # RTT is the median of at most 60 round trips (the paper's cap), and with an exponential tail of mean J
    # per latency that median scatters by about 1.6 J / sqrt(60). On the cloud machine six single runs gave
    # L 16.8-18.4 us for 17.5 (the run's own interval said +-2.0 us), two of six beyond the 5%; the mean of
    # 5 runs (combine_runs) brings the scatter to about a third of the tolerance, in 1.5 s; one run of 24110 in
    # 30 (six seeds) took its 5-run mean to 19070, so 9 runs, in about 2.7 s.
    kruns = "9" if M[machine].get("jitter") else "1"
    d = logpbench(machine, "kielmann", ["--sizes", "4096", "--runs", kruns])
    p = d["parameters"]
    rows.append(Row(name, "kielmann", "o_s(1)", o_s(t, 1), value(p["o_s"])))
    rows.append(Row(name, "kielmann", "o_r(1)", o_r(t, 1), value(p["o_r"])))
    rows.append(Row(name, "kielmann", "rtt", rtt(t), value(p["rtt"])))
    # Under jitter the paper's caps leave L by Table 1 uncertain beyond the 5%, and the method says so: its
    # 95% interval over 5 runs was 950-1260 ns for 17517 (six seeds here; their run means 17840-19070,
    # single runs 16690-24110). The row is then held to that interval, which itself must be within 10% of
    # L, so a method cannot pass by claiming ignorance.
    ci = (p["L"] or {}).get("ci95_ns") if M[machine].get("jitter") else None
    own = min(ci, JITTER_CI_CAP * latency(t)) if isinstance(ci, (int, float)) and ci > 0 else 0.0
    rows.append(Row(name, "kielmann", "L (Table 1)", latency(t), value(p["L"]), own_ci_ns=own, ops=2))
    ni = gap_mean(t) > 1.05 * max(t["os"], t["orr"])
    gap_rows(name, "kielmann", t, p, flood_gap(t, 0), ni, rows, stage=max(t["os"], t["orr"], measured(p, "o_s", "o_r", max)))
    if "G" not in t:
        for e in d["per_size"]:
            if e["bytes"] in (0, 1, 1024):
                rows.append(Row(name, "kielmann", f"o_s({e['bytes']})", o_s(t, e["bytes"]), value(e["o_s"])))

    sizes = "8,4096" if "G" in t else "8"
    d = logpbench(machine, "availability", ["--sizes", sizes, "--runs", "1"])
    for e in d["per_size"]:
        n = e["bytes"]
        rows.append(Row(name, "availability", f"send overhead({n})", o_s(t, n), value(e["send"]["overhead"])))
        rows.append(Row(name, "availability", f"recv overhead({n})", o_r(t, n), value(e["recv"]["overhead"])))
    return rows


def table(rows):
    w = [max(len(x) for x in col) for col in zip(*[(r.machine, r.method, r.param, *r.cells()) for r in rows])]
    head = ("machine", "method", "parameter", "set / observable", "recovered")
    w = [max(a, len(b)) for a, b in zip(w, head)]
    line = lambda c: "  ".join(x.ljust(n) for x, n in zip(c, w))  # noqa: E731
    out = [line(head) + "  verdict", line(["-" * n for n in w]) + "  -------"]
    for r in rows:
        verdict = "  not judged: " + r.unjudged if r.unjudged else ("  ok" if r.ok() else "  MISS")
        out.append(line((r.machine, r.method, r.param, *r.cells())) + verdict)
    return "\n".join(out)


# A machine whose smaller overhead is under CLASSIFY_SHARE floors cannot be emulated faithfully: the real cross-core
# transfer no longer fits inside its pads, and the signature's per-pair excess then reads as an NI gap (connectx
# in the slow state: bottleneck "network interface" for "processor", 2 runs of 4). Such a machine waits for the
# fast state, probing every 2 s for at most FAST_STATE_WAIT_S. If it never comes, its values are judged with
# the floor, and its classifications (which stage limits, whether the NI's gap is hidden), which turn on a 5%
# margin the machine's own transfer exceeds, are shown but not judged, and the output says so.
FAST_STATE_WAIT_S = 30
# The floor a machine's classifications need: at most its smaller overhead / CLASSIFY_SHARE, or ABS_NS. In the
# slow state (floor 220-270 ns) fast_ni's flood (overheads 1000/800) called its NI the limit 1 run of 3,
# capacity's signature (500/500) likewise, connectx (150/200) 2 of 4; in the fast state (floor 50-65) all held.
CLASSIFY_SHARE = 4


def rows_on_floor(machine):
    """The machine's rows, each with the floor probed before and after its runs (the larger)."""
    t = M[machine]
    limit = max(ABS_NS, min(t["os"], t["orr"]) / CLASSIFY_SHARE)
    start = time.monotonic()
    before = probe_floor_ns()
    while before > limit and time.monotonic() - start < FAST_STATE_WAIT_S:
        time.sleep(2)
        before = probe_floor_ns()
    waited = time.monotonic() - start
    if waited > 1:
        print(f"{machine}: waited {waited:.0f} s for the machine's fast state (floor {before:.0f} ns, this machine "
              f"needs at most {limit:.0f})" +
              ("" if before <= limit else ": it did not come; values are judged on the floor, classifications not"))
    rows = rows_for(machine)
    if before > limit:
        for r in rows:
            if r.kind in ("equals", "hidden"):
                r.unjudged = f"floor {before:.0f} ns > {limit:.0f}"
    after = probe_floor_ns()
    for r in rows:
        r.floor_ns = max(before, after)
    print(f"{machine}: floor (half the bare cache-line ping-pong) {before:.0f} ns before the runs, {after:.0f} ns "
          f"after; values are held to max({REL:.0%}, {abs_ns(max(before, after)):.0f} ns)")
    return rows


def check_machine(machine):
    rows = rows_on_floor(machine)
    print(table(rows))
    # Negative control: the same runs' figures judged against another machine must miss somewhere.
    other = NEGATIVE[machine]
    t_other = M[other]
    miss = 0
    for r in rows:
        if r.kind != "value" or r.got is None:
            continue
        # Re-judge each recovered number against the other machine's expected value for the same row.
        alt = expected_for(r, t_other)
        if alt is not None and abs(r.got - alt) > r.tolerance(alt):
            miss += 1
    print(f"negative control: {miss} of the figures miss {other}'s truth")
    assert miss > 0, f"{machine}'s figures also pass as {other}: the check cannot tell machines apart"
    bad = [r for r in rows if not r.ok()]
    assert not bad, f"{len(bad)} row(s) missed:\n" + table(bad)


def expected_for(r, t):
    """The expected value of row r for truth t (None where it does not translate)."""
    p, meth = r.param, r.method
    if p in ("o_s", "o_s(1)", "o_s (overlap)"):
        return o_s(t, 1 if "(1)" in p else (8 if "overlap" in p else 0))
    if p in ("o_r", "o_r(1)", "o_r (overlap)", "o_r_remainder"):
        return o_r(t, 1 if "(1)" in p else (8 if "overlap" in p else 0))
    if p == "o_s_plus_o_r":
        return o_s(t) + o_r(t)
    if p in ("L", "L (Table 1)"):
        return latency(t)
    if p == "rtt":
        return rtt(t)
    if p.startswith("rtt (EEL"):
        return rtt(t, 8)
    if p == "g (method's sense)":
        return sig_steady(t) if meth == "signature" else flood_gap(t, 8 if meth == "flood" else 0)
    if p.startswith("send overhead("):
        return o_s(t, int(p[p.index("(") + 1:-1]))
    if p.startswith("recv overhead("):
        return o_r(t, int(p[p.index("(") + 1:-1]))
    return None


def main():
    which = sys.argv[3]
    if which == "all":
        rows = []
        for m in M:
            rows += rows_on_floor(m)
        print(table(rows))
        bad = [r for r in rows if not r.ok()]
        print(f"\n{len(rows) - len(bad)} passed, {len(bad)} failed")
        sys.exit(1 if bad else 0)
    check_machine(which)
    print(f"truth {which}: ok")


if __name__ == "__main__":
    main()
