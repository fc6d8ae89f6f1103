#!/usr/bin/env python3
"""--bench poll (methods/poll): the poll model against an emulated NI whose receive costs are known, over
raw shm, and its refusals.

emulated  The emulated NI with batch=8 hands up to 8 arrived frames per poll and pads each frame it hands up
          to o_r = 2 us from the moment it found it (shm/transport.hpp, EmulatedNI::next_arrival): its o_r
          is per frame, and a poll has no emulated cost of its own. So the fit must give b = 2000 ns within
          max(5%, 100 ns) (tests/e2e/truth.py's tolerance: the real per-frame path, dispatch and the
          handler's increment, rides outside the pad, tens of ns), a within 100 ns of zero (the real
          fixed path of a poll: the ring scan and the call, outside every pad), every timed poll handing
          up the k asked for, Kielmann's o_r predicted (a + b) within b's tolerance plus a's bound, and a
          stream that keeps a queue standing handing up the full 8 per poll (at least 7 on average) with
          a / f + b = 2000 ns per message within b's tolerance, and that stream's receive time per
          message, measured as the overlap test measures it, at least that less the tolerance and at most
          10% above it (the loop's own TSC reads ride on it: 2074-2112 ns against 2035-2048 predicted).
          Twenty-two runs here (AMD EPYC VM, 2 cores, loaded by other builds) gave b 2031-2042 ns, a 7-24
          ns (72-82 ns in 3 of them, all under ctest), the standing stream's f 7.80-7.98; the negative
          control below holds the tolerance to telling o_r = 2 us from the 1.8 or 2.2 us a wrong pad
          would give.
shm       The raw shm ring hands up one frame per poll: a and b cannot be parted and say so (null with the
          reason), the one-frame poll and both predictions are positive figures, every poll in a stream
          handed up one frame.
errors    Too short a stream or too few polls per count fail with a clear message.
lossy_dpdk  A lossy link (memif dropping frames) the model cannot use fails at once with a clear message.

usage: poll.py LOGPBENCH SOURCE_DIR emulated|shm|errors|lossy_dpdk
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import expect_fail, load, main, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="logpb-poll-")
EMULATE = "os=1us,or=2us,g=3us,L=5us,batch=8"
OR_NS, BATCH = 2000.0, 8
REL, ABS_NS = 0.05, 100.0
QUICK = ["--runs", "1", "--poll-reps", "60", "--messages", "4000", "-q"]


def tolerance(truth):
    return max(REL * abs(truth), ABS_NS)


def poll_run(name, extra):
    out = os.path.join(TMP, name + ".json")
    run(["local", "--bench", "poll", *QUICK, "--json", out, *extra], timeout=300)
    doc = load(out)
    assert doc["status"] == "complete", (doc.get("status"), doc.get("error"))
    return doc


def value(doc, key):
    p = doc["parameters"][key]
    assert p["value_ns"] is not None, (key, p)
    assert p["value_ns"] >= 0, (key, p)
    return p["value_ns"]


def check(doc, name):
    for c in doc["checks"]:
        if c["name"] == name:
            return c
    raise AssertionError(f"no check '{name}' in {[c['name'] for c in doc['checks']]}")


def test_emulated():
    doc = poll_run("emulated", ["--emulate", EMULATE])
    sec = doc["poll"]
    assert sec["receive_batch"] == BATCH, sec["receive_batch"]
    b, a = value(doc, "poll_per_frame"), value(doc, "poll_fixed")
    print(f"emulated: a {a:.1f} ns, b {b:.1f} ns, empty {value(doc, 'poll_empty'):.1f} ns, "
          f"o_r {value(doc, 'o_r_predicted'):.1f}, backlog f {sec['frames_per_poll_backlog']['mean']:.2f} "
          f"predicted {value(doc, 'o_r_backlog_predicted'):.1f} measured {value(doc, 'o_r_backlog_measured'):.1f}")
    assert abs(b - OR_NS) <= tolerance(OR_NS), f"per-frame cost {b} ns, emulated o_r {OR_NS} ns"
    # Negative control: the same tolerance refuses a pad 10% off.
    assert abs(b - 0.9 * OR_NS) > tolerance(OR_NS) or abs(b - 1.1 * OR_NS) > tolerance(OR_NS)
    assert a <= ABS_NS, f"fixed cost per poll {a} ns: the emulator charges none, the real path is tens of ns"
    # Kielmann's o_r predicted, a + b: the emulated 2 us plus the real path of one poll, so within b's
    # tolerance plus a's bound (a reached 72-82 ns in 3 of 6 ctest runs under the load of other builds).
    assert abs(value(doc, "o_r_predicted") - OR_NS) <= tolerance(OR_NS) + ABS_NS, doc["parameters"]["o_r_predicted"]
    assert check(doc, "the timed polls handed up the frames asked for")["ok"], doc["checks"]
    assert check(doc, "a poll's time is a + b x the frames it hands up")["ok"], doc["checks"]
    # The raw record: the timed polls handed up what was asked (at most 5% short, as the check says).
    timed = doc["runs"][0]["poll"]["timed"]
    short = sum(1 for k, n in zip(timed["asked"], timed["frames"]) if n < min(k, BATCH))
    assert short * 20 <= len(timed["asked"]), f"{short} of {len(timed['asked'])} timed polls short"
    back = sec["frames_per_poll_backlog"]
    assert back["mean"] >= BATCH - 1, f"a standing queue's polls handed up {back['mean']} frames, batch {BATCH}"
    predicted, measured = value(doc, "o_r_backlog_predicted"), value(doc, "o_r_backlog_measured")
    assert abs(predicted - OR_NS) <= tolerance(OR_NS), doc["parameters"]["o_r_backlog_predicted"]
    # Measured as the overlap test measures it: the stream loop's own per-message work (a TSC read pair
    # around each computation, the waiting loop's test) rides on it, so it may only exceed the prediction,
    # and by no more than the relation check allows (10%).
    assert predicted - tolerance(OR_NS) <= measured <= 1.10 * predicted, (predicted, measured)
    assert check(doc, "Bell's o_r in a standing stream is a / f + b")["ok"], doc["checks"]
    # The flood: g = 3 us > o_r, so the receiver outruns the sender and polls empty between arrivals; no
    # queue stands (a descheduled receiver may still find a few waiting).
    flood = sec["frames_per_poll_stream"]
    assert 1.0 <= flood["mean"] < back["mean"], flood
    assert flood["empty_polls"] > 0, flood


def test_shm():
    doc = poll_run("shm", [])
    sec = doc["poll"]
    assert sec["receive_batch"] == 1, sec
    for key in ("poll_fixed", "poll_per_frame"):
        p = doc["parameters"][key]
        assert p["value_ns"] is None and "cannot be parted" in p["error"], (key, p)
    one = value(doc, "poll_one_frame")
    empty = value(doc, "poll_empty")
    assert 0 < empty < one, (empty, one)
    assert value(doc, "o_r_predicted") == one
    assert value(doc, "o_r_stream_predicted") == one
    assert sec["frames_per_poll_stream"]["mean"] == 1.0, sec
    assert sec["frames_per_poll_backlog"]["mean"] == 1.0, sec


def test_errors():
    expect_fail(["local", "--bench", "poll", "--messages", "100", "-q"], "--messages 100 leaves fewer than",
                codes=(1, 2))
    expect_fail(["local", "--bench", "poll", "--poll-reps", "5", "-q"], "--poll-reps must be in", codes=(1, 2))


def test_lossy_dpdk():
    # memif dropping 2% of frames: the model needs every frame it asks for, so the run ends at once, exit 3
    # (a peer error), naming what was lost and what to check.
    took = expect_fail(["local", "--transport", "dpdk", "--drop-rate", "0.02", "--loss-timeout", "0.002", "--bench",
                        "poll", "--runs", "1", "--poll-reps", "20", "--messages", "2000", "-q"],
                       "the poll model needs a transport that loses no message", codes=(3,))
    assert took < 60, f"took {took:.0f} s to refuse a lossy link"


if __name__ == "__main__":
    main(globals(), sys.argv[3])
