"""scripts/lib, what the comparison and lab scripts share: the one summary of a comparison's rounds (the
median of each round's own ratio), the CPU lock in its shell and Python forms, and the scripts finding
their lib from any working directory."""
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import SRC, main  # noqa: E402

LIB = os.path.join(SRC, "scripts", "lib")
sys.path.insert(0, LIB)
from ratios import median_of_ratios  # noqa: E402
import per_message as PM  # noqa: E402


def test_ratios():
    # Rounds whose median of ratios (2.0) is not their ratio of medians (130 / 100 = 1.3): a summary that
    # divided the medians would pair round 3's numerator with rounds 1-2's denominator.
    num, den = [200.0, 90.0, 130.0], [100.0, 100.0, 50.0]
    s = median_of_ratios(num, den)
    assert s.value is not None and abs(s.value - 2.0) < 1e-12, s
    assert s.rounds_text() == "2.000 0.900 2.600", s.rounds_text()
    assert (s.kept, s.rounds, s.dropped) == (3, 3, []), s
    assert s.kept_text() == "3 of 3 rounds", s.kept_text()
    # Dropped rounds: one the caller leaves out, one with no figure, one with an impossible one. What is
    # left is the three above, in other places.
    num2 = [500.0, 200.0, None, 90.0, 300.0, 130.0]
    den2 = [100.0, 100.0, 100.0, 100.0, 0.0, 50.0]
    skip = ["the VM changed speed", None, None, None, None, None]
    s = median_of_ratios(num2, den2, skip=skip, names=("logpbench RTT", "bare RTT"))
    assert abs(s.value - 2.0) < 1e-12, s
    assert (s.kept, s.rounds) == (3, 6), s
    assert s.dropped == [(1, "the VM changed speed"), (3, "no logpbench RTT figure"),
                         (5, "bare RTT figure 0.0 is not positive")], s.dropped
    assert s.rounds_text() == "- 2.000 - 0.900 - 2.600", s.rounds_text()
    assert s.kept_text().startswith("3 of 6 rounds; dropped: round 1 (the VM changed speed); round 3"), s.kept_text()
    # An even count: the mean of the middle two, as statistics.median has it.
    assert abs(median_of_ratios([1, 2, 3, 4], [1, 1, 1, 1]).value - 2.5) < 1e-12
    # Nothing kept: no value, never a number.
    s = median_of_ratios([None, float("nan")], [1.0, 1.0])
    assert s.value is None and s.kept == 0, s
    for bad in (([1.0], [1.0, 2.0], None), ([1.0], [1.0], [None, None])):
        try:
            median_of_ratios(*bad)
        except ValueError:
            continue
        raise AssertionError(f"median_of_ratios{bad} accepted rounds that do not pair up")
    print("median of ratios 2.000 (ratio of medians would be 1.300); dropped rounds named")


def test_per_message():
    """scripts/lib/per_message.py: what logpbench adds per message over a bare loop, split into the AM layer
    and the transport's datapath, and medians that leave out what a round lacks, never a number for it."""
    doc = {"meta": {"harness": {"send_ns": {"value_ns": 6.5}, "recv_ns": {"value_ns": 4.5}}}}
    assert PM.am_layer_ns(doc) == 11.0 and PM.am_layer_ns({"meta": {}}) is None and PM.am_layer_ns(None) is None
    r1 = PM.split(416.0, 380.5, 11.0)
    assert r1 == {"over_bare": 35.5, "am_layer": 11.0, "transport_datapath": 24.5}, r1
    r2 = PM.split(None, 380.0, 11.0)
    assert r2 == {"over_bare": None, "am_layer": 11.0, "transport_datapath": None}, r2
    r3 = PM.split(400.0, 390.0, None)
    assert r3 == {"over_bare": 10.0, "am_layer": None, "transport_datapath": None}, r3
    m = PM.medians([r1, r2, r3])
    assert m == {"over_bare": 22.75, "am_layer": 11.0, "transport_datapath": 24.5}, m
    assert PM.medians([r2]) == {"over_bare": None, "am_layer": 11.0, "transport_datapath": None}
    line = PM.text("x-vs-bare", m, "shm")
    assert line == ("x-vs-bare per message: +22.8 ns over the bare loop, of which the AM layer 11.0 ns "
                    "(meta.harness send + recv) and the shm transport's datapath +24.5 ns"), line
    assert "n/a ns over fi_pingpong" in PM.text("y", PM.medians([r2]), "libfabric", bare="fi_pingpong")
    assert "fi_pingpong's" in PM.rule("fi_pingpong's") and PM.RULE == PM.rule()
    print(line)


def hold(path):
    f = open(path, "w")
    fcntl.flock(f, fcntl.LOCK_EX)
    return f


def test_cpu_lock():
    # A lock file of the test's own: the real one is the lead's measurements'.
    d = tempfile.mkdtemp(prefix="logpb-scripts-lib.")
    path = os.path.join(d, "cpu.lock")
    env = dict(os.environ, LOGPB_CPU_LOCK_FILE=path)
    sh = f". {LIB}/cpu-lock.sh; cpu_lock_hold probe 1; echo held"
    held = hold(path)
    t0 = time.monotonic()
    p = subprocess.run(["bash", "-c", sh], env=env, capture_output=True, text=True, timeout=30)
    took = time.monotonic() - t0
    assert p.returncode == 2 and "held" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert f"probe: waiting up to 1s for {path}" in p.stderr and f"probe: no {path} after 1s" in p.stderr, p.stderr
    assert took >= 0.9, took
    # The Python form waits while the lock is held, and goes on when it is released.
    py = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {LIB!r}); import cpu_lock; "
                           "cpu_lock.hold_cpu_lock('pyprobe'); print('held')"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = py.stderr.readline()
    assert line.startswith(f"pyprobe: waiting for {path}"), line
    time.sleep(0.3)
    assert py.poll() is None, "hold_cpu_lock went on while the lock was held"
    held.close()
    out, err = py.communicate(timeout=30)
    assert py.returncode == 0 and out.strip() == "held", (py.returncode, out, err)
    # Free: the shell form takes it at once and holds it while its shell lives.
    p = subprocess.Popen(["bash", "-c", sh + "; sleep 2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "held"
    f = open(path, "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        raise AssertionError("cpu_lock_hold did not keep the lock while its shell lived")
    except BlockingIOError:
        pass
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and not err, (p.returncode, out, err)
    # cpu_lock_run holds it for one command: the command sees it taken.
    probe = f"import fcntl; f = open({path!r}, 'w'); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"
    p = subprocess.run(["bash", "-c", f". {LIB}/cpu-lock.sh; cpu_lock_run {sys.executable} -c \"{probe}\""],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "BlockingIOError" in p.stderr, (p.returncode, p.stderr)
    print("cpu lock: waits, gives up after its limit (exit 2), holds while its shell lives")


def test_paths():
    # Every script finds scripts/lib from its own location, whatever the working directory.
    d = tempfile.mkdtemp(prefix="logpb-scripts-lib.")
    env = dict(os.environ, LOGPB_CPU_LOCK_FILE=os.path.join(d, "cpu.lock"))
    for name in ("mpi-vs-bare", "vs-logp-mpi"):
        p = subprocess.run([os.path.join(SRC, "scripts", name), "--help"], cwd=d, env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and "usage:" in p.stdout, (name, p.returncode, p.stdout, p.stderr)
    # The lab takes the (test's) CPU lock through the lib: without the lib it stops at once.
    if shutil.which("mpirun"):
        p = subprocess.run([os.path.join(SRC, "scripts", "mpirun-lab"), "-np", "1", "--timeout", "60", "--", "true"],
                           cwd=d, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    else:
        print("no mpirun here: scripts/mpirun-lab not tried")
    print("scripts find scripts/lib from", d)


def load_script(name):
    """A script of scripts/ (no .py suffix) as a module, its main() not run."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), os.path.join(SRC, "scripts", name))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    return mod


def test_design_notes():
    # vs-logp-mpi's reasons, for every mode, size and figure, from the keys a logpbench JSON over MPI has
    # (a small AM of 8 B on the wire, of a mean of 12.5 B, or a run that does not say): each is a (key,
    # text) pair, and the round trip at 0 B names the bytes the run recorded.
    v = load_script("vs-logp-mpi")
    for small, text in ((8.0, "8 B on the wire"), (12.5, "12.5 (mean) B on the wire"), (None, "64 B on the wire")):
        doc = {"meta": {"am": {"frame_bytes": 64},
                        "transport": {"inline_bytes": 4032, "rx_ring": 64, "small_am_bytes": small},
                        "mpi": {"mpi_frame": "compact", "receive_from": "rank 1, the only peer"},
                        "harness": {"send_ns": {"value_ns": 6.7}, "recv_ns": {"value_ns": 7.2}}}}
        if small is None:
            del doc["meta"]["transport"]["small_am_bytes"]
        for send, recv in (("send", "recv"), ("isend", "irecv"), ("ssend", "recv"), ("send", "irecv")):
            for m in (0, 8, 1024, 4096, 65536):
                for figure in ("RTT", "o_s", "o_r", "g"):
                    notes = v.design_notes(m, figure, send, recv, doc)
                    assert all(isinstance(k, str) and isinstance(t, str) and t for k, t in notes), notes
                    if m == 0 and figure == "RTT":
                        am = dict(notes).get("am", "")
                        assert text in am, (small, am)
    print("vs-logp-mpi: design notes for 4 modes x 5 sizes x 4 figures, the wire bytes from the JSON")


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
