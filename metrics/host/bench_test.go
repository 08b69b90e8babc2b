package host

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"
)

// BenchmarkHostSample measures one full refresh as pipetop does it each
// interval: CPU/memory plus the watched process (this one) and its children.
// At a 1 s interval, ns/op / 1e7 is the % of one core spent sampling.
func BenchmarkHostSample(b *testing.B) {
	startBenchChild(b)
	cs := NewCPUSampler("")
	ps := NewProcSampler(os.Getpid(), "")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		if err := cs.Sample(now); err != nil {
			b.Fatal(err)
		}
		if err := ps.Sample(now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGopsutilEquivalent measures the same readings through gopsutil,
// for comparison with BenchmarkHostSample.
func BenchmarkGopsutilEquivalent(b *testing.B) {
	startBenchChild(b)
	p, err := process.NewProcess(int32(os.Getpid()))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cpu.Times(true); err != nil {
			b.Fatal(err)
		}
		load.Avg()
		mem.VirtualMemory()
		mem.SwapMemory()
		procs := []*process.Process{p}
		kids, _ := p.Children()
		procs = append(procs, kids...)
		for _, q := range procs {
			q.Times()
			q.MemoryInfo()
			q.NumThreads()
			q.IOCounters()
		}
	}
}

func startBenchChild(b *testing.B) {
	b.Helper()
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, &os.ProcAttr{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		p.Kill()
		p.Wait()
	})
}

// BenchmarkThreadSample measures one refresh of the thread sampler over
// this process with 200 extra OS threads (parked, so quiet: each is read
// once every 4 s, a quarter of them a refresh), the pressure, the last pid
// and the cgroup's cpu.stat. At a 1 s interval, ns/op / 1e7 is the % of
// one core spent.
func BenchmarkThreadSample(b *testing.B) {
	stop := parkThreads(200)
	defer stop()
	s := NewThreadSampler("")
	s.SetPID(os.Getpid(), 0)
	now := time.Now()
	if err := s.Sample(now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		if err := s.Sample(now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(s.Snapshot().Threads)), "threads")
}

// parkThreads starts n OS threads that sleep until stop is called.
func parkThreads(n int) (stop func()) {
	done := make(chan struct{})
	ready := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			ready <- struct{}{}
			<-done
		}()
	}
	for range n {
		<-ready
	}
	return func() { close(done) }
}
