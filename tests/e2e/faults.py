#!/usr/bin/env python3
"""Fault trials: a rank SIGKILLed at a random point of a run, many times over.

usage: faults.py LOGPBENCH SOURCE_DIR trials TRANSPORT COUNT [SEED] [-- EXTRA LOGPBENCH ARGS]
TRANSPORT mpi runs the two ranks under scripts/mpirun-lab (the leader is MPI rank 0); there the survivor's
exit code is mpirun's, so only the deadline, the JSON and the absence of crash reports are checked.

Each trial starts `logpbench local --transport TRANSPORT` (two ranks: the leader, rank 0, which writes the
JSON, and its forked peer) on one method picked in turn (pingpong, signature, flood, kielmann, each set up to
run far longer than the trial), picks a victim (the peer or the leader, alternately) and a moment uniformly
in [0, 4 s] from the start (startup, bootstrap, calibration and measurement are all reachable), and kills
the victim with SIGKILL. A trial survives when:
  - every process of the run has exited within 5 s of the kill (the survivor notices by itself; nothing
    else is signalled);
  - a surviving leader exits 3 (a peer error) with a message naming the peer or rank, and its JSON is valid
    with status "failed";
  - the JSON on disk, whoever died, is valid whenever it exists, and keeps every measured point the file
    held before the kill (the file is polled during the run; its `runs` may only grow);
  - nothing crashed (no "terminate called", no sanitizer or segfault report on stderr).
It prints one line per failed trial and a table row `faults TRANSPORT: N trials, S survived`, and exits 1
when any trial failed.
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, SRC, main  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-faults-")
EXIT_DEADLINE_S = 5.0
KILL_WINDOW_S = 4.0

# Each far longer than a trial, so the kill lands in the middle of something.
METHODS = [
    ["--bench", "pingpong", "-n", "1000000", "--runs", "100"],
    ["--bench", "signature", "--runs", "50"],
    ["--bench", "flood", "--runs", "50"],
    ["--bench", "kielmann", "--runs", "1000"],  # a run takes ~50 ms on shm now: 50 ended before the kill
]


def alive(pid):
    """Whether any thread of process pid still runs (a multithreaded process whose main thread has exited
    shows as a zombie while its other threads, DPDK's for one, still run)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return False
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return False


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout.split()
        for k in kids:
            out.append(int(k))
            todo.append(int(k))
    return out


def mpi_ranks(pids):
    """The logpbench processes among pids by their MPI rank (Open MPI's OMPI_COMM_WORLD_RANK), in rank order."""
    found = {}
    for x in pids:
        try:
            with open(f"/proc/{x}/comm") as f:
                if f.read().strip() != "logpbench":
                    continue
            with open(f"/proc/{x}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            found[int(env[b"OMPI_COMM_WORLD_RANK"])] = x
        except (FileNotFoundError, ProcessLookupError, KeyError, ValueError):
            pass
    return [found[r] for r in sorted(found)]


def load_or_none(path):
    """The JSON at path: None when there is no file; raises when it exists but is not valid JSON."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return json.loads(text)


def leaves(x):
    if isinstance(x, dict):
        return sum(leaves(v) for v in x.values())
    if isinstance(x, list):
        return sum(leaves(v) for v in x)
    return 1


def measured(doc):
    """How much the file holds of measured data: the leaves under `runs` (which only grow during a run)."""
    return leaves(doc.get("runs", [])) if doc else 0


def one_trial(transport, extra, method, victim, at, out):
    """Runs one trial; returns "" when it survived, else what went wrong."""
    if os.path.exists(out):
        os.unlink(out)
    if transport == "mpi":  # two ranks under Open MPI's mpirun (scripts/mpirun-lab), found by their rank
        args = [os.path.join(SRC, "scripts", "mpirun-lab"), "--no-lock", "-np", "2", "--timeout", "120", "--",
                BIN, "--transport", "mpi", "--rendezvous-dir", TMP, "--json", out, "-q"] + method + extra
    else:
        args = [BIN, "local", "--transport", transport, "--json", out, "-q"] + method + extra
    err_path = out + ".stderr"
    with open(err_path, "w") as err:
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    t0 = time.time()
    seen_before = 0  # the most measured data the file held before the kill
    family = set()
    target = None
    try:
        # Until the moment comes, watch the file and the processes; the peer is killed at the moment or,
        # if it does not exist yet, as soon as it appears.
        while True:
            now = time.time() - t0
            kids = descendants(p.pid) if p.poll() is None else []
            family.update(kids)
            try:
                seen_before = max(seen_before, measured(load_or_none(out)))
            except json.JSONDecodeError as e:
                return f"invalid JSON on disk during the run: {e}"
            if p.poll() is not None:
                return f"the run ended by itself before the kill (exit {p.returncode}) at {now:.2f} s"
            if now >= at:
                if transport == "mpi":
                    ranks = mpi_ranks(kids)
                    if len(ranks) == 2:
                        target = ranks[0 if victim == "leader" else 1]
                        break
                elif victim == "leader":
                    target = p.pid
                    break
                elif kids:
                    target = kids[0]
                    break
            if now > at + 20:
                return "the peer process never appeared"
            time.sleep(0.02)
        # What was on disk right before the kill counts as finished.
        try:
            seen_before = max(seen_before, measured(load_or_none(out)))
        except json.JSONDecodeError as e:
            return f"invalid JSON on disk before the kill: {e}"
        family.update(descendants(p.pid))
        family.add(p.pid)
        t_kill = time.time()
        os.kill(target, signal.SIGKILL)
        # Everyone must be gone within the deadline, by themselves.
        while time.time() - t_kill < EXIT_DEADLINE_S:
            p.poll()
            if not any(alive(x) for x in family):
                break
            time.sleep(0.01)
        took = time.time() - t_kill
        if p.poll() is None and not alive(p.pid):
            p.wait(timeout=1)
        left = sorted(x for x in family if alive(x))
        if left:
            return f"processes {left} still running {EXIT_DEADLINE_S:.0f} s after killing the {victim}"
        with open(err_path) as f:
            stderr = f.read()
        for bad in ("terminate called", "Segmentation", "AddressSanitizer", "runtime error:", "Aborted"):
            if bad in stderr:
                return f"crash report on stderr: {stderr.strip()[-400:]}"
        try:
            doc = load_or_none(out)
        except json.JSONDecodeError as e:
            return f"invalid JSON after the kill: {e}"
        if victim == "peer" and transport != "mpi":  # under mpirun the exit code is mpirun's
            if p.returncode != 3:
                return f"the leader exited {p.returncode}, not 3: {stderr.strip()[-300:]}"
            low = stderr.lower()
            if "peer" not in low and "rank" not in low:
                return f"the leader's message names neither peer nor rank: {stderr.strip()[-300:]}"
            if doc is None:
                return "the surviving leader left no JSON"
            if doc.get("status") != "failed":
                return f"JSON status {doc.get('status')!r}, not 'failed'"
        if doc is not None and measured(doc) < seen_before:
            return f"measured data lost: the file held {seen_before} values before the kill, {measured(doc)} after"
        return "" if took <= EXIT_DEADLINE_S else f"took {took:.2f} s"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for x in family:
            try:
                os.kill(x, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()


def test_trials(transport, count, seed="1", *rest):
    extra = list(rest[1:]) if rest and rest[0] == "--" else list(rest)
    rng = random.Random(int(seed))
    n = int(count)
    failed, kinds = [], {}
    t_start = time.time()
    for i in range(n):
        method = METHODS[i % len(METHODS)]
        victim = "peer" if (i // len(METHODS)) % 2 == 0 else "leader"
        at = rng.uniform(0, KILL_WINDOW_S)
        why = one_trial(transport, extra, method, victim, at, os.path.join(TMP, f"t{i}.json"))
        key = f"{method[1]}/{victim}"
        ok, tot = kinds.get(key, (0, 0))
        kinds[key] = (ok + (not why), tot + 1)
        if why:
            failed.append(i)
            print(f"trial {i}: {method[1]}, kill the {victim} at {at:.2f} s: FAILED: {why}", flush=True)
    for key, (ok, tot) in sorted(kinds.items()):
        print(f"  {key}: {ok}/{tot}")
    print(f"faults {transport}: {n} trials, {n - len(failed)} survived ({time.time() - t_start:.0f} s)")
    assert not failed, f"{len(failed)} of {n} trials failed: {failed}"


if __name__ == "__main__":
    main(globals(), sys.argv[3], *sys.argv[4:])
