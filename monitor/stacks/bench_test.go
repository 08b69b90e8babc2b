package stacks

import (
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// BenchmarkSample is one tick of the sampler reading a live
// testdata/staged.py from outside (Debian's CPython 3.11): its training
// thread 24 calls deep in stage forward and its forked worker in a slow
// fetch, each sample folded into the interval's and the run's samples,
// with a stacks frame handed over every 100 ticks (a second at the
// default rate). cpu-ns/op is the CPU the reader used a tick (the
// target's spinning threads keep the machine's cores busy, so wall time
// depends on its load); at DefaultHz, cpu-ns/op times DefaultHz is the
// share of a core the sampler costs.
func BenchmarkSample(b *testing.B) {
	h := startStaged(b, "/usr/bin/python3", "--depth", "24")
	var s *Sampler
	var err error
	for try := 0; try < 50; try++ { // the worker may not have forked yet
		if s, err = Start(h, h.PID, 1e-6, func(*stage.StackSamples) {}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	for len(s.workers) == 0 {
		s.scan(true)
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportAllocs()
	cpu0, n := cpuNs(b), 0
	for b.Loop() {
		if err := s.sample(int64(10 * time.Millisecond)); err != nil {
			b.Fatal(err)
		}
		if n++; n%100 == 0 {
			s.send(time.Now(), time.Second)
		}
	}
	b.ReportMetric(float64(cpuNs(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuNs is the CPU time (user and system) the test binary used so far.
func cpuNs(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
