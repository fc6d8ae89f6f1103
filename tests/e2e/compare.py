#!/usr/bin/env python3
"""End-to-end test of `logpbench compare` on real shm runs whose difference is known from the emulation.

1. Raw shm against the same shm emulating Culler et al.'s Paragon (os=1.4us, or=2.2us, g=7.6us, L=6.3us):
   the emulator pads a send to o_s from its entry and a receive to o_r from the start of polling, so the
   added o_s is the emulated 1.4 us less the raw send's own cost, plus the emulated run's residual (below).
   It must be at least 1.4 us less the raw o_s (within the truth matrix's tolerance, 5% or 100 ns) and at
   most 1.4 us plus RESIDUAL_MAX: a lost pad or one applied twice fails. Holding an emulated figure to
   5% is the truth matrix's job (tests/e2e/truth.py, in the normal suite); this test checks what compare
   does with real runs, under the sanitizers too, where the unpadded path runs several times slower.
2. Two emulated machines that differ only in their overheads (the Paragon, and the Paragon with o_s and o_r one
   microsecond larger): the added o_s and o_r must be the emulated 1000 ns, the added RTT 2 x 2000 ns, and L
   must show no difference. Each of o_s, o_r, L and RTT is allowed, besides its interval, the larger of the two
   runs' residuals for that figure (for L, whose residuals take either sign, their sizes' sum). A run's
   residual is its figure less the emulated part (o_s less 1400 or 2400 ns; RTT less 2 (o_s + o_r + L); L's is
   RTT's half less those of o_s and o_r, of either sign). It is the real path that no pad covers (the AM
   layer's work outside the pads, the poll loop, the dispatch, the pads' overshoot) plus the estimator's bias
   (the signature's o_s averages every leading point within 3% of the cheapest). That real path runs at
   whatever speed the machine has during that run: on a VM whose speed changes several-fold within a minute it
   changes by up to its own size, and no interval of a single run holds it. Seen in sanitized runs: o_s
   residuals 84 and 181 ns (added o_s 1098 for 1000); an added o_r of 1260 for 1000. Each residual must itself
   be >= 0 within its interval (L's: its size) and below RESIDUAL_MAX, well under the emulated difference, so a
   pad that undershoots, a lost pad or one applied twice still fails. Each machine is measured once: the only
   retry is scripts/test's rerun of a failed test, which it names.

Then the lines, the JSON, the CSV, the warnings, the refusals and the report's figure.

usage: compare.py LOGPBENCH_BINARY SOURCE_DIR all
"""
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, SRC, expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-compare-")
PARAGON = "os=1.4us,or=2.2us,g=7.6us,L=6.3us"
HEAVY = "os=2.4us,or=3.2us,g=7.6us,L=6.3us"  # the Paragon with o_s and o_r 1000 ns larger: still g > o_s + o_r
SIG = ["--bench", "signature", "--runs", "1", "--max-burst", "32", "--deltas", "0,20us", "-q"]
REL, ABS_NS = 0.05, 100.0  # tests/e2e/truth.py's tolerance for a recovered emulated parameter
# Each run's figure less its emulated part is the real path under the pads plus the estimator's bias. How
# fast that path runs changes between runs by more than either run's interval holds: RTT 83 ns off in a
# sanitized CI run under the suite's load, 156 ns in a CI run on a VM that changes speed (residuals 280 and
# 436 ns); o_s 98 ns off in a sanitized run (residuals 84 and 181 ns), o_r 260 ns in another. Each
# difference is allowed, besides its interval, the larger residual of the two runs for that figure (L: both sizes).
# The signature publishes o_s + o_r as one figure (g' - Delta: its o_r is a remainder, issue 36).
EMULATED = {"o_s": {"paragon": 1400.0, "heavy": 2400.0}, "o_s_plus_o_r": {"paragon": 3600.0, "heavy": 5600.0},
            "L": {"paragon": 6300.0, "heavy": 6300.0},
            "rtt": {"paragon": 2 * (1400.0 + 2200.0 + 6300.0), "heavy": 2 * (2400.0 + 3200.0 + 6300.0)}}
# A residual above this is no longer "the real path under the pads" on any machine seen (raw shm o_s and
# o_r 20-110 ns and RTT 0.1-1 us, sanitized a few times that): an overhead's pad applied twice (+1400 ns
# or more), an emulated parameter ignored or a pad applied twice in a round trip lands beyond it. L is
# RTT/2 - o_s - o_r, so its residual is theirs combined and may have either sign: its size is held.
RESIDUAL_MAX = {"o_s": 1000.0, "o_s_plus_o_r": 2000.0, "L": 2500.0, "rtt": 5000.0}  # the sum: both overheads
LINE = re.compile(r"^(\S+)-vs-(\S+) (\S+): (\S+) (.*?), (\S+) (.*?), added (.*)$")


def signature(name, emulate=None):
    out = os.path.join(TMP, name + ".json")
    run(["local", *SIG, "--json", out] + (["--emulate", emulate] if emulate else []), timeout=300)
    doc = load(out)
    assert doc["status"] == "complete", (name, doc.get("status"), doc.get("error"))
    return out


def compare(*args):
    p = run(["compare", *args])
    return p.stdout


def lines_of(stdout):
    return [l for l in stdout.splitlines() if LINE.match(l)]


def row(doc, quantity, pair=0):
    for r in doc["comparisons"][pair]["rows"]:
        if r["quantity"] == quantity:
            return r
    raise AssertionError(f"no {quantity} in {doc['comparisons'][pair]['rows']}")


def residuals(c, q):
    """Each run's figure q less its emulated part: the path no pad covers. Each is >= 0 within its interval
    (less than 0 is a pad that undershoots or is lost) and below RESIDUAL_MAX[q] within it; L's is held by
    its size."""
    out = []
    for name, emulated in EMULATED[q].items():
        r = row(c, q)[name]
        res = r["value"] - emulated
        if q == "L":
            assert abs(res) <= RESIDUAL_MAX[q], (q, name, r, emulated, res)
        else:
            # Within its interval on both sides: a sanitized run once read the Paragon's o_r at 3969 +- 1421
            # ns for 2200 (a residual of 1769 the run itself could not pin down); a pad applied twice reads
            # 2200 more with the interval of an ordinary run, and still fails.
            assert -r["ci95"] <= res <= RESIDUAL_MAX[q] + r["ci95"], (q, name, r, emulated, res)
        out.append(abs(res) if q == "L" else max(res, 0.0))
    return out


def heavy_rows(base, heavy):
    """The emulated-difference rows of one attempt, (name, expected, added, half-width, allowed, ok), and
    the two runs' residuals of o_s and RTT."""
    out = os.path.join(TMP, "paragon-vs-heavy.json")
    compare(base, heavy, "--names", "paragon,heavy", "--json", out)
    c = load(out)
    res = {q: residuals(c, q) for q in EMULATED}
    rows = []
    for q, expect in (("o_s", 1000.0), ("o_s_plus_o_r", 2000.0), ("L", 0.0), ("rtt", 4000.0)):
        a = row(c, q)["added"]
        assert a["value"] is not None and a["ci95"] is not None, (q, a)
        # Residuals of o_s, o_s + o_r and RTT are >= 0, so two of them differ by at most the larger; L's take
        # either sign, so two differ by up to the sum of their sizes (a sanitized CI run: L -606 +- 84 ns,
        # the larger size alone allowing 518).
        half = a["ci95"] + (sum(res[q]) if q == "L" else max(res[q]))
        rows.append((q, expect, a["value"], a["ci95"], half, abs(a["value"] - expect) <= half))
    return rows, res


def test_all():
    raw = signature("raw")
    emu = signature("paragon", PARAGON)

    # ---- raw vs the emulated Paragon: the lines, exactly as labs and scripts read them
    jout, cout = os.path.join(TMP, "cmp.json"), os.path.join(TMP, "cmp.csv")
    stdout = compare(raw, emu, "--names", "raw,paragon", "--json", jout, "--csv", cout)
    print(stdout)
    ls = lines_of(stdout)
    # The line's format on RTT, which no clock step hides (raw shm's o_s may be within one step of zero: a
    # bound, its difference n/a, below).
    os_line = [l for l in ls if l.startswith("raw-vs-paragon rtt: ")]
    assert len(os_line) == 1, stdout
    m = LINE.match(os_line[0])
    assert m.group(4) == "raw" and m.group(6) == "paragon", os_line
    for part in (m.group(5), m.group(7), m.group(8)):
        assert re.fullmatch(r"-?\d+\.\d ± \d+\.\d ns", part), (part, os_line)
    # The knob that makes the difference is named, and so is nothing that does not change a figure.
    assert re.search(r"^warning: raw and paragon differ in knobs that change figures: .*emulate \(not set\) vs " +
                     re.escape(PARAGON), stdout, re.M), stdout
    assert "json " not in stdout.split("warning:")[1].split("\n")[0], stdout

    c = load(jout)
    assert c["schema"] == "logpbench-compare/1" and c["baseline"] == "raw"
    assert [r["name"] for r in c["runs"]] == ["raw", "paragon"]
    assert c["lines"] == ls, (c["lines"], ls)
    assert any("emulate" in w for w in c["warnings"]), c["warnings"]
    rd, ed = load(raw)["parameters"], load(emu)["parameters"]
    for q in ("o_s", "o_s_plus_o_r", "L", "g", "rtt"):
        r = row(c, q)
        a, b = rd[q], ed[q]
        assert r["raw"]["value"] == a["value_ns"] and r["paragon"]["value"] == b["value_ns"], (q, r)
        if a["value_ns"] is not None and b["value_ns"] is not None:
            assert abs(r["added"]["value"] - (b["value_ns"] - a["value_ns"])) < 1e-6
            assert abs(r["added"]["ci95"] - math.hypot(a["ci95_ns"], b["ci95_ns"])) < 1e-6, (q, r)
        else:  # a null stays null, and the difference says why
            assert r["added"]["value"] is None and "has no value" in r["added"]["error"], (q, r)
    added_os = row(c, "o_s")["added"]
    raw_os = rd["o_s"]["value_ns"]
    if raw_os is None:
        # Within one clock step of zero (a 10 ns TSC step): a bound, so the difference is n/a, never a number.
        assert rd["o_s"]["upper_bound_ns"] is not None and "clock step" in rd["o_s"]["error"], rd["o_s"]
        assert added_os["value"] is None and "has no value" in added_os["error"], added_os
        print(f"raw vs Paragon: raw o_s at most {rd['o_s']['upper_bound_ns']:.1f} ns (one clock step): added n/a")
    else:
        # The emulator pads the send to 1400 ns from its entry, replacing the raw send's own cost (at most raw
        # o_s); what the pad does not cover (the residual) comes on top, up to RESIDUAL_MAX.
        expect_lo, expect_hi = 1400.0 - raw_os, 1400.0 + RESIDUAL_MAX["o_s"]
        tol = max(REL * 1400.0, ABS_NS)
        print(f"raw vs Paragon: added o_s {added_os['value']:.1f} ± {added_os['ci95']:.1f} ns; emulated 1400 ns "
              f"(raw o_s {raw_os:.1f} ns replaced by the padding; Paragon's residual "
              f"{ed['o_s']['value_ns'] - 1400.0:.1f} ns), allowed {expect_lo - tol:.0f} to {expect_hi:.0f} ns")
        assert expect_lo - tol <= added_os["value"] <= expect_hi, (added_os, raw_os)

    # The CSV: the same rows, the same numbers.
    with open(cout) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(ls), (len(rows), len(ls))
    by_q = {r["quantity"]: r for r in rows}
    added_rtt = row(c, "rtt")["added"]
    assert float(by_q["rtt"]["added"]) == float(f"{added_rtt['value']:.6g}")
    assert float(by_q["rtt"]["added_ci95"]) == float(f"{added_rtt['ci95']:.6g}")
    assert by_q["rtt"]["baseline"] == "raw" and by_q["rtt"]["other"] == "paragon" and by_q["rtt"]["unit"] == "ns"

    # ---- two emulated machines: the known difference within the interval
    heavy = signature("heavy", HEAVY)
    rows, res = heavy_rows(emu, heavy)
    for q, r in res.items():
        print(f"paragon-vs-heavy: each run's {q} residual ({q} - its emulated part): " +
              ", ".join(f"{n} {x:.1f} ns" for n, x in zip(EMULATED[q], r)))
    for q, expect, added, half_width, allowed, ok in rows:
        print(f"paragon-vs-heavy {q}: emulated difference {expect:.0f} ns; added {added:.1f} ± {half_width:.1f} "
              f"(allowed ± {allowed:.1f}{'' if ok else ', miss'})")
        assert ok, (q, expect, added, half_width, allowed)

    # Default names: both runs are shm signatures, so A and B.
    stdout = compare(raw, emu)
    assert any(l.startswith("A-vs-B rtt: A ") for l in lines_of(stdout)), stdout
    # Three files: each compared with the first.
    stdout = compare(raw, emu, heavy, "--names", "raw,paragon,heavy")
    assert any(l.startswith("raw-vs-heavy rtt: ") for l in lines_of(stdout)), stdout

    # A run against itself: every difference is 0 and says the runs agree, not that a cost of 0 was resolved;
    # against the Paragon, o_s's 1400 ns is resolved and says nothing more.
    same = [l for l in lines_of(compare(raw, raw, "--names", "raw,again")) if " added n/a" not in l]
    assert same and all(l.endswith("(not resolved: the runs agree within it)") for l in same), same
    assert not os_line[0].endswith("(not resolved: the runs agree within it)"), os_line

    # A null parameter: shown with its reason, never a number; the difference n/a.
    doc = load(emu)
    doc["parameters"]["o_s_plus_o_r"] = {"value_ns": None, "ci95_ns": None, "upper_bound_ns": 2500.0,
                                "error": "hidden (made null by tests/e2e/compare.py)"}
    nul = os.path.join(TMP, "null.json")
    with open(nul, "w") as f:
        json.dump(doc, f)
    # Against the Paragon itself, whose pair has a value (the raw shm run's may be hidden: a sanitized one's
    # Delta curves did not rise, and its line named both runs' reasons).
    stdout = compare(emu, nul, "--names", "paragon,nulled")
    l = [x for x in lines_of(stdout) if x.startswith("paragon-vs-nulled o_s_plus_o_r: ")][0]
    assert "nulled hidden, at most 2500.0 ns (hidden (made null by tests/e2e/compare.py))" in l, l
    assert l.endswith("added n/a (nulled has no value: hidden (made null by tests/e2e/compare.py))"), l

    # Refusals: exit 2 and a message that says what is wrong.
    expect_fail(["compare", raw], "at least two", codes=(2,))
    expect_fail(["compare", raw, os.path.join(TMP, "nope.json")], "cannot open", codes=(2,))
    bad = os.path.join(TMP, "bad.json")
    with open(bad, "w") as f:
        f.write("{ not json")
    expect_fail(["compare", raw, bad], "not valid JSON", codes=(2,))
    mdl = os.path.join(TMP, "model.json")
    run(["model", emu, "--topology", "crossbar", "--ranks", "4", "--json", mdl])
    expect_fail(["compare", raw, mdl], "not a measured result", codes=(2,))
    expect_fail(["compare", raw, jout], "not a measured result", codes=(2,))
    disjoint = load(raw)
    disjoint["parameters"] = {"sync_iter": {"value_ns": 1.0, "ci95_ns": 0.1}}
    disjoint["meta"]["flags"]["bench"] = "all-to-all"
    dj = os.path.join(TMP, "disjoint.json")
    with open(dj, "w") as f:
        json.dump(disjoint, f)
    expect_fail(["compare", raw, dj], "share no parameter", codes=(2,))
    expect_fail(["compare", raw, emu, "--names", "only-one"], "1 name(s) for 2 files", codes=(2,))

    # The report: the figure (Bell et al. Fig. 3) and the section, through --compare.
    rep = os.path.join(TMP, "report")
    r = subprocess.run([os.path.join(SRC, "scripts", "report"), "--compare", raw, emu, "--names", "raw,paragon", rep],
                       capture_output=True, text=True, timeout=180, env={**os.environ, "LOGPBENCH": BIN})
    assert r.returncode == 0, r.stdout + r.stderr
    md = open(os.path.join(rep, "report.md")).read()
    assert "## Comparison" in md and "| raw-vs-paragon | raw | paragon | added |" in md and "| o_s |" in md, md
    assert "## LogGP side by side" in md, md
    png = os.path.join(rep, "compare-compare.png")
    assert os.path.getsize(png) > 10000, png
    assert os.path.exists(os.path.join(rep, "compare.csv"))
    # The comparison's JSON given to the report directly works too (the existing usage).
    rep2 = os.path.join(TMP, "report2")
    r = subprocess.run([os.path.join(SRC, "scripts", "report"), raw, jout, rep2], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert os.path.getsize(os.path.join(rep2, "cmp-compare.png")) > 10000


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
