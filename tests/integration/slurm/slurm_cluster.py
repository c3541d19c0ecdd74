"""A throw-away Slurm cluster on this host for the integration tests: munged on its own socket
and key, one slurmctld and two slurmd (node 0 carries this host's name, which resolves; node 1 is
a second NodeName on its own port; `nnodes=3` adds node 2, `<host>-n2`, on a third port: room for
a requeued job that leaves a node out), all state under one temporary directory, unique ports.

    with SlurmCluster() as c:
        c.sbatch("job.sbatch") ...

Every daemon is started in the foreground by us, so we hold its pid; stop() (run by __exit__,
also when the test fails or raises) cancels the jobs, stops each daemon by pid (TERM, then KILL)
and kills the slurmstepd processes our slurmd left behind, found by the SLURM_CONF path in their
environment. Nothing is left running.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def ephemeral_range():
    """The kernel's range for outgoing connections' local ports (ip_local_port_range)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(v) for v in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_ports(n):
    """`n` distinct TCP ports that were free a moment ago (bound together, then released),
    chosen below the ephemeral range: a port the kernel hands to some other test's outgoing
    connection between our check and the daemon's bind would make slurmd exit with "Address
    already in use"."""
    lo, _ = ephemeral_range()
    top = max(lo - 1, 12000)
    socks = []
    try:
        for port in random.sample(range(10000, top), min(4000, top - 10000)):
            if len(socks) == n:
                break
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        if len(socks) < n:
            raise RuntimeError(f"no {n} free ports between 10000 and {top}")
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class SlurmCluster:
    def __init__(self, kill_wait=30, extra_conf="", nnodes=2, auth_info=""):
        self.host = socket.gethostname().split(".")[0]
        self.nodes = [self.host] + [f"{self.host}-n{i}" for i in range(1, nnodes)]
        # Extra AuthInfo options, e.g. "cred_expire=10": a requeued batch job waits that long
        # (120 s by default) before it may start again.
        self.auth_info = auth_info
        self.kill_wait = kill_wait
        self.extra_conf = extra_conf
        self.dir = None
        self.procs = {}  # name -> Popen, in start order
        self.env = None

    # ---- set-up ----------------------------------------------------------------------------
    def __enter__(self):
        # A daemon that lost its port to another process between our check and its bind exits
        # with "Address already in use": start again on other ports (twice at most).
        for attempt in range(3):
            try:
                self.start()
                return self
            except BaseException as e:
                lost_port = "Address already in use" in str(e)
                self.stop()
                if not lost_port or attempt == 2:
                    raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="sl-slurm-")
        os.chmod(self.dir, 0o700)
        for sub in ("munge", "state", "spool", "log", "submit"):
            os.makedirs(self.path(sub), mode=0o700)
        ctld_port, *node_ports = free_ports(1 + len(self.nodes))
        self.write_conf(ctld_port, node_ports)
        self.env = dict(os.environ, SLURM_CONF=self.path("slurm.conf"))
        for k in list(self.env):
            # The caller's own job (CI under Slurm) must not leak into ours.
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF":
                del self.env[k]
        self.start_munge()
        self.spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.path("slurm.conf")])
        for node in self.nodes:
            self.spawn("slurmd-" + node,
                       ["slurmd", "-D", "-N", node, "-f", self.path("slurm.conf")])
        self.wait_idle()

    def write_conf(self, ctld_port, node_ports):
        p = self.path
        # A callable extra_conf writes what its lines name (prolog wrappers, sysroots) into the
        # cluster's directory and returns the lines.
        extra = self.extra_conf(self) if callable(self.extra_conf) else self.extra_conf
        nodes = "\n".join(f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname=localhost Port={port} "
                          "CPUs=4 RealMemory=1000 State=UNKNOWN"
                          for n, port in zip(self.nodes, node_ports))
        conf = f"""ClusterName=sltest{os.getpid()}
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={p('munge', 'munge.socket')}{',' + self.auth_info if self.auth_info else ''}
StateSaveLocation={p('state')}
SlurmdSpoolDir={p('spool')}/%n
SlurmctldPidFile={p('slurmctld.pid')}
SlurmdPidFile={p('slurmd.%n.pid')}
SlurmctldLogFile={p('log', 'slurmctld.log')}
SlurmdLogFile={p('log', 'slurmd.%n.log')}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
KillWait={self.kill_wait}
MinJobAge=600
InactiveLimit=0
MessageTimeout=20
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
{extra}
"""
        with open(p("slurm.conf"), "w") as f:
            f.write(conf)

    def start_munge(self):
        key = self.path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = self.path("munge", "munge.socket")
        self.spawn("munged", ["munged", "-F", "--force", "--socket=" + sock, "--key-file=" + key,
                              "--pid-file=" + self.path("munge", "munged.pid"),
                              "--seed-file=" + self.path("munge", "munged.seed"),
                              "--log-file=" + self.path("log", "munged.log")])
        end = time.time() + 20
        while time.time() < end:
            r = subprocess.run(["munge", "-s", "ping", "--socket=" + sock], env=self.env,
                               capture_output=True)
            if r.returncode == 0:
                return
            self.check_alive()
            time.sleep(0.1)
        raise RuntimeError("munged did not answer on " + sock)

    def spawn(self, name, argv):
        log = open(self.path("log", name + ".out"), "wb")
        self.procs[name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        log.close()

    def check_alive(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode}:\n" + self.logs())

    def wait_idle(self, timeout=60):
        end = time.time() + timeout
        out = ""
        while time.time() < end:
            self.check_alive()
            r = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
            out = r.stdout
            states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
            if all(states.get(n) == "idle" for n in self.nodes):
                return
            time.sleep(0.3)
        raise RuntimeError("nodes not idle after %d s: %r\n%s" % (timeout, out, self.logs()))

    # ---- use -------------------------------------------------------------------------------
    def run(self, argv, check=True, timeout=60, **kw):
        r = subprocess.run(argv, env=kw.pop("env", self.env), capture_output=True, text=True,
                           timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise RuntimeError(f"{argv} exited {r.returncode}: {r.stdout}{r.stderr}")
        return r

    def sbatch(self, script, *options, script_args=(), env=None):
        """Submits `script` (sbatch `options`, then `script_args` for the script) from the
        cluster's submit dir; returns the job id."""
        e = dict(self.env, **(env or {}))
        # From the submit dir: SLURM_SUBMIT_DIR (where the run directories go) is sbatch's cwd.
        r = self.run(["sbatch", "--parsable", *options, script, *script_args], env=e,
                     cwd=self.path("submit"))
        return r.stdout.strip().split(";")[0]

    def job(self, job_id):
        """`scontrol show job` as a dict (State, ExitCode, ...); {} once the job is gone."""
        r = self.run(["scontrol", "-o", "show", "job", job_id], check=False)
        fields = {}
        for tok in r.stdout.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                fields[k] = v
        return fields

    def wait_job(self, job_id, timeout=180, states=None):
        """Waits until the job is in a final state (or one of `states`); returns its fields."""
        final = states or ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                           "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE")
        end = time.time() + timeout
        fields = {}
        while time.time() < end:
            fields = self.job(job_id)
            if fields.get("JobState") in final:
                return fields
            time.sleep(0.3)
        raise RuntimeError(f"job {job_id} not done after {timeout} s: {fields}\n" + self.logs())

    def node(self, name):
        r = self.run(["scontrol", "-o", "show", "node", name])
        return r.stdout

    def node_fields(self, name):
        """State and Reason (without Slurm's "[user@time]") of a node."""
        out = self.node(name).strip()
        fields = {}
        for tok in out.split():
            if tok.startswith("State="):
                fields["State"] = tok[len("State="):]
        if " Reason=" in out:
            reason = out.split(" Reason=", 1)[1]
            fields["Reason"] = reason.rsplit(" [", 1)[0] if reason.endswith("]") else reason
        return fields

    def wait_node(self, name, pred, timeout=60):
        """Waits until pred(node_fields) holds; returns the fields."""
        end = time.time() + timeout
        fields = {}
        while time.time() < end:
            fields = self.node_fields(name)
            if pred(fields):
                return fields
            time.sleep(0.3)
        raise RuntimeError(f"node {name} not as expected after {timeout} s: {fields}\n" +
                           self.logs())

    def logs(self):
        out = []
        for f in sorted(os.listdir(self.path("log"))):
            with open(self.path("log", f), errors="replace") as fh:
                out.append(f"--- {f}\n" + "".join(fh.readlines()[-30:]))
        return "\n".join(out)

    # ---- tear-down -------------------------------------------------------------------------
    def stepd_pids(self):
        """slurmstepd processes of this cluster: their environment names our slurm.conf."""
        want = ("SLURM_CONF=" + self.path("slurm.conf")).encode()
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() != "slurmstepd":
                        continue
                with open(f"/proc/{d}/environ", "rb") as f:
                    if want in f.read().split(b"\0"):
                        pids.append(int(d))
            except OSError:
                pass
        return pids

    def stop(self):
        if self.env and "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.run(["scancel", "--full", "-u", "root"], check=False, timeout=15)
                end = time.time() + 15
                while time.time() < end:
                    r = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=15)
                    if r.returncode != 0 or not r.stdout.strip():
                        break
                    time.sleep(0.3)
            except (subprocess.TimeoutExpired, OSError):
                pass
        # Reverse start order: slurmd, slurmctld, then munged (they need it to say goodbye).
        for name, p in reversed(list(self.procs.items())):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for pid in self.stepd_pids() if self.dir else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.procs = {}
        if self.dir and not os.environ.get("SL_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)
