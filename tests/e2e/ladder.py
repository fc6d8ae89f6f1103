"""scripts/ladder (issue 38, the software ladder) on the host, with short ping-pongs:
- every rung that is available ran and left a valid result (status complete, an rtt with its interval), the
  MPI rung over pml ucx as meta.mpi records it;
- the table has a line for every rung, in the ladder's order, and each rung above the lowest one that ran
  says what it adds over the rung below with a 95% interval ("+X ± Y over NAME");
- ladder.json is valid, names every rung, and holds the same steps;
- a rung this build cannot run is named with its reason, never left out: a second, shorter ladder through a
  logpbench whose --help hides --transport ucx (a wrapper around the real binary) must say "not available"
  for the UCT and UCP rungs, and compare the MPI rung with the shm rung, naming the two between.
Exit 77 (ctest SKIP_RETURN_CODE) only where fewer than two rungs can run here (no mpirun, no pml ucx and no
UCX transport): then there is no ladder to climb, and the output says which rungs are missing and why.
Invoked as ladder.py LOGPBENCH SOURCE_DIR host. The lab takes no CPU lock here (ctest runs it RUN_SERIAL)."""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lpbtest import BIN, SRC, load, main  # noqa: E402

SKIP = 77
LADDER = os.path.join(SRC, "scripts", "ladder")
BUILD = os.path.dirname(os.path.dirname(os.path.realpath(BIN)))  # BUILD/app/logpbench
RUNGS = ["shm", "uct", "ucp", "mpi"]
# A few thousand round trips per rung, two runs (an interval needs two): the whole ladder in about 10 s.
SHORT = ["-n", "2000", "--warmup", "200", "--runs", "2"]


def ladder(build, out, timeout=240):
    cmd = [LADDER, "host", "--no-lock", "--methods", "pingpong", "--out", out, "--"] + SHORT
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, BUILD_DIR=build))
    return p, p.stdout + p.stderr


def table_lines(text, quantity="rtt"):
    """The table's rows of one quantity: rung -> the rest of the line."""
    rows = {}
    for line in text.splitlines():
        m = re.match(rf"^  {re.escape(quantity)}\s+(\w+)\s+(.*)$", line)
        if m and m.group(1) in RUNGS + ["all"]:
            rows[m.group(1)] = m.group(2)
    return rows


def check_ladder(out, text, rc):
    doc = load(os.path.join(out, "ladder.json"))
    assert doc["schema"] == "logpbench-ladder/1", doc.get("schema")
    assert [r["name"] for r in doc["rungs"]] == RUNGS, doc["rungs"]
    available = [r["name"] for r in doc["rungs"] if r["status"] == "available"]
    missing = {r["name"]: r["status"] for r in doc["rungs"] if r["status"] != "available"}
    if len(available) < 2:
        print(f"ladder: fewer than two rungs can run here, nothing to climb: {missing}")
        sys.exit(SKIP)
    assert rc == 0, f"scripts/ladder exited {rc} with {available} available\n{text}"
    runs = doc["results"]["pingpong"]["runs"]
    rows = table_lines(text)
    # Every rung has its line, in the ladder's order.
    assert [k for k in rows if k != "all"] == RUNGS, f"the table's rtt lines are for {list(rows)}, not {RUNGS}\n{text}"
    ran = []
    for name in RUNGS:
        if name in missing:
            # Named, with its reason, in the heading and the table; nothing run.
            assert runs[name]["status"] == "not available", runs[name]
            assert re.search(rf"^  {name}\s+.*NOT AVAILABLE: \S", text, re.M), f"rung {name}'s reason is not printed\n{text}"
            assert rows[name].strip().startswith("not available"), rows[name]
            assert not os.path.exists(os.path.join(out, f"{name}-pingpong.json")), name
            continue
        assert runs[name]["status"] == "ran", (name, runs[name])
        res = load(os.path.join(out, f"{name}-pingpong.json"))  # valid JSON, or this raises
        assert res["status"] == "complete", (name, res["status"])
        rtt = res["parameters"]["rtt"]
        assert rtt["value_ns"] and rtt["value_ns"] > 0 and rtt["ci95_ns"] is not None, (name, rtt)
        if name == "mpi":
            assert res["meta"]["mpi"]["mca_from_environment"].get("pml") == "ucx", res["meta"]["mpi"]
            # UCX's own variables as the ranks saw them (not MCA parameters): the rung's UCX_TLS, in the
            # result and in ladder.json.
            env = res["meta"]["mpi"]["ucx_from_environment"]
            assert env.get("UCX_TLS") == "self,posix", env
            assert runs[name].get("ucx_environment") == env, runs[name]
        # The table's value is the result's own.
        assert f"{rtt['value_ns']:.1f} ± {rtt['ci95_ns']:.1f}" in rows[name], (name, rows[name], rtt)
        if not ran:
            assert "lowest rung" in rows[name], rows[name]
        else:
            # What it adds over the rung below that ran, with its interval, and the rungs skipped between named.
            m = re.search(r"([+-]\d+\.\d) ± (\d+\.\d)(?: \(not resolved\))? over (\w+)", rows[name])
            assert m, f"rung {name} has no added cost with an interval: {rows[name]!r}"
            assert m.group(3) == ran[-1], (name, m.group(3), ran)
            between = [r for r in RUNGS[RUNGS.index(ran[-1]) + 1:RUNGS.index(name)]]
            if between:
                assert f"{', '.join(between)} between them did not run" in rows[name], rows[name]
            # The same step in ladder.json, from logpbench compare's JSON on disk.
            step = next(s for s in doc["results"]["pingpong"]["steps"] if s["upper"] == name)
            assert step["lower"] == ran[-1] and step["skipped"] == between, step
            added = step["rows"]["rtt"]["added"]
            assert abs(added["value"] - float(m.group(1))) < 0.06 and added["ci95"] > 0, (added, m.group(0))
            below = load(os.path.join(out, f"{ran[-1]}-pingpong.json"))["parameters"]["rtt"]
            assert abs(added["value"] - (rtt["value_ns"] - below["value_ns"])) < 0.01, (added, rtt, below)
            assert os.path.exists(step["compare_json"]), step
        ran.append(name)
    return doc, available, missing


def test_host():
    out = tempfile.mkdtemp(prefix="logpb-ladder-e2e-")
    p, text = ladder(BUILD, out)
    print(text)
    doc, available, missing = check_ladder(out, text, p.returncode)
    # The figure, where matplotlib is (the ladder says when it is not).
    assert os.path.exists(os.path.join(out, "ladder.png")) or "no figure" in text, text

    # A logpbench without --transport ucx: its UCT and UCP rungs are named as not available, and MPI's step is
    # taken over shm with the two between them named.
    if "mpi" not in available:
        print(f"ladder: the no-UCX ladder is not run: the mpi rung is not available here ({missing['mpi']})")
        return
    fake = tempfile.mkdtemp(prefix="logpb-ladder-noucx-")
    os.makedirs(os.path.join(fake, "app"))
    os.symlink(os.path.join(BUILD, "bench"), os.path.join(fake, "bench"))
    wrapper = os.path.join(fake, "app", "logpbench")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\n# {BIN} with --transport ucx hidden from its --help\n"
                f"case \"$1\" in --help) \"{BIN}\" --help | grep -v -e ucx-layer -e ucx-tl -e ucx-dev; exit 0 ;; esac\n"
                f"exec \"{BIN}\" \"$@\"\n")
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    out2 = tempfile.mkdtemp(prefix="logpb-ladder-e2e-noucx-")
    p, text = ladder(fake, out2)
    print(text)
    doc, available, missing = check_ladder(out2, text, p.returncode)
    assert set(missing) == {"uct", "ucp"}, missing
    assert all("no --transport ucx" in why for why in missing.values()), missing
    print("ladder: every rung named; available ones ran with valid JSON; added costs with intervals; "
          "a rung that is not built is named with its reason")


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
