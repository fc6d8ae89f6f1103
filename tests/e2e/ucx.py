"""--transport ucx: the methods over the UCT transports this host has (posix, sysv, tcp on lo, posix with cma as
the bulk path) and over UCP (UCX_TLS=self,posix and self,tcp), N-rank jobs, and the errors a user must be able
to act on: an unknown --ucx-tl or --ucx-dev (the message lists what UCT sees), cma alone (no active messages),
a get where the interface has none, --ucx-tl with UCP, and UCX_TLS allowing nothing that exists.
Invoked as ucx.py LOGPBENCH SOURCE_DIR TEST [CONFIG]. ctest runs it RUN_SERIAL: two busy-polling ranks own
both cores. A transport ucx_info -d does not list here is skipped with the reason (exit 0, "skipped: ...").

What each run must show besides status "complete": meta.ucx names the layer and what UCX chose (UCT: the
transport, device and thresholds; UCP: the version, the context and the endpoint's protocols), the
transport's counters say the paths the sizes call for were taken (am_short for small AMs where the interface
takes 64 bytes short; medium stores in one message below the am_bcopy limit; puts or data messages above
it) and that nothing received was malformed (rx_short_or_bad and rx_bad_bulk 0), and the method's figures
are present and not negative."""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lpbtest import BIN, kill_peer_midrun, load, main  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-ucx-e2e-")
# Short, functional runs: the figures belong to a quiet machine, not to ctest.
QUICK = ["--runs", "1", "--ci", "0.2", "--max-point-seconds", "0.2", "-q"]
# Sizes across every store path: 8 and 2048 in one message (UCT am_bcopy, UCP eager with the frame), 65536
# beyond am_bcopy (UCT: puts, or data messages where there is no put; UCP: ucp_put_nbx).
SWEEP = "8,2048,65536"
PER_METHOD = {
    "pingpong": ["-n", "3000", "--warmup", "300"],
    "sweep": ["--sizes", SWEEP, "-n", "300", "--warmup", "30"],  # --bench pingpong over sizes
    "verify": [],  # every store and get path byte-exact
    "signature": ["--bursts", "1,4,16", "--deltas", "0,1us,4us"],
    "flood": ["--messages", "2000", "--bell-runs", "3", "--sizes", "8,4096,65536"],
    "kielmann": ["--sizes", "8,1024,65536", "--eps", "0.05", "--no-saturation-compare"],
    "availability": ["--sizes", "8,4096,65536"],
    "overlap": ["--messages", "2000", "--bell-runs", "3", "--sizes", "8"],
    "poll": ["--poll-reps", "60", "--messages", "4000"],
}
ALL = list(PER_METHOD)
# The configurations: options, environment, what ucx_info -d must list, and the methods run over each (every
# method over one UCT and one UCP configuration; the paths that differ over the others).
CONFIGS = {
    "uct_posix": (["--ucx-tl", "posix"], {}, ["posix"], ALL),
    "uct_sysv": (["--ucx-tl", "sysv"], {}, ["sysv"], ["pingpong", "sweep", "verify", "flood"]),
    "uct_tcp": (["--ucx-tl", "tcp", "--ucx-dev", "lo"], {}, ["tcp"], ["pingpong", "sweep", "signature", "flood"]),
    "uct_posix_cma": (["--ucx-tl", "posix", "--ucx-bulk-tl", "cma"], {}, ["posix", "cma"],
                      ["sweep", "verify", "flood", "availability"]),
    "ucp_posix": (["--ucx-layer", "ucp"], {"UCX_TLS": "self,posix"}, ["posix"], ALL),
    "ucp_tcp": (["--ucx-layer", "ucp"], {"UCX_TLS": "self,tcp"}, ["tcp"], ["pingpong", "sweep", "verify", "flood"]),
    # UCP_ERR_HANDLING_MODE_PEER: UCX keeps only transports that can report a lost peer (tcp here, with its
    # keepalive lane); the methods must run to the end as without it (a peer's normal exit is no error).
    "ucp_tcp_peer": (["--ucx-layer", "ucp", "--ucp-err-mode", "peer"], {"UCX_TLS": "self,posix,tcp"}, ["tcp"],
                     ["pingpong", "verify", "flood", "kielmann"]),
}


def ucx_info_transports():
    try:
        p = subprocess.run(["ucx_info", "-d"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return None
    return {line.split(":", 1)[1].strip() for line in p.stdout.splitlines() if "Transport:" in line}


def unavailable(needs):
    have = ucx_info_transports()
    if have is None:
        return "ucx_info (ucx-utils) is not installed"
    missing = [t for t in needs if t not in have]
    return f"ucx_info -d lists no {', '.join(missing)} here (it lists {sorted(have)})" if missing else None


def lpb(args, env=None, timeout=180, check=True):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(f'{k}={v}' for k, v in (env or {}).items())} logpbench {' '.join(args)} "
                             f"exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def ucx_run(config, bench, extra=(), ranks=None, timeout=180):
    opts, env, _, _ = CONFIGS[config]
    out = os.path.join(TMP, f"{config}-{bench}-{ranks or 2}.json")
    real = "pingpong" if bench == "sweep" else bench
    args = ["local", "--transport", "ucx"] + opts + (["-N", str(ranks)] if ranks else []) + ["--bench", real]
    lpb(args + PER_METHOD.get(bench, []) + QUICK + list(extra) + ["--json", out], env=env, timeout=timeout)
    doc = load(out)
    assert doc["status"] == "complete", (config, bench, doc.get("status"), doc.get("error"))
    return doc


def check_meta(config, doc):
    opts, env, _, _ = CONFIGS[config]
    u, t = doc["meta"]["ucx"], doc["meta"]["transport"]
    assert t["kind"] == "ucx", t
    assert doc["meta"]["flags"]["transport"] == "ucx"
    for k in ("small_am", "store", "get", "receive", "completion_means", "counters", "segment_bytes", "op_slots"):
        assert k in t, (config, k)
    c = t["counters"]
    assert all(isinstance(v, int) and v >= 0 for v in c.values()), c
    assert c["rx_short_or_bad"] == 0 and c["rx_bad_bulk"] == 0, (config, c)
    assert c["rx_messages"] > 0, (config, c)
    if config.startswith("uct"):
        tl = opts[opts.index("--ucx-tl") + 1]
        assert u["layer"] == "uct" and u["tl"] == tl and u["dev"], u
        if "--ucx-dev" in opts:
            assert u["dev"] == opts[opts.index("--ucx-dev") + 1], u
        th = u["thresholds"]
        assert th["small_am"] in ("am_short", "am_bcopy"), th
        assert th["store_in_one_am_max"] > 0, th  # every AM transport here has am_bcopy
        assert u["iface"]["am_max_bcopy"] == th["store_in_one_am_max"] + 64, (u["iface"], th)
        assert u["version"], u
        if th["small_am"] == "am_short":
            assert c["am_short"] > 0, ("64-byte frames fit am_short, yet none went so", c)
        else:
            assert c["am_short"] == 0, c
        # A job of two: the bare UCT loop under the small AM's round trip, timed in the same job
        # (UctConnection::measure_floor), or why it is missing (no 64-byte am_short).
        if len(doc["meta"].get("ranks", [0, 1])) == 2:
            f = doc["meta"]["transport_floor"]
            if th["small_am"] == "am_short":
                assert f["bytes"] == 64 and f["iterations"] >= 100 and f["rtt"]["value_ns"] > 0, f
                assert 0 < f["rtt_min_ns"] <= f["rtt"]["value_ns"], f
            else:
                assert f["rtt"] is None and "am_short" in f["why"], f
        if "--ucx-bulk-tl" in opts:
            assert u["bulk"]["tl"] == opts[opts.index("--ucx-bulk-tl") + 1], u
            assert "once the puts completed" in t["store"], t["store"]
    else:
        assert u["layer"] == "ucp" and u["version"], u
        assert u["context"] and u["endpoint"]["info"], u
        # UCP chose what UCX_TLS allows: the endpoint's own description names the transport.
        want = env["UCX_TLS"].split(",")[-1]
        assert want in "\n".join(u["endpoint"]["info"]), (want, u["endpoint"])
        assert c["sends"] > 0 and c["rx_rendezvous_refused"] == 0, c
        mode = opts[opts.index("--ucp-err-mode") + 1] if "--ucp-err-mode" in opts else "none"
        assert u["err_mode"] == mode, (u["err_mode"], mode)
        if mode == "peer":  # posix allowed, yet not chosen: it cannot report a lost peer
            info = "\n".join(u["endpoint"]["info"])
            assert "posix" not in info and "keepalive" in info, info
    return c, u


def check_parameters(config, bench, doc):
    if bench == "verify":
        exact = [c for c in doc.get("checks", []) if c["name"] == "bulk store and get are byte-exact"]
        assert exact and exact[0]["ok"], (config, doc.get("checks"))  # timing checks depend on the load: not here
        return
    if bench == "sweep":  # pingpong over sizes: a latency table, no LogP parameters
        sizes = [int(x) for x in SWEEP.split(",")]
        per = doc["pingpong"]["per_size"]
        assert [p["bytes"] for p in per] == sizes, (config, per)
        assert all(p["rtt"]["value_ns"] > 0 and p["rtt"]["ci95_ns"] >= 0 for p in per), (config, per)
        return
    params = doc.get("parameters")
    assert params, (config, bench, "no parameters")
    for k, p in params.items():
        if not isinstance(p, dict) or "value_ns" not in p:
            continue
        v = p["value_ns"]
        assert v is not None or p.get("error") or p.get("reason"), (config, bench, k, p)
        assert v is None or v >= 0, (config, bench, k, p)
    balance = [c for c in doc.get("checks", []) if c["name"] == "every frame sent was taken in"]
    assert not balance or balance[0]["ok"], balance


def check_paths(config, bench, c, u):
    """The store paths the sizes call for: one message below the am_bcopy limit, puts or data messages above."""
    if bench not in ("sweep", "flood", "verify"):
        return
    if config.startswith("ucp"):
        assert c["medium_stores"] > 0 and c["bulk_stores"] > 0 and c["puts"] > 0, (config, bench, c)
        return
    assert c["medium_stores"] > 0 and c["bulk_stores"] > 0, (config, bench, c)
    # Every UCT transport here has a put into the peer's segment (tcp's put_zcopy needs no key), so no
    # store goes as data messages (that path is in tests/ucx and tests/fuzz/fuzz_ucx.cpp).
    assert c["puts"] > 0 and c["store_data_messages"] == 0 and c["rx_chunks"] == 0, (config, bench, c)
    th = u["thresholds"]
    assert th["put_bcopy_max"] > 0 or th["put_zcopy_max"] > 0, th
    if config == "uct_posix_cma":  # on another interface no fence orders the frame: it waits for the puts
        assert c["fences"] == 0, c
        assert th["put_zcopy_max"] > 0, th
    else:
        assert c["fences"] == c["bulk_stores"], c  # a fence between the puts and the frame
    if bench == "verify":
        assert c["gets"] > 0, c


def test_methods(config):
    opts, env, needs, benches = CONFIGS[config]
    why = unavailable(needs)
    if why:
        print(f"skipped: {why}")
        return
    for bench in benches:
        t0 = time.time()
        doc = ucx_run(config, bench)
        c, u = check_meta(config, doc)
        check_parameters(config, bench, doc)
        check_paths(config, bench, c, u)
        print(f"{config} {bench}: ok ({time.time() - t0:.1f} s)", flush=True)


def test_jobs(config):
    """Four ranks: pairs (every endpoint to every rank exchanged through the bootstrap) and k-to-one."""
    why = unavailable(CONFIGS[config][2])
    if why:
        print(f"skipped: {why}")
        return
    doc = ucx_run(config, "pairs", ["--pairs-bench", "pingpong", "-n", "2000", "--warmup", "200"], ranks=4,
                  timeout=240)
    assert len(doc["meta"]["ranks"]) == 4, doc["meta"]["ranks"]
    assert doc["pairs"]["pairs"] == 2, doc["pairs"]
    check_meta(config, doc)
    doc = ucx_run(config, "k-to-one", ["--round-seconds", "0.2"], ranks=4, timeout=240)
    per_k = doc["per_k"]
    assert [e["k"] for e in per_k] == [1, 2, 3], per_k
    for e in per_k:
        assert e["g"]["value_ns"] > 0 and len(e["senders"]) == e["k"], e
    check_meta(config, doc)
    print(f"{config}: pairs and k-to-one over 4 ranks:", [(e["k"], round(e["g"]["value_ns"])) for e in per_k])


def test_peer_lost(mode):
    """A peer SIGKILLed in the middle of a ping-pong over tcp: the leader ends the run as a lost peer (exit 3,
    valid JSON, status failed) within 5 s. Over UCP under --ucp-err-mode peer, UCX itself reports it, through
    the endpoint's error handler; under none, the job's bootstrap sees the rank gone. Over UCT (mode uct),
    the interface's error handler reports it (9 of 9 runs by hand; before it had one, the bootstrap did)."""
    why = unavailable(["tcp"])
    if why:
        print(f"skipped: {why}")
        return
    out = os.path.join(TMP, f"lost-{mode}.json")
    if mode == "uct":
        rc, text, took = kill_peer_midrun(["local", "--transport", "ucx", "--ucx-layer", "uct", "--ucx-tl", "tcp",
                                           "--ucx-dev", "lo"], out)
    else:
        rc, text, took = kill_peer_midrun(["local", "--transport", "ucx", "--ucx-layer", "ucp", "--ucp-err-mode",
                                           mode], out, env=dict(os.environ, UCX_TLS="self,tcp"))
    want = {"peer": "its error handler: the peer is lost", "none": "rank 1 died",
            "uct": "the interface's error handler: the peer is lost"}[mode]
    assert rc == 3 and want in text, (rc, text[-2000:])
    assert took < 5, took
    doc = load(out)
    assert doc["status"] == "failed" and doc["runs"], doc.get("status")
    print(f"peer lost under --ucp-err-mode {mode}: exit 3 after {took:.2f} s:", text.strip().splitlines()[-2][:160])


def expect_error(args, needles, codes, env=None, timeout=60):
    t0 = time.time()
    p = lpb(args, env=env, timeout=timeout, check=False)
    took = time.time() - t0
    msg = p.stdout + p.stderr
    assert p.returncode in codes, f"{args} {env}: exit {p.returncode}, wanted one of {codes}\n{msg}"
    for n in needles:
        assert n.lower() in msg.lower(), f"{args} {env}: no '{n}' in\n{msg}"
    for bad in ("terminate called", "Segmentation", "Aborted", "core dumped"):
        assert bad not in msg, msg
    assert took < 30, f"{args} {env}: took {took:.1f} s to fail"
    return msg


def test_errors():
    base = ["local", "--transport", "ucx", "--bench", "pingpong", "-n", "100", "--warmup", "10", "--runs", "1", "-q",
            "--json", os.path.join(TMP, "error.json")]
    have = ucx_info_transports() or set()
    # An unknown transport: the message lists every transport/device UCT sees.
    msg = expect_error(base + ["--ucx-tl", "nosuchtl"], ["UCT has no transport nosuchtl", "it sees"], (2,))
    for tl in ("posix", "tcp"):
        if tl in have:
            assert f"{tl}/" in msg, (tl, msg)
    expect_error(base + ["--ucx-tl", "posix", "--ucx-dev", "bogus0"], ["no transport posix on device bogus0",
                                                                       "posix/memory"], (2,))
    if "cma" in have:
        expect_error(base + ["--ucx-tl", "cma"], ["cma", "no active messages", "--ucx-bulk-tl"], (2,))
    if "tcp" in have:  # verify gets; tcp has no get and no key for one
        expect_error(["local", "--transport", "ucx", "--ucx-tl", "tcp", "--ucx-dev", "lo", "--bench", "verify", "-q",
                      "--json", os.path.join(TMP, "error.json")], ["no get", "--ucx-bulk-tl cma"], (2,))
    expect_error(base + ["--ucx-layer", "ucp", "--ucx-tl", "posix"], ["--ucx-tl is for --ucx-layer uct"], (2,))
    expect_error(base + ["--ucx-layer", "ucp", "--ucx-bulk-tl", "cma"], ["--ucx-bulk-tl"], (2,))
    expect_error(base + ["--ucx-layer", "nosuch"], ["--ucx-layer"], (2,))
    expect_error(base, ["--ucx-tl"], (2,))  # UCT without a transport
    expect_error(["local", "--transport", "shm", "--ucx-tl", "posix", "--bench", "pingpong"], ["ucx"], (2,))
    # UCX_TLS naming nothing that exists: UCP's own complaint and ours, exit 1, at once.
    expect_error(base + ["--ucx-layer", "ucp"], ["ucp_init failed", "UCX_TLS"], (1,), env={"UCX_TLS": "nosuchtl"})
    if "cma" in have:  # a transport that exists but carries no active messages: no endpoint can be made
        expect_error(base + ["--ucx-layer", "ucp"], ["ucp_ep_create failed", "unreachable"], (1,),
                     env={"UCX_TLS": "cma"})
    expect_error(base + ["--ucx-tl", "posix", "--ucp-err-mode", "peer"], ["--ucp-err-mode is for --ucx-layer ucp"], (2,))
    expect_error(base + ["--ucx-layer", "ucp", "--ucp-err-mode", "bogus"], ["--ucp-err-mode"], (2,))
    if "posix" in have:  # peer mode where no allowed transport can report a lost peer: said so, exit 1, at once
        expect_error(base + ["--ucx-layer", "ucp", "--ucp-err-mode", "peer"],
                     ["ucp_ep_create failed", "--ucp-err-mode peer", "posix and sysv cannot"], (1,),
                     env={"UCX_TLS": "self,posix"})
    # UCX is opened by the transport's first call (ucx/loader.cpp), not linked: libucs's load-time constructor
    # installs signal handlers in every process that links it.
    deps = subprocess.run(["ldd", BIN], capture_output=True, text=True, check=True).stdout
    assert "libucs" not in deps and "libuct" not in deps and "libucp" not in deps, deps



def test_bare_pingpong(bare):
    """bench/uct_bare_pingpong (the bare loop scripts/ucx-vs-perftest runs beside logpbench and ucx_perftest):
    a few thousand round trips over posix in each of its modes print one JSON line with every round trip
    kept and positive figures, the timed server's turnaround with as many requests as round trips it served
    (warm-up included), and bad input is refused. Functional only: its figures belong to the script."""
    why = unavailable(["posix"])
    if why:
        print(f"skipped: {why}")
        return
    n = 3000
    for modes in ([], ["timed"], ["plain"], ["plain", "timed"]):
        p = subprocess.run([bare, str(n), "0", "1", "posix", "memory"] + modes, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, (modes, p.returncode, p.stdout, p.stderr)
        lines = p.stdout.strip().splitlines()
        assert len(lines) == 1, (modes, p.stdout)
        doc = json.loads(lines[0])
        assert doc["bench"] == "uct_bare_pingpong" and doc["tl"] == "posix" and doc["dev"] == "memory", doc
        assert doc["message_bytes"] == 64 and doc["iterations"] == n and doc["warmup"] == n // 10, doc
        assert doc["client_cpu"] == 0 and doc["server_cpu"] == 1, doc
        assert ("ucx_perftest" in doc["clock"]) == ("plain" in modes), doc["clock"]
        rtt = doc["rtt"]
        assert rtt["n"] == n, rtt
        for k in ("min_ns", "median_ns", "p90_ns", "p99_ns", "mean_ns"):
            assert math.isfinite(rtt[k]) and rtt[k] > 0, (modes, k, rtt)
        assert rtt["min_ns"] <= rtt["median_ns"] <= rtt["p90_ns"] <= rtt["max_ns"], rtt
        if "timed" in modes:
            t = doc["server_turnaround"]
            assert t["requests"] == n + n // 10, t  # one per request it answered: warm-up and timed
            assert 0 < t["median_ns"] <= t["p90_ns"] and t["median_ns"] < rtt["median_ns"], (t, rtt)
        else:
            assert "server_turnaround" not in doc, doc
        print(f"uct_bare_pingpong {' '.join(modes) or 'default'}: rtt median {rtt['median_ns']:.0f} ns")
    for args in (["10", "0", "1", "posix", "memory", "bogus"], ["0"],
                 ["10", "0", "1", "posix", "memory", "timed", "timed"]):
        p = subprocess.run([bare] + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and "usage:" in p.stderr, (args, p.returncode, p.stderr)
    p = subprocess.run([bare, "10", "0", "1", "posix", "no-such-device"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no transport posix on device no-such-device" in p.stderr, (p.returncode, p.stderr)


if __name__ == "__main__":
    main(globals(), sys.argv[3], *sys.argv[4:])
