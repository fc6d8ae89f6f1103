"""What the end-to-end test scripts share: running the logpbench binary, reading its JSON, checking
that a failure is clear. Each script is invoked as SCRIPT LOGPBENCH SOURCE_DIR TEST [ARGS]."""
import json
import subprocess
import sys
import time

BIN, SRC = sys.argv[1], sys.argv[2]


def run(args, timeout=180, check=True):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"logpbench {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def load(path):
    with open(path) as f:
        return json.load(f)


def expect_fail(args, needle, codes=(1, 2, 3), timeout=120):
    """Runs a command that must fail: one of `codes`, a message containing `needle`, no crash.
    Returns how long it took."""
    t0 = time.time()
    p = run(args, timeout=timeout, check=False)
    msg = p.stdout + p.stderr
    assert p.returncode in codes, f"{args}: exit {p.returncode}, wanted one of {codes}\n{msg}"
    assert needle.lower() in msg.lower(), f"{args}: no '{needle}' in\n{msg}"
    assert "terminate called" not in msg and "Segmentation" not in msg and "Aborted" not in msg, msg
    return time.time() - t0


def params_present(doc, keys=("o_s", "o_s_plus_o_r", "g", "L", "rtt")):  # the signature's figures
    for k in keys:
        p = doc["parameters"][k]
        assert "value_ns" in p and "ci95_ns" in p, (k, p)
        assert p["value_ns"] is not None or p.get("error"), (k, p)


def main(namespace, name, *args):
    namespace["test_" + name](*args)
    print(f"{name} {' '.join(args)}: ok")
