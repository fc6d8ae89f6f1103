# The CPU lock that keeps two timing runs from interleaving on this machine's two cores; sourced by the
# bash scripts (python ones take the same file through scripts/lib/cpu_lock.py).
# LOGPB_CPU_LOCK_FILE exists for the tests of this lock alone: every timing run must share the default.
LOGPB_CPU_LOCK=${LOGPB_CPU_LOCK_FILE:-/tmp/logpb-cpu.lock}

# usage: cpu_lock_hold PROG WAIT_S
# Takes the lock on fd 9 of the calling shell, held until the shell exits or closes fd 9 (start daemons
# with 9>&- so that none keeps it). Waits up to WAIT_S seconds, then exits 2. fd 8 (a caller's own lock)
# is not handed to flock.
cpu_lock_hold() {
  local prog=$1 wait=$2
  exec 9>"$LOGPB_CPU_LOCK"
  if ! flock -n 9 8>&-; then
    echo "$prog: waiting up to ${wait}s for $LOGPB_CPU_LOCK (another timing run holds it)" >&2
    flock -w "$wait" 9 8>&- || {
      echo "$prog: no $LOGPB_CPU_LOCK after ${wait}s (--no-lock if you hold it)" >&2
      exit 2
    }
  fi
}

# usage: cpu_lock_run CMD [ARGS...]
# Runs one command under the lock, waiting for it as long as another run holds it.
cpu_lock_run() {
  flock "$LOGPB_CPU_LOCK" "$@"
}
