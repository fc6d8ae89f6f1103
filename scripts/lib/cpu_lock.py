"""The CPU lock that keeps two timing runs from interleaving on this machine's two cores (the shell scripts
take the same file through scripts/lib/cpu-lock.sh)."""
import fcntl
import os
import sys

# LOGPB_CPU_LOCK_FILE exists for the tests of this lock alone: every timing run must share the default.
PATH = os.environ.get("LOGPB_CPU_LOCK_FILE", "/tmp/logpb-cpu.lock")


def hold_cpu_lock(prog):
    """Takes the lock, waiting for it as long as another run holds it; it is held while the returned file
    stays open (to the process's end, where the caller keeps it)."""
    f = open(PATH, "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{prog}: waiting for {PATH} (another timing run holds it)", file=sys.stderr)
        fcntl.flock(f, fcntl.LOCK_EX)
    return f
