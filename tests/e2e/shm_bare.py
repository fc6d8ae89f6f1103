"""bench/shm_bare_pingpong in both layouts (one counter per direction; the shm transport's ring of 64-byte
frames) and with its server timed, bad input refused, and scripts/bench-shm-vs-bare for one short round: its
ratios, its per-message split and its JSON. Functional only: the figures belong to the script on a quiet
machine. Invoked as shm_bare.py LOGPBENCH SOURCE_DIR all SHM_BARE_PINGPONG."""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lpbtest import BIN, SRC, load, main  # noqa: E402


def test_all(bare):
    for args, layout, timed in ((["3000", "0", "1"], "counter", False), (["3000", "0", "1", "frames"], "frames", False),
                                (["3000", "0", "1", "frames", "timed"], "frames", True),
                                (["3000", "0", "1", "counter", "timed"], "counter", True)):
        p = subprocess.run([bare] + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (args, p.returncode, p.stderr)
        doc = json.loads(p.stdout)
        assert doc["layout"] == layout and doc["iterations"] == 3000 and doc["rtt"]["n"] == 3000, doc
        assert doc["rtt"]["median_ns"] > 0 and math.isfinite(doc["rtt"]["median_ns"]), doc
        turn = doc.get("server_turnaround_median_ns")
        assert (turn is not None and 0 < turn < 1e6) if timed else turn is None, doc
        print(f"shm_bare_pingpong {' '.join(args)}: rtt {doc['rtt']['median_ns']:.0f} ns"
              + (f", server turnaround {turn:.0f} ns" if timed else ""))
    for args in (["0"], ["10", "0", "1", "ring"], ["10", "0", "1", "frames", "slow"], ["10", "0", "1", "frames", "timed", "x"]):
        p = subprocess.run([bare] + args, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "usage: shm_bare_pingpong" in p.stderr, (args, p.returncode, p.stderr)
    print("shm_bare_pingpong: bad input refused")
    out = os.path.join(tempfile.mkdtemp(prefix="logpb-shm-bare-"), "vs-bare.json")
    env = dict(os.environ, BUILD_DIR=os.path.dirname(os.path.dirname(os.path.abspath(BIN))), OUT=out)
    p = subprocess.run([os.path.join(SRC, "scripts", "bench-shm-vs-bare"), "1", "3000"], capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    for head in ("shm-vs-bare rtt ratio: ", "shm-vs-frames rtt ratio: ", "shm-vs-bare per message: "):
        assert any(x.startswith(head) for x in p.stdout.splitlines()), (head, p.stdout)
    doc = load(out)
    pm = doc["per_message_ns"]
    # The split adds up: the AM layer and the datapath make what logpbench adds; the layout and the code the datapath.
    assert abs(pm["am_layer"] + pm["transport_datapath"] - pm["over_bare"]) < 1e-6, pm
    assert abs(pm["transport_layout"] + pm["transport_code"] - pm["transport_datapath"]) < 1e-6, pm
    assert doc["ratio"] > 0 and doc["ratio_to_frames"] > 0 and len(doc["server_turnaround_ns"]["frames"]) == 1, doc
    print(p.stdout)


if __name__ == "__main__":
    main(globals(), *sys.argv[3:])
