package pystack

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkThreads reads every stack of a live testdata/parked.py per op:
// 5 threads (4 of them 18 calls deep in descend, about 22 frames; the
// spinning one running), under each CPython installed. "each read
// rechecks" starts a new generation every read, so every code object is
// read again and checked (the first read of a second); the other runs
// are the steady state in between. cpu-ns/op is the CPU the reader used
// a read (the spinning thread keeps a core of the target busy, so wall
// time depends on the machine's load).
func BenchmarkThreads(b *testing.B) {
	for _, py := range pythons() {
		for _, recheck := range []bool{false, true} {
			name := py.name
			if recheck {
				if py.name != "3.11 Debian" {
					continue
				}
				name += " each read rechecks"
			}
			b.Run(name, func(b *testing.B) {
				py.need(b)
				want := startParked(b, py.exe, "--depth", "18")
				p, err := Attach(want.PID)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				frames := 0
				b.ReportAllocs()
				cpu0 := cpuNs(b)
				for b.Loop() {
					if recheck {
						p.genAt = time.Time{}
					}
					threads, err := p.Threads()
					if err != nil {
						b.Fatal(err)
					}
					for _, th := range threads {
						frames += len(th.Frames)
					}
				}
				b.ReportMetric(float64(cpuNs(b)-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
				b.ReportMetric(float64(p.Drops().Total()), "drops")
			})
		}
	}
}

// cpuNs is the CPU time (user and system) the test binary used so far:
// what a read costs the reader, whatever else the machine runs.
func cpuNs(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
