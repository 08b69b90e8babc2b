#!/bin/sh
# Starts the ranks of examples/ddp/train.py on this host with the launcher's
# variables set by hand (what torchrun would set, without torchrun):
#   pipetop run -- sh examples/ddp/launch.sh [NPROC] [TRAIN ARGS...]
# MASTER_PORT defaults to 29511.
set -e
n=${1:-2}
[ $# -gt 0 ] && shift
here=$(dirname "$0")
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-29511} WORLD_SIZE=$n
pids=
r=0
while [ $r -lt $n ]; do
	RANK=$r LOCAL_RANK=$r ${PYTHON:-python3} "$here/train.py" "$@" &
	pids="$pids $!"
	r=$((r + 1))
done
status=0
for p in $pids; do wait $p || status=$?; done
exit $status
