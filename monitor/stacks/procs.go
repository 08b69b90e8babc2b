package stacks

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipetop/pipetop/metrics/host"
)

// maxWorkers bounds the child processes followed.
const maxWorkers = 256

// Scans for DataLoader workers: the children of the thread that forks
// them (the training thread's) often, those of every thread each second.
// Workers of an iterator without persistent workers live for an epoch,
// which may be shorter than a second.
const (
	quickScan = 100 * time.Millisecond
	fullScan  = time.Second
)

// scan follows the new children of the trainer's threads (all: every
// thread's; else the training thread's), forgetting those gone (all
// only). A child that holds the stage word is a worker forked from the
// trainer; one pipetop may not read, or that holds none, is remembered as
// such and not tried again.
func (s *Sampler) scan(all bool) {
	tasks := []int{s.trainTID()}
	if all {
		tasks = s.tasks()
	}
	alive := make(map[int]bool)
	for _, tid := range tasks {
		for _, pid := range children(s.pid, tid) {
			alive[pid] = true
			if _, ok := s.workers[pid]; !ok && len(s.workers) < maxWorkers {
				s.workers[pid] = s.follow(pid)
			}
		}
	}
	if !all {
		return
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

// follow is the worker child pid is: read like the trainer it was forked
// from when it holds the stage word; else nothing to read.
func (s *Sampler) follow(pid int) *worker {
	p, err := s.proc.Child(pid)
	if err != nil {
		return &worker{}
	}
	if s.readWord(p.ReadAt) != nil {
		p.Close()
		return &worker{}
	}
	return &worker{proc: p}
}

// trainTID is the task whose children are looked at often: the training
// thread's, else the main thread's.
func (s *Sampler) trainTID() int {
	if s.h.TID > 0 && (s.h.HostPID <= 0 || s.h.HostPID == s.h.PID) {
		return s.h.TID
	}
	return s.pid
}

// tasks are the trainer's threads.
func (s *Sampler) tasks() []int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", s.pid))
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out
}

// children are the child processes of thread tid of pid.
func children(pid, tid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, tid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, n)
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
