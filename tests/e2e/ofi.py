"""--transport ofi: the methods over every libfabric provider that runs on this host in local mode
(tcp's msg endpoint, tcp;ofi_rxm, udp;ofi_rxd, shm), the three completion modes recorded, and the errors a user
must be able to act on: an unknown provider (the message lists those fi_getinfo sees), a bad --ep, an endpoint
type the provider lacks, and a peer killed mid-run (exit 3 within seconds, valid JSON).
Invoked as ofi.py LOGPBENCH SOURCE_DIR TEST [PROVIDER]. ctest runs it RUN_SERIAL: two busy-polling ranks own
both cores. A provider that fi_info does not list here is skipped with the reason (exit 0, "skipped: ...")."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lpbtest import BIN, expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-ofi-e2e-")
# Short, functional runs: the figures belong to a quiet machine, not to ctest.
QUICK = ["--runs", "1", "--ci", "0.2", "--max-point-seconds", "0.2", "-q"]
PER_METHOD = {
    "pingpong": ["-n", "3000", "--warmup", "300"],
    "signature": ["--bursts", "1,4,16", "--deltas", "0,1us,4us"],
    "flood": ["--messages", "2000", "--bell-runs", "3", "--sizes", "8,4096,65536"],
    "kielmann": ["--sizes", "8,1024,65536", "--eps", "0.05", "--no-saturation-compare"],
    "availability": ["--sizes", "8,4096,65536"],
    "verify": [],  # every store and get path (inline, one message, fi_write or data messages, fi_read) exact
}
# The test name's provider and the options that select it.
PROVIDERS = {
    "tcp_msg": ["--provider", "tcp", "--ep", "msg"],
    "tcp_rxm": ["--provider", "tcp;ofi_rxm"],
    "udp_rxd": ["--provider", "udp;ofi_rxd"],
    "shm": ["--provider", "shm"],
}


def unavailable(prov_opts):
    """Why this host cannot run the provider (None when it can): fi_info -p NAME must list it."""
    name = prov_opts[prov_opts.index("--provider") + 1]
    try:
        p = subprocess.run(["fi_info", "-p", name], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return "fi_info (libfabric-bin) is not installed"
    if p.returncode != 0 or "provider:" not in p.stdout:
        return f"fi_info -p '{name}' lists nothing here: {(p.stdout + p.stderr).strip()[:200]}"
    return None


def ofi_run(prov_opts, bench, extra=(), timeout=180):
    out = os.path.join(TMP, f"{bench}-{abs(hash(tuple(prov_opts) + tuple(extra)))}.json")
    run(["local", "--transport", "ofi"] + prov_opts + ["--bench", bench] + PER_METHOD.get(bench, []) + QUICK +
        list(extra) + ["--json", out], timeout=timeout)
    return load(out)


def test_methods(provider):
    prov = PROVIDERS[provider]
    why = unavailable(prov)
    if why:
        print(f"skipped: {why}")
        return
    for bench in PER_METHOD:
        doc = ofi_run(prov, bench)
        t = doc["meta"]["transport"]
        assert t["kind"] == "ofi" and t["provider"], t
        for k in ("fabric", "domain", "api_version", "caps", "mode", "inject_size", "max_msg_size", "tx_size",
                  "rx_size", "mr_mode", "completion", "bulk", "receive"):
            assert k in t, (bench, k)
        assert t["counters"]["short_or_bad"] == 0 and t["counters"]["bad_bulk"] == 0, t["counters"]
        if bench == "verify":
            exact = [c for c in doc.get("checks", []) if c["name"] == "bulk store and get are byte-exact"]
            assert exact and exact[0]["ok"], doc.get("checks")  # timing checks depend on the load: not here
            continue
        assert "parameters" in doc, bench
        balance = [c for c in doc.get("checks", []) if c["name"] == "every frame sent was taken in"]
        assert balance and balance[0]["ok"], balance


def test_completion():
    # Each completion mode runs and is recorded with what it means; the flood waits for it.
    prov = PROVIDERS["tcp_rxm"]
    for mode in ("inject", "transmit", "delivery"):
        doc = ofi_run(prov, "flood", ["--ofi-completion", mode])
        t = doc["meta"]["transport"]
        assert t["completion"] == mode and t["completion_means"], t
        assert doc["meta"]["flags"]["ofi-completion"] == mode
        if mode != "inject":
            assert "fi_sendmsg" in t["small_am"] and t["counters"]["injects"] == 0, t


def test_errors():
    expect_fail(["local", "--transport", "ofi", "--provider", "nosuchprov", "--bench", "pingpong", "-q"],
                "fi_getinfo sees: ", codes=(2,))
    p = run(["local", "--transport", "ofi", "--provider", "nosuchprov", "--bench", "pingpong", "-q"], check=False)
    assert "tcp" in p.stderr and "shm" in p.stderr, p.stderr  # the known ones are listed
    expect_fail(["local", "--transport", "ofi", "--provider", "tcp", "--ep", "dgram"], "--ep must be rdm", codes=(2,))
    expect_fail(["local", "--transport", "ofi", "--bench", "pingpong"], "needs --provider", codes=(2,))
    expect_fail(["local", "--transport", "shm", "--provider", "tcp"], "belongs to --transport ofi", codes=(2,))
    expect_fail(["local", "--transport", "ofi", "--provider", "tcp", "--ofi-completion", "remote"],
                "--ofi-completion must be", codes=(2,))
    expect_fail(["local", "--transport", "ofi", "--provider", "shm", "--ep", "msg", "--bench", "pingpong", "-q"],
                "offers no FI_EP_MSG", codes=(2,))
    # libfabric is opened by the ofi transport's first call (ofi/fabric_loader.cpp), not linked: linked, its
    # PSM providers' libinfinipath cost every logpbench process 0.1-0.2 s at load, whatever the transport.
    # A process that never uses ofi never maps it; the runs above used it through the loader.
    deps = subprocess.run(["ldd", BIN], capture_output=True, text=True, check=True).stdout
    assert "libfabric" not in deps and "infinipath" not in deps, deps
    p = subprocess.run(["strace", "-f", "-e", "trace=openat", BIN, "local", "--transport", "shm", "--bench",
                        "pingpong", "-n", "100", "--warmup", "10", "--runs", "1", "-q", "--json",
                        os.path.join(TMP, "no-ofi.json")], capture_output=True, text=True)  # strace: scripts/setup
    assert p.returncode == 0, p.stderr[-2000:]
    assert "libfabric" not in p.stderr, [l for l in p.stderr.splitlines() if "libfabric" in l]


def children(pid, deadline_s=15):
    end = time.time() + deadline_s
    while time.time() < end:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        if out:
            return [int(x) for x in out]
        time.sleep(0.05)
    raise AssertionError("the local job forked no peer")


def test_peer_death(provider="tcp_rxm"):
    # The forked peer is SIGKILLed mid ping-pong: rank 0 must say a peer is lost and exit 3 within seconds,
    # and leave a valid JSON that says it failed.
    out = os.path.join(TMP, f"death-{provider}.json")
    p = subprocess.Popen([BIN, "local", "--transport", "ofi"] + PROVIDERS[provider] +
                         ["--bench", "pingpong", "-n", "100000000", "--runs", "1", "--json", out, "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kids = children(p.pid)
    time.sleep(1.5)  # connected and measuring
    t0 = time.time()
    os.kill(kids[0], signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        # Never leave it spinning on a core for the tests after this one (it once held one for 25 minutes).
        p.kill()
        p.communicate()
        raise AssertionError(f"rank 0 still running 30 s after its {provider} peer was killed")
    took = time.time() - t0
    assert took < 10, f"took {took:.1f} s to notice"
    assert p.returncode == 3, f"exit {p.returncode}: {err}"
    assert "peer" in err.lower() or "rank" in err.lower(), err
    doc = load(out)
    assert doc["status"] == "failed", doc.get("status")
    # The killed rank's shm region stays in /dev/shm (libfabric unlinks it only on a clean close): not ours
    # to leave behind.
    for f in os.listdir("/dev/shm"):
        if f.startswith(f"logpb-{kids[0]}-"):
            os.unlink(os.path.join("/dev/shm", f))


def test_stale_shm():
    """A region a killed process left in /dev/shm does not stop a later run whose process gets its id.
    libfabric's shm names a region after the process id unless told otherwise ("PID:0:0"); logpbench gives
    it a name of its own (meta.transport.shm_region). Empty stale regions are laid for the next 64 process
    ids: with shm's own names, a run given one of them died of SIGBUS inside libfabric."""
    why = unavailable(PROVIDERS["shm"])
    if why:
        print("skipped:", why)
        return
    last = int(open("/proc/loadavg").read().split()[4])
    made = []
    try:
        for pid in range(last + 1, last + 65):
            path = f"/dev/shm/{pid}:0:0"
            if not os.path.exists(path):
                open(path, "w").close()
                made.append(path)
        doc = ofi_run(PROVIDERS["shm"], "pingpong")
    finally:
        for path in made:
            os.unlink(path)
    assert doc["status"] == "complete", doc.get("error")
    region = doc["meta"]["transport"].get("shm_region", "")
    assert region.startswith("logpb-"), doc["meta"]["transport"]
    print(f"stale shm regions for {len(made)} process ids: pingpong complete, region {region}")


def test_vs_fi_pingpong():
    """scripts/ofi-vs-fi-pingpong runs both sides on shm and tcp's msg endpoint and prints a positive ratio
    for each, or n/a for a round it names as left out (functional: the ratio's value belongs to a quiet machine, not to ctest)."""
    if not shutil.which("fi_pingpong"):
        print("skipped: fi_pingpong (libfabric-bin) is not installed")
        return
    src = sys.argv[2]
    out = os.path.join(TMP, "vs-fi-pingpong")
    p = subprocess.run([os.path.join(src, "scripts", "ofi-vs-fi-pingpong"), "--rounds", "1", "--iters", "2000",
                        "--providers", "shm,tcp/msg", "--out", out], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, LPB=BIN))
    assert p.returncode == 0, p.stdout + p.stderr
    for key in ("shm/rdm", "tcp/msg"):
        line = [x for x in p.stdout.splitlines() if x.startswith(f"ofi-vs-fi-pingpong {key} ratio: ")]
        assert line, p.stdout
        doc = load(os.path.join(out, "summary.json"))
        r = doc[key]["rounds"][0]
        assert r["fi_pingpong_before_ns"] > 0 and r["fi_pingpong_after_ns"] > 0 and r["logpbench_mean_ns"] > 0, r
        ratio = line[0].split()[-1]
        assert (ratio == "n/a") == (r["skip"] is not None), (line, r)  # n/a only for a round left out, named
        assert ratio == "n/a" or float(ratio) > 0, line
        # What logpbench adds per message over fi_pingpong, split into its AM layer and the transport's datapath:
        # n/a where the round was left out, else the split adds up (scripts/lib/per_message.py).
        pm = doc[key]["per_message_ns"]
        assert any(x.startswith(f"ofi-vs-fi-pingpong {key} per message: ") for x in p.stdout.splitlines()), p.stdout
        if r["skip"] is None:
            assert abs(pm["over_bare"] - (r["logpbench_mean_ns"] - r["fi_pingpong_ns"])) < 1e-6, (pm, r)
            assert pm["am_layer"] > 0 and abs(pm["am_layer"] + pm["transport_datapath"] - pm["over_bare"]) < 1e-6, pm


if __name__ == "__main__":
    main(globals(), sys.argv[3], *sys.argv[4:])
