# Sourced by every bench/*.sh: progress on a terminal, nothing extra otherwise. When stderr is a
# terminal, `bench_phase TEXT` prints one line per phase or round there ("  .. TEXT"); the
# figures on stdout are the same either way, so a log or CI run shows only them.
# The Python parts of a bench read SL_BENCH_PROGRESS (set here) through progress() below.
if [ -t 2 ]; then export SL_BENCH_PROGRESS=1; else export SL_BENCH_PROGRESS=0; fi
bench_phase() {
  if [ "$SL_BENCH_PROGRESS" = 1 ]; then printf '  .. %s\n' "$*" >&2; fi
  return 0
}
# For the Python heredocs: `exec(os.environ["SL_BENCH_PY_PROGRESS"])` defines progress(text).
export SL_BENCH_PY_PROGRESS='
import os as _o, sys as _s
def progress(text):
    if _o.environ.get("SL_BENCH_PROGRESS") == "1":
        print("  .. " + text, file=_s.stderr, flush=True)
'
