#!/bin/bash
# Slurm Epilog: after each job, check this node for what the job left behind and drain it
# before the next job lands on it:
#   - processes still holding /dev/nvidia* (pid, user, command are named; the NVIDIA
#     persistence daemon, DCGM and the fabric manager are not leftovers);
#   - kernel errors since the job began (Xid, GPU fallen off the bus, IB/Ethernet link down,
#     mlx5 firmware command failures, uncorrected PCIe AER), the job's start read from
#     `scontrol show job $SLURM_JOB_ID` (bounded).
# e.g. Reason=safe-launch: gpu.leftover_procs: 1 process(es) still hold /dev/nvidia* after the
# job: pid 4242 (alice: python train.py)
#
# slurm.conf:
#   Epilog=/etc/slurm/safe-launch-epilog.sh
#
# A drain also exits non-zero, so that if scontrol could not drain the node slurmd does
# ("Epilog error"); a node that is drained or down already keeps its reason.
# Site settings: /etc/default/safe-launch (see prolog.sh), SAFE_LAUNCH_EPILOG_ARGS.
# shellcheck source=/dev/null
if [ -r /etc/default/safe-launch ]; then . /etc/default/safe-launch; fi
SAFE_LAUNCH=${SAFE_LAUNCH:-/usr/bin/safe-launch}
# shellcheck disable=SC2086
exec "$SAFE_LAUNCH" preflight --slurm --epilog ${SAFE_LAUNCH_EPILOG_ARGS:-}
