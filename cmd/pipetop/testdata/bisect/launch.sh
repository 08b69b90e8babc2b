#!/bin/sh
# launch.sh N ARGS... : start N ranks of `train.py --case ddp ARGS...` by hand
# (Debian's torchrun is broken here), each with RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR=127.0.0.1 and MASTER_PORT ($MASTER_PORT, else a free port).
# SIGINT/SIGTERM are forwarded to every rank (the ranks share this script's
# process group, so a signal sent to the group reaches them directly as
# well); it waits for all of them and exits with the first nonzero status
# (0 when all succeed). Started with SIGINT ignored (by `cmd &` in another
# script), this shell cannot trap it: use env --default-signal=INT there.
set -u
n=${1:?usage: launch.sh N ARGS...}
shift
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
if [ -z "${MASTER_PORT:-}" ]; then
	MASTER_PORT=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
export MASTER_ADDR=127.0.0.1 MASTER_PORT WORLD_SIZE="$n"
pids=""
r=0
while [ "$r" -lt "$n" ]; do
	# A command started with & by a non-interactive shell ignores SIGINT
	# (and the shell cannot undo that); env puts the default back, so that a
	# SIGINT (forwarded, or sent to the whole process group) reaches the rank.
	RANK=$r LOCAL_RANK=$r env --default-signal=INT "$py" "$here/train.py" --case ddp "$@" &
	pids="$pids $!"
	r=$((r + 1))
done
forward() {
	for p in $pids; do kill -s "$1" "$p" 2>/dev/null; done
}
trap 'forward INT' INT
trap 'forward TERM' TERM
status=0
for p in $pids; do
	# wait returns early (>128) when a forwarded signal interrupts it: wait again.
	while :; do
		wait "$p"
		rc=$?
		kill -0 "$p" 2>/dev/null || break
	done
	if [ "$status" -eq 0 ] && [ "$rc" -ne 0 ]; then status=$rc; fi
done
exit "$status"
