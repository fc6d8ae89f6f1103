# shellcheck shell=bash
# The machine's speed state, probed around a measurement; sourced by scripts/raw-vs-mpi and scripts/ladder.
# The bare cache-line ping-pong (bench/shm_bare_pingpong, 20000 round trips on cores 0 and 1, a few ms) is
# run before, between and after the runs being compared. The VMs seen here switch between speed states
# about 3x apart, for seconds to minutes: runs whose probes differ by more than scripts/lib/mpi_ref.py's
# STATE_TOLERANCE ran in two states, and a difference between them would charge a layer with the machine's
# change.
# shellcheck disable=SC2034  # STATE_PROBE is the callers' to test
STATE_LIB=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
STATE_BUILD=${BUILD_DIR:-build}
[[ $STATE_BUILD == /* ]] || STATE_BUILD=$STATE_LIB/../../$STATE_BUILD  # a relative BUILD_DIR is the checkout's
STATE_PROBE=$(readlink -f "$STATE_BUILD/bench/shm_bare_pingpong" || echo "$STATE_BUILD/bench/shm_bare_pingpong")

# usage: state_probe [RUNNER...]   prints the probe's median round trip in ns; RUNNER (e.g. cpu_lock_run)
# goes in front of the probe, for a caller that does not hold the CPU lock itself.
state_probe() {
  "$@" "$STATE_PROBE" 20000 0 1 | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["rtt"]["median_ns"]))'
}

# usage: state_one P1 P2 ...   succeeds when the probes agree by the comparisons' one rule (mpi_ref.steady)
state_one() {
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import mpi_ref
sys.exit(0 if mpi_ref.steady([float(x) for x in sys.argv[2:]]) else 1)' "$STATE_LIB" "$@"
}
