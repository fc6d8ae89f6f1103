"""--transport mpi: every method over Open MPI under scripts/mpirun-lab (vader shared memory),
a 4-rank k-to-one, a rank killed mid-run, runs without a launcher refused, and the sizes where the peers'
MPI tools go wrong (1 B, 4-6 KiB around Open MPI's eager/rendezvous switch, 64 KiB): no NaN, no negative
value and no availability outside [0, 1], whatever the checks say (a failed check explains a figure left out
as null, never one printed).
Invoked as mpi.py LOGPBENCH SOURCE_DIR TEST. ctest runs it RUN_SERIAL; the lab takes no CPU lock here."""
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lpbtest import BIN, SRC, expect_fail, load, main  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-mpi-e2e-")
LAB = os.path.join(SRC, "scripts", "mpirun-lab")
# Short runs: these tests are functional; figures belong to the labs (scripts/raw-vs-mpi).
QUICK = ["--runs", "1", "--ci", "0.2", "--max-point-seconds", "0.2", "-q"]
PER_METHOD = {
    "pingpong": ["-n", "3000", "--warmup", "300"],
    "signature": ["--bursts", "1,4,16", "--deltas", "0,1us,4us"],
    "flood": ["--messages", "2000", "--bell-runs", "3", "--sizes", "8,4096"],
    "kielmann": ["--sizes", "8,1024", "--eps", "0.05", "--no-saturation-compare"],
    "availability": ["--sizes", "8,4096"],
    "overlap": ["--messages", "2000", "--bell-runs", "3", "--sizes", "8"],
    "bulk": ["--sizes", "8,4096"],
    "verify": [],
}


def mpirun(np, args, out, timeout=120, extra=(), check=True):
    cmd = [LAB, "--no-lock", "-np", str(np), "--timeout", str(timeout)] + list(extra) + [
        "--", BIN, "--transport", "mpi", "--rendezvous-dir", TMP, "--json", out] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
    if check:
        assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def bad_numbers(doc, where="", found=None):
    """Every number in the results that is NaN, infinite or negative where a time or a rate is, and every
    availability outside [0, 1]: (path, value). raw_value_ns is left out: it is the record of a difference
    before it was bounded (Idle below 0 within its interval), beside the value that is reported."""
    found = [] if found is None else found
    if isinstance(doc, dict):
        for k, v in doc.items():
            path = f"{where}.{k}"
            if k == "raw_value_ns":
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if isinstance(v, float) and not math.isfinite(v):
                    found.append((path, v))
                elif k.startswith("availability") and not 0 <= v <= 1:
                    found.append((path, v))
                elif (k.endswith("_ns") or k in ("value", "g", "o_s", "o_r", "rtt")) and v < 0:
                    found.append((path, v))
            else:
                bad_numbers(v, path, found)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            bad_numbers(v, f"{where}[{i}]", found)
    return found


def failed_checks(doc):
    return [c for c in doc.get("checks", []) if not c.get("ok", True)]


def raw_numbers(path):
    """NaN and Infinity are not JSON: if they ever got in, the loader would see them as floats."""
    with open(path) as f:
        text = f.read()
    return [w for w in ("NaN", "Infinity") if w in text]


def run_method(bench, np=2, extra=(), mpi_extra=()):
    out = os.path.join(TMP, f"{bench}-{np}.json")
    mpirun(np, ["--bench", bench] + QUICK + PER_METHOD.get(bench, []) + list(extra), out, extra=mpi_extra)
    doc = load(out)
    assert doc["status"] == "complete", doc.get("error")
    assert doc["meta"]["transport"]["kind"] == "mpi", doc["meta"]["transport"]
    assert doc["meta"]["job"]["launcher"] == "mpirun" and doc["meta"]["job"]["size"] == np
    assert "Open MPI" in doc["meta"]["mpi"]["library_version"], doc["meta"]["mpi"]
    assert not raw_numbers(out), out
    return doc


def test_methods():
    """Every link-level method runs unchanged over MPI (2 ranks, vader)."""
    seen = {}
    for bench in PER_METHOD:
        t0 = time.time()
        doc = run_method(bench)
        bad = bad_numbers(doc.get("parameters", {})) + bad_numbers(doc.get("per_size", {}))
        assert not bad, (bench, bad, failed_checks(doc))
        seen[bench] = round(time.time() - t0, 1)
        if bench == "pingpong":
            rtt = doc["parameters"]["rtt"]
            assert rtt["value_ns"] > 0 and rtt["ci95_ns"] >= 0, rtt
        if bench == "verify":
            exact = [c for c in doc["checks"] if "byte-exact" in c["name"]]
            assert exact and all(c["ok"] for c in exact), doc["checks"]
        am = doc["meta"]["am"]["counters"] if "counters" in doc["meta"]["am"] else {}
        assert not am.get("rejected"), (bench, am)
    print("methods over MPI (seconds each):", seen)


def test_bulk_put():
    """One-sided bulk (MPI_Put/MPI_Get + flush) carries the same data: verify and bulk."""
    for bench in ("verify", "bulk"):
        doc = run_method(bench, extra=["--mpi-bulk", "put"])
        assert doc["meta"]["transport"]["bulk"] == "put", doc["meta"]["transport"]
        assert doc["meta"]["mpi"]["bulk"] == "put"
        counters = doc["meta"]["transport"]["counters"]
        assert counters["bulk_stores"] > 0 and counters["bad_bulk"] == 0, counters
        if bench == "verify":
            exact = [c for c in doc["checks"] if "byte-exact" in c["name"]]
            assert exact and all(c["ok"] for c in exact), doc["checks"]
    print("bulk over MPI_Put/MPI_Get: ok")


def test_k_to_one():
    """A job-level method over MPI: 4 ranks of k-to-one (2 cores: functional, labelled unfit), in both receive
    modes: recv's one receive, posted while waiting from MPI_ANY_SOURCE, takes in three senders' streams."""
    for rcv in ("irecv", "recv"):
        out = os.path.join(TMP, f"k2one-{rcv}.json")
        mpirun(4, ["--bench", "k-to-one", "--round-seconds", "0.2", "-q", "--mpi-recv", rcv], out, timeout=180)
        doc = load(out)
        assert doc["status"] == "complete", (rcv, doc.get("error"))
        assert [e["k"] for e in doc["per_k"]] == [1, 2, 3], doc["per_k"]
        for e in doc["per_k"]:
            assert e["g"]["value_ns"] > 0 and e["ratio"]["value"] > 0, e
        assert len(doc["meta"]["ranks"]) == 4
        assert doc["meta"]["mpi"]["receive_from"] == "MPI_ANY_SOURCE", doc["meta"]["mpi"]  # more than one peer
        assert doc["meta"]["transport"]["counters"]["short_or_forged"] == 0, doc["meta"]["transport"]
        print(f"k-to-one over MPI, --mpi-recv {rcv}:", [(e["k"], round(e["g"]["value_ns"])) for e in doc["per_k"]])


def ranks_of(mpirun_pid):
    """logpbench processes under mpirun, by MPI rank (from their environment)."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            if not cmd or not cmd[0].endswith(b"logpbench"):
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            if env.get(b"LOGPB_MPI_E2E") == str(mpirun_pid).encode() or env.get(b"LOGPB_MPI_E2E") == b"1":
                found[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
        except (OSError, KeyError, ValueError):
            pass
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


def test_rank_death():
    """SIGKILL rank 1 mid-run: rank 0 ends the job with exit 3 and valid JSON naming the lost peer."""
    out = os.path.join(TMP, "death.json")
    # mpirun's own reaction to a rank killed by a signal is to end the job, SIGKILL included for rank 0,
    # before rank 0 has written a word; --enable-recovery leaves the survivors running, so what is tested
    # is logpbench's own detection (the launcher's liveness, Ranks) and its exit 3 with the JSON.
    cmd = [LAB, "--no-lock", "-np", "2", "--timeout", "120", "--mpirun-arg=--enable-recovery", "--", BIN, "--transport", "mpi", "--rendezvous-dir", TMP,
           "--bench", "pingpong", "-n", "100000000", "--runs", "1", "--json", out, "-q"]
    env = dict(os.environ, LOGPB_MPI_E2E="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 30
    ranks = {}
    while time.time() < deadline and (len(ranks) < 2 or not os.path.exists(out)):
        ranks = ranks_of(p.pid)
        time.sleep(0.1)
    assert len(ranks) == 2, f"expected 2 ranks, saw {ranks}"
    time.sleep(1.5)  # into the measurement
    t0 = time.time()
    os.kill(ranks[1], signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    took = time.time() - t0
    assert took < 15, f"took {took:.1f} s to end the job"
    print("mpirun exit", p.returncode, err[-600:])
    doc = load(out)
    assert doc["status"] == "failed", (doc["status"], err)
    assert "peer lost" in doc["error"] and ("rank 1" in doc["error"] or "peer" in doc["error"]), doc["error"]
    assert "logpbench: peer lost" in err, err
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in ranks.values()):
        time.sleep(0.05)
    assert not [pid for pid in ranks.values() if alive(pid)], "a rank outlived the job"
    print(f"killed rank 1: job ended after {took:.2f} s, mpirun exit {p.returncode}: {doc['error']}")


def test_no_launcher():
    """Without mpirun/srun: a usage error (exit 2) before MPI starts, not an MPI abort; and the other
    refusals of the MPI options."""
    env_clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "SLURM_", "PMI_"))}
    for args, needle in ((["--transport", "mpi", "--bench", "pingpong"], "needs an MPI launcher"),
                         (["local", "--transport", "mpi"], "runs under a launcher"),
                         (["--transport", "mpi", "--emulate", "os=1us"], "MPI has no emulated NI"),
                         (["--transport", "shm", "--mpi-bulk", "put"], "belongs to --transport mpi")):
        p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=30, env=env_clean)
        msg = p.stdout + p.stderr
        assert p.returncode == 2, (args, p.returncode, msg)
        assert needle in msg, (args, msg)
        assert "MPI_ABORT" not in msg and "***" not in msg, msg  # no MPI abort banner
    # Under a launcher the values are checked too (the launcher's variables alone, no mpirun needed to refuse).
    env_fake = dict(env_clean, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="2", PMIX_NAMESPACE="e2e", PMIX_RANK="0")
    for args, needle in ((["--transport", "mpi", "--mpi-bulk", "both"], "--mpi-bulk must be"),
                         (["--transport", "mpi", "--mpi-pool", "48"], "power of two"),
                         (["--transport", "mpi", "--mpi-send", "bsend"], "--mpi-send must be"),
                         (["--transport", "mpi", "--mpi-recv", "probe"], "--mpi-recv must be"),
                         (["--transport", "mpi", "--mpi-source", "peer"], "--mpi-source must be"),
                         (["--transport", "mpi", "--mpi-frame", "short"], "--mpi-frame must be"),
                         (["--transport", "mpi", "--mpi-inline", "-1"], "mpi-inline")):
        p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=30, env=env_fake)
        assert p.returncode == 2 and needle in p.stderr, (args, p.returncode, p.stderr)
    print("no launcher: refused with exit 2")


MODES = [(snd, rcv) for rcv in ("irecv", "recv") for snd in ("auto", "isend", "send", "ssend")]


def test_modes():
    """Every --mpi-send x --mpi-recv of Kielmann et al.'s LogP/MPI moves the same bytes (verify, inline
    payloads and ones beyond --mpi-inline), survives two ranks sending at each other at once (a signature
    with a window of 8; a flood, whose credit frames cross its stream), and is recorded in the JSON."""
    report = []
    for snd, rcv in MODES:
        mode = ["--mpi-send", snd, "--mpi-recv", rcv]
        doc = run_method("verify", extra=mode + ["--mpi-inline", "1024"])
        exact = [c for c in doc["checks"] if "byte-exact" in c["name"]]
        assert exact and all(c["ok"] for c in exact), (snd, rcv, doc["checks"])
        t = doc["meta"]["transport"]
        assert (t["mpi_send"], t["mpi_recv"], t["inline_bytes"]) == (snd, rcv, 1024), t
        assert doc["meta"]["mpi"]["mpi_send"] == snd and doc["meta"]["mpi"]["mpi_recv"] == rcv, doc["meta"]["mpi"]
        assert doc["meta"]["mpi"]["receive_from"].startswith("rank "), doc["meta"]["mpi"]  # two ranks: the peer
        c = t["counters"]
        assert c["inline_stores"] > 0 and c["bulk_stores"] > c["inline_stores"], c  # both paths taken
        assert c["bad_bulk"] == 0 and c["short_or_forged"] == 0, c
        doc = run_method("signature", extra=mode + ["--window", "8"])
        assert doc["status"] == "complete", doc.get("error")
        # A flood's credit frames come back while the sender is still sending: the sends cross.
        doc = run_method("flood", extra=mode)
        fc = doc["meta"]["transport"]["counters"]
        stashed = fc["stashed"]
        # Its one-way AMs and credit frames carry no payload: compact on the wire (the default) both ways.
        assert fc["compact_sent"] > 0 and fc["compact_received"] > 0 and fc["short_or_forged"] == 0, fc
        # What they put on the wire is recorded as a number (scripts/mpi-vs-bare sets its bare message by it).
        small = doc["meta"]["transport"]["small_am_bytes"]
        # The most frequent size: control AMs with argument words may go beside the method's own.
        by = fc["compact_sent_by_bytes"]
        assert isinstance(small, int) and 8 <= small <= 40 and small % 8 == 0, small
        assert sum(by.values()) == fc["compact_sent"] and by[str(small)] == max(by.values()), (small, by)
        report.append(f"{snd}/{rcv}: verify byte-exact ({c['inline_stores']} of {c['bulk_stores']} stores inline), "
                      f"signature W=8 and flood complete, {stashed} messages stashed during blocking sends")
    # Receives from MPI_ANY_SOURCE, as a job of more ranks posts them, carry the same bytes in both receive modes.
    for rcv in ("irecv", "recv"):
        doc = run_method("verify", extra=["--mpi-source", "any", "--mpi-recv", rcv, "--mpi-inline", "1024"])
        exact = [c for c in doc["checks"] if "byte-exact" in c["name"]]
        assert exact and all(c["ok"] for c in exact), ("any", rcv, doc["checks"])
        m = doc["meta"]["mpi"]
        assert (m["mpi_source"], m["receive_from"]) == ("any", "MPI_ANY_SOURCE"), m
        report.append(f"--mpi-source any/{rcv}: verify byte-exact")
    # The whole frame on the wire, as every other transport sends it: the same AMs, nothing compacted.
    for bench in ("verify", "flood"):
        doc = run_method(bench, extra=["--mpi-frame", "full"])
        assert doc["status"] == "complete", doc.get("error")
        c = doc["meta"]["transport"]["counters"]
        assert c["compact_sent"] == 0 and c["compact_received"] == 0 and c["short_or_forged"] == 0, c
        assert doc["meta"]["mpi"]["mpi_frame"] == "full" and doc["meta"]["transport"]["frame"] == "full", doc["meta"]
        assert doc["meta"]["transport"]["small_am_bytes"] == 64, doc["meta"]["transport"]
        report.append(f"--mpi-frame full: {bench} complete, nothing compacted")
    print("\n".join(report))


SIZES = [1, 4096, 5120, 6144, 65536]


def test_sizes():
    """The sizes where the peers' MPI tools print NaN, negative g and 122% availability."""
    report = []
    sizes = ",".join(map(str, SIZES))
    for bench, extra in (("flood", ["--messages", "2000", "--bell-runs", "3", "--sizes", sizes]),
                         ("kielmann", ["--sizes", sizes, "--eps", "0.05", "--no-saturation-compare"]),
                         ("availability", ["--sizes", sizes])):
        out = os.path.join(TMP, f"sizes-{bench}.json")
        mpirun(2, ["--bench", bench] + QUICK + extra, out, timeout=180)
        doc = load(out)
        assert doc["status"] == "complete", doc.get("error")
        assert not raw_numbers(out)
        bad = bad_numbers(doc.get("parameters", {})) + bad_numbers(doc.get("per_size", {}))
        fails = failed_checks(doc)
        assert not bad, (bench, bad, fails)
        report.append(f"{bench}: {len(bad)} impossible value(s), {len(fails)} failed check(s)"
                      + (": " + "; ".join(c["name"] for c in fails) if fails else ""))
    for n in SIZES:
        out = os.path.join(TMP, f"sizes-pingpong-{n}.json")
        mpirun(2, ["--bench", "pingpong", "-s", str(n), "-n", "2000", "--warmup", "200"] + QUICK, out)
        doc = load(out)
        rtt = doc["parameters"]["rtt"]
        assert rtt["value_ns"] is not None and rtt["value_ns"] > 0 and rtt["ci95_ns"] >= 0, (n, rtt)
        report.append(f"pingpong -s {n}: rtt {rtt['value_ns']:.0f} ± {rtt['ci95_ns']:.0f} ns")
    print("\n".join(report))


def test_bare_pingpong(bare):
    """bench/mpi_bare_pingpong (the floor scripts/mpi-vs-bare divides by) runs under the lab in both send
    modes and at 0 bytes, and prints a positive RTT with its interval; bad input is refused. Functional
    only: its figures belong to scripts/mpi-vs-bare."""
    for args in (["--iters", "2000"], ["--iters", "2000", "--send", "isend", "--size", "0"],
                 ["--iters", "2000", "--shape", "transport", "--send", "isend", "--ring", "8", "--pool", "4"],
                 ["--iters", "2000", "--shape", "transport", "--send", "send", "--recv-bytes", "128",
                  "--source", "peer"]):
        out = os.path.join(TMP, "bare.json")
        cmd = [LAB, "--no-lock", "-np", "2", "--timeout", "120", "--", bare] + args + ["--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
        assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
        printed = json.loads(p.stdout.strip().splitlines()[-1])
        doc = load(out)
        assert printed == doc, (printed, doc)
        rtt = doc["rtt"]
        assert doc["bench"] == "mpi_bare_pingpong" and rtt["n"] == 2000, doc
        assert doc["shape"] == ("transport" if "--shape" in args else "bare"), doc
        assert rtt["median_ns"] > 0 and rtt["ci95_median_ns"] >= 0 and math.isfinite(rtt["median_ns"]), rtt
        assert "rtt median" in p.stderr, p.stderr
        print(f"mpi_bare_pingpong {' '.join(args)}: {doc['bytes']} B, rtt {rtt['median_ns']:.0f} ns")
    for np, args, needle in ((2, ["--size", "-1"], "--size wants an integer"),
                             (2, ["--send", "ssend"], "--send must be"),
                             (2, ["--shape", "ring"], "--shape must be"),
                             (2, ["--source", "self"], "--source must be"),
                             (2, ["--shape", "transport", "--size", "256", "--recv-bytes", "128"], "must hold"),
                             (2, ["--ring", "0"], "--ring wants an integer"),
                             (1, [], "exactly 2 ranks")):
        cmd = [LAB, "--no-lock", "-np", str(np), "--timeout", "60", "--", bare] + args
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        assert p.returncode != 0 and needle in p.stdout + p.stderr, (args, p.returncode, p.stdout, p.stderr)
    print("mpi_bare_pingpong: bad input refused")
    # scripts/mpi-vs-bare end to end, one short round: it finds the small AM's size on the wire from logpbench's
    # own JSON (the most frequent compact send; the ping-pong's control AMs carry argument words) and runs every
    # loop. A round whose two bare runs disagree (the VM changed speed) leaves no ratio, and says so.
    out = os.path.join(TMP, "vs-bare")
    env = dict(os.environ, BUILD_DIR=os.path.dirname(os.path.dirname(os.path.abspath(BIN))))
    p = subprocess.run([os.path.join(SRC, "scripts", "mpi-vs-bare"), "--rounds", "1", "--iters", "3000", "--out", out],
                       capture_output=True, text=True, timeout=300, env=env)
    text = p.stdout + p.stderr
    assert "against a 8-byte bare ping-pong" in text and "round 1: bare" in text, (p.returncode, text)
    assert p.returncode == 0 and "mpi-vs-bare rtt ratio: " in p.stdout or \
        p.returncode == 1 and "no round had both RTTs" in text, (p.returncode, text)
    summary = load(os.path.join(out, "summary.json"))
    assert summary["bare_bytes"] == 8 and len(summary["rounds"]) == 1, summary
    print(f"mpi-vs-bare, one round: exit {p.returncode}, {text.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
