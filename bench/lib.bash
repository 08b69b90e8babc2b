# Shared by bench/pipetop_overhead.sh and bench/pipetop_ranks.sh: builds
# the binaries and measures tools running in tmux windows of a fixed size.
# CPU is the time on a CPU of all the tool's threads from
# /proc/PID/task/*/schedstat (in % of one core; exact to the nanosecond,
# where utime+stime are 10 ms ticks charged to whoever runs when the tick
# fires, which over- or under-counts a tool that wakes briefly on a timer);
# terminal bytes are what tmux's pipe-pane saw the tool write. Source it after setting
# WORK (a scratch directory), ROOT (the repository), SERVER (a tmux socket
# name), COLS, ROWS, WARMUP and DURATION.

export PATH="/usr/local/go/bin:$PATH"

# bench_build: pipetop and the synthetic publisher into $WORK.
bench_build() {
	command -v tmux >/dev/null || { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }
	echo "building pipetop and the synthetic publisher..." >&2
	(cd "$ROOT" && CGO_CFLAGS=-Wno-deprecated-declarations go build -o "$WORK/pipetop" ./cmd/pipetop &&
		go build -o "$WORK/synthetic" ./examples/synthetic)
}

# cpuns PID: the nanoseconds PID's threads have run (the first field of
# each thread's schedstat; a thread that exited takes its share with it,
# and neither pipetop nor btop ends threads while running).
# Kernels without schedstat (gVisor, some containers): utime + stime of
# each thread's stat, in ticks of USER_HZ (100), coarser but the same sum.
cpuns() {
	if compgen -G "/proc/$1/task/*/schedstat" >/dev/null; then
		cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
	else
		cat /proc/"$1"/task/*/stat | sed 's/.*) //' | awk '{ s += $12 + $13 } END { printf "%.0f\n", s * 1e7 }'
	fi
}

# measure LABEL COPIES COMMAND: runs COPIES of COMMAND at once, each in its
# own tmux window, and prints "LABEL cpu% bytes/s" for the mean copy (and
# the busiest copy's CPU when there are several); MEASURED_CPU and
# MEASURED_BPS keep the two figures. Each window's last screen is left in
# $WORK/LABEL-N.screen.
measure() {
	local label=$1 copies=$2 cmd=$3 i pids=() outs=()
	for i in $(seq 1 "$copies"); do
		local name="$label-$i" out="$WORK/$label-$i.out"
		: >"$out"
		tmux -L "$SERVER" new-session -d -s "$name" -x "$COLS" -y "$ROWS" "exec $cmd"
		tmux -L "$SERVER" pipe-pane -t "$name" -o "cat >>'$out'"
		pids+=("$(tmux -L "$SERVER" display-message -p -t "$name" '#{pane_pid}')")
		outs+=("$out")
	done
	sleep "$WARMUP"
	local t0=() b0=() s0 s1 row="" line
	for i in "${!pids[@]}"; do t0+=("$(cpuns "${pids[$i]}")"); b0+=("$(stat -c %s "${outs[$i]}")"); done
	s0=$(date +%s.%N)
	sleep "$DURATION"
	for i in "${!pids[@]}"; do
		row="$row $(($(cpuns "${pids[$i]}") - t0[i])) $(($(stat -c %s "${outs[$i]}") - b0[i]))"
	done
	s1=$(date +%s.%N)
	for i in $(seq 1 "$copies"); do
		tmux -L "$SERVER" capture-pane -p -t "$label-$i" >"$WORK/$label-$i.screen"
		tmux -L "$SERVER" kill-session -t "$label-$i"
	done
	line=$(echo "$row" | awk -v dt="$(echo "$s1 - $s0" | bc -l)" '{
		for (i = 1; i < NF; i += 2) { c = 100 * $i / 1e9 / dt; sum += c; if (c > max) max = c; bytes += $(i + 1) }
		k = NF / 2
		printf "%.3f %.0f %d %.2f\n", sum / k, bytes / k / dt, k, max
	}')
	read -r MEASURED_CPU MEASURED_BPS i line <<<"$line"
	local extra=""
	[ "$copies" -gt 1 ] && extra="   ($copies copies, busiest $line %)"
	printf "%-28s %8.2f %% %10.0f B/s%s\n" "$label" "$MEASURED_CPU" "$MEASURED_BPS" "$extra"
}

# median N...: the median of the numbers given.
median() {
	printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
