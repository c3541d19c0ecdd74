#!/bin/sh
# ssh stand-in for Open MPI's rsh launcher (--mca plm_rsh_agent): drops ssh's options and the
# host name and runs the command here. With `--host nodea:2,nodeb:2` mpirun then believes it
# has two nodes (an orted each, OMPI_COMM_WORLD_LOCAL_* per node) although both run on this host.
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;
    *) break ;;
  esac
done
shift
exec /bin/sh -c "$*"
