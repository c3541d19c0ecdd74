# safe-launch's sitecustomize: Python stacks on demand for the hang capture.
#
# safe-launch puts this directory first on the job's PYTHONPATH (doc/manual.md, "Python stacks").
# Every Python process of the job that has SAFE_LAUNCH_PYSTACKS_DIR and SAFE_LAUNCH_PYSTACKS_SIGNAL
# in its environment opens <dir>/pid_<pid>.txt (0600, created new) and registers faulthandler on
# that signal (a real-time signal frameworks do not use): on it, the process writes every thread's
# Python stack there, from the C signal handler, even while its main thread is blocked in a
# collective, a sleep or I/O. The file is also the record that this pid registered: the capture
# signals only ranks whose file exists and whose /proc/<pid>/status shows the signal caught,
# because an unregistered real-time signal kills a process.
#
# faulthandler prints file, line and function only (no locals, no arguments). The header line
# names the main thread, which faulthandler's output does not.
#
# Then the job's own sitecustomize, if it had one further along sys.path, is imported as if this
# one were not there. Opt out with SAFE_LAUNCH_PYTHON_STACKS=0 (or `safe-launch --no-python-stacks`).
import os
import sys


def _register():
    directory = os.environ.get("SAFE_LAUNCH_PYSTACKS_DIR", "")
    signum = os.environ.get("SAFE_LAUNCH_PYSTACKS_SIGNAL", "")
    if not directory or not signum.isdigit() or os.environ.get("SAFE_LAUNCH_PYTHON_STACKS") == "0":
        return
    import faulthandler
    import threading

    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    path = os.path.join(directory, "pid_%d.txt" % os.getpid())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
    flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    f = os.fdopen(fd, "w", buffering=1)
    f.write("# safe-launch python stacks: pid=%d rank=%s main_thread=0x%016x\n"
            % (os.getpid(), os.environ.get("RANK", "-1"), threading.main_thread().ident))
    f.flush()
    # chain=False: the signal is ours alone. Keep `f` alive: faulthandler writes to its fd.
    faulthandler.register(int(signum), file=f, all_threads=True, chain=False)
    global _safe_launch_stacks_file
    _safe_launch_stacks_file = f


def _chain():
    # Import the sitecustomize this one shadows: the next one on sys.path.
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        import importlib

        importlib.import_module("sitecustomize")
    except ModuleNotFoundError as e:
        if e.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me
    finally:
        sys.path[:] = saved


try:
    _register()
except Exception as e:  # never break the job: without stacks it still runs
    sys.stderr.write("safe-launch sitecustomize: no Python stacks on signal: %s\n" % e)
_chain()
