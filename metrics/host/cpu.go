package host

import (
	"fmt"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics"
)

// Source labels of the CPU sampler's values.
const (
	SourceProcStat    = "/proc/stat"
	SourceProcLoadavg = "/proc/loadavg"
	SourceProcMeminfo = "/proc/meminfo"
)

// CPUSnapshot is one reading of the machine's CPU and memory.
type CPUSnapshot struct {
	// Time is the now passed to the Sample that produced this snapshot.
	Time time.Time
	// Total is the busy share of all cores, 0-100 %.
	Total metrics.Value
	// Cores holds each core's busy share, 0-100 %, indexed by core number.
	// A core that is offline reads NotSupported; on the first sample all
	// read Missing (a rate needs two samples).
	Cores []metrics.Value
	// Load1, Load5 and Load15 are the run-queue load averages.
	Load1, Load5, Load15 metrics.Value
	// MemTotal, MemUsed and MemAvailable are bytes of RAM; used is
	// total - available, as free(1) counts it.
	MemTotal, MemUsed, MemAvailable metrics.Value
	// SwapTotal and SwapUsed are bytes of swap.
	SwapTotal, SwapUsed metrics.Value
}

// CPUSampler samples per-core CPU utilisation (deltas of /proc/stat jiffies
// between two calls), load average and memory. It implements
// metrics.Sampler.
type CPUSampler struct {
	fs *procFS

	// Owned by Sample (one caller at a time).
	prevAll       cpuTimes
	prev, cur     []cpuTimes
	prevOn, curOn []bool
	havePrev      bool

	mu   sync.Mutex
	snap CPUSnapshot
}

var _ metrics.Sampler = (*CPUSampler)(nil)

// NewCPUSampler returns a sampler reading the procfs mounted at procRoot
// ("" means DefaultProcFS).
func NewCPUSampler(procRoot string) *CPUSampler {
	return &CPUSampler{fs: newProcFS(procRoot)}
}

// Name implements metrics.Sampler.
func (s *CPUSampler) Name() string { return "cpu" }

// Sample implements metrics.Sampler. It never blocks beyond reading three
// small /proc files.
func (s *CPUSampler) Sample(now time.Time) error {
	b, err := s.fs.read("stat")
	if err != nil {
		s.fail(now)
		return fmt.Errorf("cpu sample: %w", err)
	}
	var all cpuTimes
	s.cur, s.curOn, err = parseStat(b, &all, s.cur, s.curOn)
	if err != nil {
		s.fail(now)
		return fmt.Errorf("cpu sample: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap.Time = now
	s.fillCores(all)
	s.prevAll = all
	s.prev, s.cur = s.cur, s.prev
	s.prevOn, s.curOn = s.curOn, s.prevOn
	s.havePrev = true
	lerr := s.fillLoad()
	merr := s.fillMem()
	if lerr != nil {
		return fmt.Errorf("cpu sample: %w", lerr)
	}
	if merr != nil {
		return fmt.Errorf("cpu sample: %w", merr)
	}
	return nil
}

// fillCores computes busy shares from the current and previous counters.
func (s *CPUSampler) fillCores(all cpuTimes) {
	n := max(len(s.cur), len(s.prev))
	if cap(s.snap.Cores) < n {
		s.snap.Cores = make([]metrics.Value, n)
	}
	s.snap.Cores = s.snap.Cores[:n]
	s.snap.Total = s.busyShare(all, s.prevAll, s.havePrev)
	for i := range n {
		switch {
		case i >= len(s.cur) || !s.curOn[i]:
			s.snap.Cores[i] = metrics.Unsupported(SourceProcStat)
		case i >= len(s.prev) || !s.prevOn[i]:
			s.snap.Cores[i] = metrics.Pending(SourceProcStat)
		default:
			s.snap.Cores[i] = s.busyShare(s.cur[i], s.prev[i], s.havePrev)
		}
	}
}

func (s *CPUSampler) busyShare(cur, prev cpuTimes, havePrev bool) metrics.Value {
	if !havePrev || cur.total <= prev.total || cur.busy < prev.busy {
		return metrics.Pending(SourceProcStat)
	}
	share := 100 * float64(cur.busy-prev.busy) / float64(cur.total-prev.total)
	return metrics.Of(min(share, 100), SourceProcStat)
}

func (s *CPUSampler) fillLoad() error {
	b, err := s.fs.read("loadavg")
	var l [3]float64
	if err == nil {
		l, err = parseLoadavg(b)
	}
	if err != nil {
		f := metrics.Failure(SourceProcLoadavg)
		s.snap.Load1, s.snap.Load5, s.snap.Load15 = f, f, f
		return err
	}
	s.snap.Load1 = metrics.Of(l[0], SourceProcLoadavg)
	s.snap.Load5 = metrics.Of(l[1], SourceProcLoadavg)
	s.snap.Load15 = metrics.Of(l[2], SourceProcLoadavg)
	return nil
}

func (s *CPUSampler) fillMem() error {
	b, err := s.fs.read("meminfo")
	var m memInfo
	if err == nil {
		m, err = parseMeminfo(b)
	}
	if err != nil {
		f := metrics.Failure(SourceProcMeminfo)
		s.snap.MemTotal, s.snap.MemUsed, s.snap.MemAvailable = f, f, f
		s.snap.SwapTotal, s.snap.SwapUsed = f, f
		return err
	}
	src := SourceProcMeminfo
	s.snap.MemTotal = metrics.Of(float64(m.total), src)
	s.snap.MemAvailable = metrics.Of(float64(m.available), src)
	s.snap.MemUsed = metrics.Of(float64(m.total-min(m.available, m.total)), src)
	s.snap.SwapTotal = metrics.Of(float64(m.swapTotal), src)
	s.snap.SwapUsed = metrics.Of(float64(m.swapTotal-min(m.swapFree, m.swapTotal)), src)
	return nil
}

// fail marks every value of the snapshot as failed.
func (s *CPUSampler) fail(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap.Time = now
	f := metrics.Failure(SourceProcStat)
	s.snap.Total = f
	for i := range s.snap.Cores {
		s.snap.Cores[i] = f
	}
	s.havePrev = false
}

// Snapshot returns a copy of the latest reading; the Cores slice is the
// caller's to keep.
func (s *CPUSampler) Snapshot() CPUSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.snap
	c.Cores = append([]metrics.Value(nil), s.snap.Cores...)
	return c
}
