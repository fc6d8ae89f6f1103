#!/usr/bin/env python3
"""DPDK 22.11's memif race with a dying peer, made to happen for real (dpdk/memif_guard.hpp).

The flood sender's datapath thread is stopped by gdb (non-stop mode: only that thread) inside eth_memif_rx,
past its "connected" test, on the instruction that reads the ring's head. Its receiver is SIGKILLed; memif's
interrupt thread, still running, tears the connection down and unmaps the ring. Then the datapath thread
goes on and reads the unmapped ring: the fault a dying peer causes about once in a hundred floods here,
every time.
  race:    the guard must turn it into "peer lost": exit 3, a message naming the faulting instruction, and
           the results file as last checkpointed with status "failed".
  foreign: the same, but the thread goes on at address 0 instead (a fault outside the PMD, link down):
           the guard must not swallow it; the process dies of SIGSEGV (a sanitized build runs this case
           with ASan's SEGV handler off, so that the fault meant to happen is not a sanitizer report).
The instruction's offset is known for Debian's DPDK 22.11.11-0+deb12u1 build of the PMD (checked by its
SHA-256); with another build, or without gdb, the test says so and skips (77).

usage: memif_teardown.py LOGPBENCH SOURCE_DIR {race|foreign}
"""
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PMD = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_net_memif.so.23.0"
KNOWN = {  # SHA-256 of the PMD -> offset of eth_memif_rx's load of ring->head (movzwl 0x6(%r9),%eax)
    "6ef5e621f6e375f597d525f144a4519202b178a3cddd7805a7d40f719b852062": 0x8B03,
}
GDB_SCRIPT = r'''
import gdb, os, signal, time
addr = int(os.environ["LPB_BP"], 16)
gdb.execute("set pagination off")
gdb.execute("handle SIGSEGV nostop noprint pass")
gdb.execute(f"break *{addr:#x}")
hit = False
for _ in range(50):  # stops reported from the attach come first
    gdb.execute("continue -a")
    t = gdb.selected_thread()
    if t is not None and t.is_stopped() and int(gdb.parse_and_eval("$pc")) == addr:
        hit = True
        break
print("memif_teardown: datapath stopped at the ring read:", hit, flush=True)
if not hit:
    gdb.execute("detach")
    raise SystemExit
gdb.execute("delete")
os.kill(int(os.environ["LPB_PEER"]), signal.SIGKILL)
time.sleep(1.5)  # memif's interrupt thread, still running, sees the socket close and unmaps
print("memif_teardown: threads", [(x.name, "running" if x.is_running() else "stopped")
                                  for x in gdb.selected_inferior().threads()], flush=True)
if os.environ["LPB_CASE"] == "foreign":
    gdb.execute("set $pc = 0")
gdb.execute("continue")
'''


def no_core():  # the foreign case's SIGSEGV is expected: no core file
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def skip(why):
    print("memif_teardown: SKIP:", why)
    sys.exit(77)


def attempt(lpb, off, case):
    """One flood, stopped and faulted as the case says; returns (exit status, leader's stderr, results path)."""
    tmp = tempfile.mkdtemp(prefix="logpb-teardown-")
    out = os.path.join(tmp, "flood.json")
    err = open(os.path.join(tmp, "leader.err"), "w+")
    env = dict(os.environ)
    if case == "foreign":  # a sanitized build: its SEGV handler stays out, so the fault is a plain SIGSEGV, not a report
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "handle_segv=0"]))
    leader = subprocess.Popen([lpb, "local", "--transport", "dpdk", "--bench", "flood", "--sizes", "1",
                               "--messages", "100000000", "--runs", "1", "--flood-overlap", "no", "-q",
                               "--json", out], stdout=subprocess.DEVNULL, stderr=err, preexec_fn=no_core, env=env)
    try:
        # The first checkpoint is written once every link is up: the guard is armed from then on.
        deadline = time.time() + 60
        while not os.path.exists(out):
            assert leader.poll() is None, f"leader exited {leader.returncode} before its first checkpoint"
            assert time.time() < deadline, "no checkpoint after 60 s"
            time.sleep(0.1)
        time.sleep(1)
        kids = subprocess.run(["pgrep", "-P", str(leader.pid)], capture_output=True, text=True).stdout.split()
        assert len(kids) == 1, f"expected one forked peer, found {kids}"
        base = next(int(l.split("-")[0], 16) for l in open(f"/proc/{leader.pid}/maps") if "librte_net_memif" in l)
        genv = dict(os.environ, LPB_BP=hex(base + off), LPB_PEER=kids[0], LPB_CASE=case)
        script = os.path.join(tmp, "teardown.gdb.py")
        open(script, "w").write(GDB_SCRIPT)
        g = subprocess.run(["gdb", "-q", "-batch", "-ex", "set non-stop on", "-ex", f"attach {leader.pid}", "-x", script],
                           env=genv, capture_output=True, text=True, timeout=120)
        print("\n".join(l for l in g.stdout.splitlines() if l.startswith("memif_teardown:")))
        assert "stopped at the ring read: True" in g.stdout, g.stdout[-2000:] + g.stderr[-2000:]
        rc = leader.wait(timeout=30)
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait()
    err.seek(0)
    text = err.read()
    print(f"leader: exit {rc}; stderr: {text.strip()[-400:]}")
    return rc, text, out


def main():
    lpb, case = sys.argv[1], sys.argv[3]
    assert case in ("race", "foreign"), case
    if shutil.which("gdb") is None:
        skip("gdb is not installed (scripts/setup installs it)")
    if not os.path.exists(PMD):
        skip(f"{PMD} missing")
    digest = hashlib.sha256(open(PMD, "rb").read()).hexdigest()
    if digest not in KNOWN:
        skip(f"the ring-read offset is not known for this build of the memif PMD (sha256 {digest})")
    off = KNOWN[digest]
    if case == "foreign":
        rc, text, _ = attempt(lpb, off, case)
        assert rc != 3 and "faulted in a burst" not in text, f"a fault outside the PMD was taken for the race (exit {rc})"
        assert rc == -signal.SIGSEGV, f"exit {rc}: not the SIGSEGV expected"
        print(f"foreign: the fault outside the PMD went on to its default disposition (exit {rc})")
        return
    # The unmapped range may be mapped again (another allocation) before the read: the read then succeeds
    # on stale memory, the PMD sees the link down at its next burst, and the peer is lost the usual way.
    # Every attempt must end as a lost peer; up to three, until one faults.
    for i in range(3):
        rc, text, out = attempt(lpb, off, case)
        assert rc == 3, f"exit {rc}, not 3 (peer lost)"
        doc = json.load(open(out))
        assert doc["status"] == "failed", doc["status"]
        assert "transport" in doc.get("meta", {}), "the checkpoint's contents (meta.transport) are missing"
        if "faulted in a burst" not in text:
            print(f"attempt {i + 1}: the read did not fault (the range was mapped again?): peer lost the usual way")
            continue
        assert f"fault at librte_net_memif+{off:#x}" in text, "the message does not name the ring read"
        assert doc["error"].startswith("peer lost: the DPDK memif PMD faulted"), doc.get("error")
        print(f"race (attempt {i + 1}): peer lost (exit 3), the results file as last checkpointed with status 'failed'")
        return
    raise AssertionError("the stopped read never faulted in three attempts")


if __name__ == "__main__":
    main()
