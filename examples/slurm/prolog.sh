#!/bin/bash
# Slurm Prolog (and HealthCheckProgram): run safe-launch's preflight on this node before a job;
# a failing check drains the node with the check as its reason, e.g.
#   Reason=safe-launch: ib.port.state: mlx5_3:1 DOWN/Polling, but NCCL would use this port ...
# Warnings never drain; a node that is drained or down already keeps its (human's) reason.
#
# slurm.conf (slurm.conf takes a program path, no arguments, hence this script):
#   Prolog=/etc/slurm/safe-launch-prolog.sh
#   HealthCheckProgram=/etc/slurm/safe-launch-prolog.sh
#   HealthCheckInterval=600
#
# As a Prolog, a drain also exits non-zero: Slurm then requeues the job (held unless
# SchedulerParameters=nohold_on_prolog_fail) instead of starting it on the bad node, and keeps
# our reason (its own "Prolog error" drain skips a node that is drained already). If scontrol
# could not drain the node, that non-zero exit lets slurmd drain it ("Prolog error").
# As a HealthCheckProgram the exit status is only logged: the drain is what counts. slurmd kills
# a health check after 60 s; each scontrol call of safe-launch is bounded by 10 s.
#
# slurmd runs this as root with an environment of its own (SLURMD_NODENAME, SLURM_JOB_ID,
# SLURM_CONF; no PATH): site settings go into /etc/default/safe-launch, e.g.
#   SAFE_LAUNCH=/opt/safe-launch/bin/safe-launch
#   SAFE_LAUNCH_PROLOG_ARGS="--waive os.memlock"
# The report goes to stdout, which slurmd writes to its log when the prolog fails.
# shellcheck source=/dev/null
if [ -r /etc/default/safe-launch ]; then . /etc/default/safe-launch; fi
SAFE_LAUNCH=${SAFE_LAUNCH:-/usr/bin/safe-launch}
# shellcheck disable=SC2086
exec "$SAFE_LAUNCH" preflight --slurm ${SAFE_LAUNCH_PROLOG_ARGS:-}
