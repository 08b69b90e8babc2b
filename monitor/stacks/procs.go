package stacks

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/pystack"
)

// maxWorkers bounds the child processes followed.
const maxWorkers = 256

// scan follows the trainer's new child processes (DataLoader workers are
// forked from it) and forgets those gone. A child pipetop may not read,
// or that holds no stage word, is remembered as such and not tried again.
func (s *Sampler) scan() {
	kids := children(s.pid)
	alive := make(map[int]bool, len(kids))
	for _, pid := range kids {
		alive[pid] = true
		if _, ok := s.workers[pid]; ok || len(s.workers) >= maxWorkers {
			continue
		}
		w := &worker{}
		if p, err := pystack.Attach(pid); err == nil {
			if s.readWord(p) == nil {
				w.proc = p
			} else {
				p.Close()
			}
		}
		s.workers[pid] = w
	}
	for pid, w := range s.workers {
		if !alive[pid] {
			if w.proc != nil {
				w.proc.Close()
			}
			delete(s.workers, pid)
		}
	}
}

// children are the child processes of pid (every thread's).
func children(pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// readCPU is the CPU time each thread of the trainer used since the last
// call (ns), read from /proc/PID/task/TID/stat.
func (s *Sampler) readCPU() map[int]int64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", s.pid))
	if err != nil {
		return nil
	}
	out := make(map[int]int64, len(tasks))
	now := make(map[int]int64, len(tasks))
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		ns, ok := threadCPU(s.pid, tid)
		if !ok {
			continue
		}
		now[tid] = ns
		if was, ok := s.cpu[tid]; ok {
			out[tid] = max(0, ns-was)
		}
	}
	s.cpu = now
	return out
}

// ticks is the kernel's USER_HZ.
var ticks = host.ClockTicks()

// threadCPU is the CPU time thread tid of pid has used (utime + stime).
func threadCPU(pid, tid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0, false
	}
	u, ok1 := statField(b, 14)
	st, ok2 := statField(b, 15)
	if !ok1 || !ok2 {
		return 0, false
	}
	return int64(float64(u+st) / ticks * 1e9), true
}

// statField is field n (1-based, as proc(5) numbers them) of a
// /proc/PID/stat line, a number; false when there is none. The name
// (field 2) may hold spaces and parentheses: fields are counted after its
// last ')'.
func statField(b []byte, n int) (int64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || n < 3 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) <= n-3 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[n-3]), 10, 64)
	return v, err == nil
}

// monotonic is CLOCK_MONOTONIC now, the clock of the Python side's
// time.perf_counter_ns.
func monotonic() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
