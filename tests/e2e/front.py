#!/usr/bin/env python3
"""The front door as a user meets it: `logpbench --json F` saves the table `logpbench` prints (agree), the
properties of the shm link in that table are notes and not failed checks, an error prints once, and a host
that cannot give clean figures is named before the run. Each subcommand is one ctest test.

usage: front.py LOGPBENCH_BINARY SOURCE_DIR TEST
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-front-")
# Properties of the shm link (its send completes inside the send call), never a figure in doubt.
LINK_PROPERTIES = ("local completion inside the send call", "availability outside [0,1] (send",
                   "send completion comes after the send returns", "availability in [0,1] (send")


def test_first_table():
    """Output options alone run what `logpbench` alone runs (agree), and its link's properties are notes."""
    out = os.path.join(TMP, "first.json")
    p = run(["--json", out], timeout=170)
    doc = load(out)
    assert doc["meta"]["flags"]["bench"] == "agree", doc["meta"]["flags"]
    assert "agree" in doc and doc["parameters"], sorted(doc)
    assert "one LogP table" in p.stdout, p.stdout
    assert f"results: {out}" in p.stdout, p.stdout
    # shm completes a send inside the send call: availability says so in a note, beside the checks, where its
    # figures show it (a send of a few clock steps often does not, and then there is no note).
    failed = [c["name"] for c in doc["checks"] if not c.get("ok", True)]
    for prop in LINK_PROPERTIES:
        assert not any(prop in n for n in failed), (prop, failed)
        assert not re.search(r"check failed.*" + re.escape(prop), p.stdout), p.stdout
    assert isinstance(doc.get("notes"), list), sorted(doc)
    names = [n["name"] for n in doc["notes"]]
    for n in names:  # each a method's own ("availability: ...", "kielmann: o_r > g"), printed as a note
        assert re.match(r"[a-z]+: ", n) and f"  note: {n}: " in p.stdout, (n, p.stdout)
    print("checks failed:", failed)
    print("notes:", names)


def count_error(args, needle):
    p = run(args, timeout=60, check=False)
    text = p.stdout + p.stderr
    if "is not built into this logpbench" in text:
        print(f"SKIP: {text.strip()}")
        sys.exit(77)
    n = text.count(needle)
    print(f"logpbench {' '.join(args)}: exit {p.returncode}, '{needle}' {n} time(s)\n{p.stderr.strip()}")
    assert p.returncode != 0, text
    assert "terminate called" not in text and "Segmentation" not in text, text
    assert n == 1, f"'{needle}' printed {n} times:\n{text}"


def test_error_once():
    """A missing device is one error line and a non-zero exit, whichever rank found it first."""
    count_error(["agree", "--transport", "verbs", "-d", "logpb_no_such_dev", "-q"], "no RDMA device")
    count_error(["--transport", "verbs", "-d", "logpb_no_such_dev", "--bench", "pingpong", "-n", "100", "-q"],
                "no RDMA device")


def test_busy_core():
    """A task spinning on the peer's core is named before the run: core, command and pid, what to do."""
    spin = subprocess.Popen(["taskset", "-c", "1", "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        out = os.path.join(TMP, "busy.json")
        p = run(["local", "--cpu", "0", "--peer-cpu", "1", "--bench", "pingpong", "-n", "1000", "--runs", "1",
                 "--json", out, "-q"], timeout=60)
        lines = [ln for ln in p.stderr.splitlines() if "another task is runnable on measuring core 1" in ln]
        print("\n".join(lines))
        mine = [ln for ln in lines if f"(pid {spin.pid})" in ln and "'sh'" in ln]
        assert len(mine) == 1, p.stderr
        assert mine[0].startswith("logpbench: warning: rank 1: ") and "isolcpus" in mine[0], mine[0]
        warnings = load(out)["meta"]["host_warnings"]
        assert any(w["rank"] == 1 and w["kind"] == "runnable_task" and f"(pid {spin.pid})" in w["detail"]
                   and "--cpu" in w["advice"] for w in warnings), warnings
    finally:
        spin.kill()
        spin.wait()


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
