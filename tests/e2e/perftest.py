#!/usr/bin/env python3
"""perftest's interface, end to end: -a, --bench bw, --csv, `logpbench quick`, the progress
line on a terminal, and bad input. Each subcommand is one ctest test.

usage: perftest.py LOGPBENCH_BINARY SOURCE_DIR TEST [ARGS]
Runs the real binary over real transports (shm; DPDK memif between two local processes for bw_dpdk).
"""
import csv
import glob
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-perftest-")
ALL = [2 ** k for k in range(1, 24)]  # perftest's -a: 2 .. 2^23
LAT_HEAD = ["#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]",
            "99% percentile[usec]", "99.9% percentile[usec]", "t_typical 95% CI[usec]"]
BW_HEAD = ["#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]", "BW average[Gb/sec]",
           "BW average 95% CI[MB/sec]"]


def transport_args(transport):
    """The options of a transport here: verbs needs a device (in the Soft-RoCE guest of scripts/rxe-lab,
    LAB_PERFTEST=...) and, under qemu's TCG, a TSC the CPU does not call invariant."""
    if transport != "verbs":
        return ["--transport", transport]
    devs = sorted(os.path.basename(d) for d in glob.glob("/sys/class/infiniband/*"))
    dev = os.environ.get("LOGPB_RDMA_DEV") or (devs[0] if devs else None)
    if not dev:
        print("SKIP: no RDMA device here; scripts/rxe-lab runs this inside a Soft-RoCE guest (LAB_PERFTEST)")
        sys.exit(77)
    return ["--transport", "verbs", "-d", dev, "--allow-variant-tsc"]


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def table_rows(stdout, first_column):
    """The rows printed under the header line that starts with first_column (up to the next line that is
    not a row of numbers)."""
    lines = stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if l.split()[:1] == [first_column])
    rows = []
    for l in lines[start + 1:]:
        f = l.split()
        if not f or not f[0].isdigit():
            break
        rows.append(f)
    return rows


def test_all_sizes():
    # pingpong -a: one latency row per size 2 .. 2^23 on screen, in the JSON and in the CSV; sizes past a
    # frame are bulk stores of that many bytes, so 8 MiB takes visibly longer than 2 bytes.
    out, csvp = os.path.join(TMP, "a.json"), os.path.join(TMP, "a.csv")
    p = run(["local", "--bench", "pingpong", "-a", "-n", "30", "--warmup", "3", "--runs", "2", "--json", out,
             "--csv", csvp, "-q"], timeout=240)
    doc = load(out)
    assert doc["meta"]["flags"]["all"] is True
    assert doc["meta"]["transport"]["segment_bytes"] >= 2 * 2 ** 23, doc["meta"]["transport"]
    per = doc["pingpong"]["per_size"]
    assert [s["bytes"] for s in per] == ALL, [s["bytes"] for s in per]
    for run_rec in doc["runs"]:
        assert [s["bytes"] for s in run_rec["per_size"]] == ALL
        for s in run_rec["per_size"]:
            assert s["rtt"]["summary"]["n"] + s["lost"] == 30, s
    med = {s["bytes"]: s["rtt"]["value_ns"] for s in per}
    assert med[2 ** 23] > 10 * med[2], med  # 8 MiB copied each way out, not a 64-byte frame
    rows = table_rows(p.stdout, "#bytes")
    assert [int(r[0]) for r in rows] == ALL, p.stdout
    assert all(int(r[1]) == 30 for r in rows), rows
    head, body = read_csv(csvp)
    assert head == LAT_HEAD, head
    assert [int(r[0]) for r in body] == ALL
    for r in body:  # one way = RTT/2 in usec, the typical run's median
        assert float(r[2]) <= float(r[4]) <= float(r[3]), r
    typ = {int(r[0]): float(r[4]) for r in body}
    for s in per:
        k = s["typical_run"]
        rec = next(x for x in doc["runs"][k]["per_size"] if x["bytes"] == s["bytes"])
        assert abs(typ[s["bytes"]] * 2e3 - rec["rtt"]["summary"]["median_ns"]) < 1e-3 * rec["rtt"]["summary"]["median_ns"] + 1
    print({n: round(med[n] / 2e3, 2) for n in (2, 64, 4096, 65536, 2 ** 20, 2 ** 23)}, "us one way")


def check_bw(doc, stdout, sizes, runs, n):
    per = doc["bw"]["per_size"]
    assert [s["bytes"] for s in per] == sizes, per
    for s in per:
        avg, rate = s["bw_average_MBps"], s["msg_rate_Mpps"]
        # Payload bytes only, as perftest counts: the frame alone (0 bytes) moves no bandwidth, only messages.
        assert len(avg["runs"]) == runs and all(x is not None and (x > 0 if s["bytes"] else x == 0) for x in avg["runs"]), s
        assert all(x is not None and x > 0 for x in rate["runs"]), s
        assert s["iterations"] == n
        # One figure seen three ways: MB/sec = Mpps x bytes / 2^20 (perftest's MB), Gb/sec = MB/sec x 2^20 x 8 / 1e9.
        for k in range(runs):
            b = s["bytes"]
            assert abs(avg["runs"][k] - rate["runs"][k] * 1e6 * b / 2 ** 20) <= 1e-6 * avg["runs"][k] + 1e-9
            assert abs(s["bw_average_Gbps"]["runs"][k] - avg["runs"][k] * 2 ** 20 * 8 / 1e9) <= 1e-6 * avg["runs"][k]
        assert s["bw_peak_MBps"]["value"] >= max(avg["runs"]) * 0.999, s
        if runs >= 2:
            assert avg["ci95"] is not None and avg["ci95"] >= 0, s
    for r in doc["runs"]:
        for s in r["per_size"]:
            assert not s["lost"] and s["seconds"] > 0, s
    # Every message was sent once as a one-way request: (warmup + n) per size per run.
    c = doc["meta"]["am"]["counters"]
    assert c["oneway_sent"] >= runs * len(sizes) * n, c
    rows = table_rows(stdout, "#bytes")
    assert [int(r[0]) for r in rows] == sizes, stdout
    assert "BW peak[MB/sec]    BW average[MB/sec]" in stdout or "BW peak[MB/sec] BW average[MB/sec]" in stdout, stdout
    return {s["bytes"]: (round(s["bw_average_MBps"]["value"], 1), round(s["msg_rate_Mpps"]["value"], 3)) for s in per}


def test_bw(transport="shm"):
    out, csvp = os.path.join(TMP, f"bw-{transport}.json"), os.path.join(TMP, f"bw-{transport}.csv")
    sizes, n, runs = [64, 65536], 3000, 2
    p = run(["local"] + transport_args(transport) + ["--bench", "bw", "--sizes", ",".join(map(str, sizes)), "-n", str(n),
             "--runs", str(runs), "--json", out, "--csv", csvp, "-q"], timeout=240)
    doc = load(out)
    figures = check_bw(doc, p.stdout, sizes, runs, n)
    head, body = read_csv(csvp)
    assert head == BW_HEAD, head
    assert [int(r[0]) for r in body] == sizes
    for r, s in zip(body, doc["bw"]["per_size"]):
        assert abs(float(r[3]) - s["bw_average_MBps"]["value"]) <= 1e-6 * s["bw_average_MBps"]["value"]
    if transport == "dpdk":
        c = doc["meta"]["transport"]["counters"]
        assert c["lost"] == 0, c
    # -s 0: the frame alone, the message rate of small AMs.
    out0 = os.path.join(TMP, f"bw0-{transport}.json")
    p0 = run(["local"] + transport_args(transport) + ["--bench", "bw", "-s", "0", "-n", "2000", "--runs", "1", "--json", out0, "-q"])
    check_bw(load(out0), p0.stdout, [0], 1, 2000)
    print(transport, figures, "MB/sec, Mpps")


def test_bw_all():
    # bw -a: every size, short.
    out = os.path.join(TMP, "bwa.json")
    p = run(["local", "--bench", "bw", "-a", "-n", "20", "--warmup", "2", "--runs", "1", "--json", out, "-q"], timeout=240)
    check_bw(load(out), p.stdout, ALL, 1, 20)


def test_quick(transport="shm"):
    out, csvp = os.path.join(TMP, f"quick-{transport}.json"), os.path.join(TMP, f"quick-{transport}.csv")
    t0 = time.time()
    p = run(["quick"] + transport_args(transport) + ["--json", out, "--csv", csvp, "-q"], timeout=120)
    wall = time.time() - t0
    doc = load(out)
    q = doc["quick"]
    for k in ("pingpong", "bw", "signature"):
        assert k in q["budgets"] and q["seconds"][k] > 0, q["seconds"]
    assert q["pingpong"]["parameters"]["rtt"]["value_ns"] > 0
    assert [s["bytes"] for s in q["bw"]["bw"]["per_size"]] == q["budgets"]["bw"]["sizes"]
    for key in ("o_s", "o_s_plus_o_r", "g", "L", "rtt"):  # the signature's: no o_r (issue 36)
        assert key in doc["parameters"], doc["parameters"].keys()
    for head in ("t_typical[usec]", "MsgRate[Mpps]", "value (us)"):
        assert head in p.stdout, p.stdout
    files = p.stdout.split("csv: ")[1:]
    assert [f.split()[0] for f in files] == [csvp, csvp[:-4] + "-latency.csv", csvp[:-4] + "-bw.csv"], p.stdout
    assert read_csv(csvp)[0][0] == "parameter"
    assert read_csv(csvp[:-4] + "-latency.csv")[0] == LAT_HEAD
    assert read_csv(csvp[:-4] + "-bw.csv")[0] == BW_HEAD
    print(f"quick over {transport}: {wall:.1f} s wall ({q['seconds']['total']:.1f} s measuring)")


def run_on_terminal(args, timeout=120):
    """Runs logpbench with stderr on a pseudo-terminal (stdout a pipe); returns (code, stderr text)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BIN] + args, stdout=subprocess.PIPE, stderr=slave, text=False)
    os.close(slave)
    got = b""
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=10)
    p.stdout.read()
    os.close(master)
    return p.returncode, got.decode(errors="replace")


def test_progress():
    # On a terminal a sweep shows percent done; in a pipe (here, and in every log) nothing is drawn.
    args = ["local", "--bench", "pingpong", "--sizes", "64,4096,65536,524288", "-n", "3000", "--runs", "2"]
    code, err = run_on_terminal(args)
    assert code == 0, err
    assert "% done" in err and "round trip 65536 B" in err, err
    assert "50% done" in err or "100% done" in err or "% done, about" in err, err
    p = run(args)
    assert "% done" not in p.stderr and "\r" not in p.stderr, p.stderr


def test_errors():
    two = (2,)
    expect_fail(["--bench", "pingpong", "-a", "--sizes", "8,64"], "not both", codes=two)
    expect_fail(["--bench", "bw", "-a", "-s", "64"], "not both", codes=two)
    expect_fail(["--bench", "signature", "-a"], "-a (every size 2 .. 2^23) is for a method over message sizes", codes=two)
    expect_fail(["local", "-N", "4", "--bench", "pairs", "-a"], "not --bench pairs", codes=two)
    expect_fail(["--bench", "bw", "-s", "64", "--sizes", "8"], "-s is one size", codes=two)
    expect_fail(["--bench", "bw", "--sizes", "8,4194304"], "exceed half", codes=two)
    expect_fail(["--bench", "bw", "--sizes", "0"], "not a positive integer", codes=two)
    expect_fail(["quick", "--bench", "pingpong"], "drop --bench", codes=two)
    expect_fail(["quick", "-n", "5"], "own budgets", codes=two)
    expect_fail(["quick", "-N", "4"], "quick measures one pair", codes=two)
    expect_fail(["--bench", "pingpong", "--csv"], "--csv", codes=two)
    # A CSV that could not be written is refused before the run.
    expect_fail(["--bench", "pingpong", "--csv", "/nonexistent/dir/x.csv"], "no directory /nonexistent/dir", codes=two)


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
