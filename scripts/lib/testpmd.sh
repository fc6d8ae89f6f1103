# dpdk-testpmd as the DPDK comparisons run it (scripts/dpdk-vs-testpmd, scripts/dpdk-flood-vs-testpmd):
# memif ports only, no PCI, no hugepages, no telemetry, errors alone in its log, stdin closed.
TESTPMD_EAL=(--in-memory --no-pci --no-telemetry --log-level=error)
TESTPMD_PID=

# usage: testpmd_require
testpmd_require() {
  command -v dpdk-testpmd >/dev/null ||
    { echo "dpdk-testpmd missing (package dpdk-dev; scripts/setup installs it)" >&2; exit 1; }
}

# usage: testpmd_start LOG EAL_ARGS... -- TESTPMD_ARGS...
# In the background, its output line-buffered into LOG (the caller reads its stats and port state from it
# while it runs); its pid in TESTPMD_PID. One at a time: testpmd_stop it before the next.
testpmd_start() {
  local log=$1
  shift
  stdbuf -oL dpdk-testpmd "${TESTPMD_EAL[@]}" "$@" </dev/null >"$log" 2>&1 &
  TESTPMD_PID=$!
}

# usage: testpmd_run SECONDS LOG EAL_ARGS... -- TESTPMD_ARGS...
# In the foreground for SECONDS, then stopped with SIGINT (testpmd prints its final stats on it).
testpmd_run() {
  local secs=$1 log=$2
  shift 2
  timeout -s INT "$secs" stdbuf -oL dpdk-testpmd "${TESTPMD_EAL[@]}" "$@" </dev/null >"$log" 2>&1
}

# usage: testpmd_stop; rc=$?
# Stops the testpmd of testpmd_start with SIGINT (a clean stop: ports closed, stats printed) and returns
# its exit status (128 + the signal where it crashed).
testpmd_stop() {
  local rc
  [[ -n $TESTPMD_PID ]] || return 0
  kill -INT "$TESTPMD_PID" 2>/dev/null
  wait "$TESTPMD_PID"
  rc=$?
  TESTPMD_PID=
  return "$rc"
}

# usage: wait_for_line FILE PATTERN PID
# Up to 10 s for PATTERN in FILE while PID lives; returns 1 when it never came.
wait_for_line() {
  local file=$1 pattern=$2 pid=$3 i
  for ((i = 0; i < 200; i++)); do
    grep -q "$pattern" "$file" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "$pattern" "$file"
}
