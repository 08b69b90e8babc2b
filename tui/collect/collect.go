// Package collect assembles one snapshot per refresh: it samples the host
// (CPU cores, memory, the trainer's process tree, GPUs), asks the feed for
// the trainer's window summary and verdict, and keeps the short histories
// behind the sparklines. Sources are interfaces so that tests can replay
// recorded frames next to fake host readings.
package collect

import (
	"math"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/ring"
	"github.com/pipetop/pipetop/tui/feed"
	"github.com/pipetop/pipetop/tui/snapshot"
)

// CPUSource is the machine-wide CPU and memory sampler (host.CPUSampler).
type CPUSource interface {
	Sample(now time.Time) error
	Snapshot() host.CPUSnapshot
}

// ProcSource samples one process tree (host.ProcSampler).
type ProcSource interface {
	SetPID(pid int)
	Sample(now time.Time) error
	Snapshot() host.ProcSnapshot
}

// GPUSource samples the GPUs (gpu.Sampler).
type GPUSource interface {
	SetPIDs(pids ...int)
	Sample(now time.Time) error
	Snapshot() gpu.Snapshot
}

// HistoryLen is how many refreshes the sparklines remember.
const HistoryLen = 240

// Collector builds snapshots. Collect may be called from any goroutine, one
// call at a time is enforced.
type Collector struct {
	Feed *feed.Feed
	CPU  CPUSource
	Proc ProcSource
	GPU  GPUSource

	mu        sync.Mutex
	pid       int
	lastSteps int64
	lastTime  time.Time
	rate      *ring.Ring
	busy      *ring.Ring
	load      *ring.Ring
	buf       []float64
}

// New returns a Collector over the given sources; any source may be nil.
func New(f *feed.Feed, cpu CPUSource, proc ProcSource, g GPUSource) *Collector {
	return &Collector{Feed: f, CPU: cpu, Proc: proc, GPU: g,
		rate: ring.New(HistoryLen), busy: ring.New(HistoryLen), load: ring.New(HistoryLen)}
}

// Collect samples every source at now and returns the snapshot for the
// window w. Sampling errors are not returned: they show in the snapshot as
// status lines and failed readings.
func (c *Collector) Collect(now time.Time, w snapshot.Window) snapshot.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := snapshot.Snapshot{Version: snapshot.SchemaVersion, Time: now, Window: w}
	c.Feed.Fill(&s)
	c.watch(c.Feed.TrainerPID())
	if c.CPU != nil {
		c.CPU.Sample(now)
		s.CPU = snapshot.FromCPU(c.CPU.Snapshot())
	}
	if c.GPU != nil {
		c.GPU.Sample(now)
		s.GPU = snapshot.FromGPU(c.GPU.Snapshot())
	} else {
		s.GPU = snapshot.GPU{Status: "GPU monitoring off", Devices: []snapshot.Device{}}
	}
	if c.Proc != nil && c.pid > 0 {
		c.Proc.Sample(now)
		s.Process = snapshot.FromProc(c.Proc.Snapshot())
	}
	c.record(&s)
	return s
}

// watch points the process and GPU samplers at a new trainer pid.
func (c *Collector) watch(pid int) {
	if pid == c.pid {
		return
	}
	c.pid = pid
	if c.Proc != nil && pid > 0 {
		c.Proc.SetPID(pid)
	}
	if c.GPU != nil {
		if pid > 0 {
			c.GPU.SetPIDs(pid)
		} else {
			c.GPU.SetPIDs()
		}
	}
}

// record pushes this refresh into the histories and copies them into s.
func (c *Collector) record(s *snapshot.Snapshot) {
	steps := c.Feed.Steps()
	rate := math.NaN()
	if !c.lastTime.IsZero() && s.Time.After(c.lastTime) && s.Link.State == snapshot.LinkConnected {
		rate = float64(steps-c.lastSteps) / s.Time.Sub(c.lastTime).Seconds()
	}
	c.lastSteps, c.lastTime = steps, s.Time
	c.rate.Push(rate)
	c.busy.Push(gpuBusy(s))
	c.load.Push(s.CPU.Total.Or(math.NaN()))
	s.History.StepsPerSec = c.values(c.rate)
	s.History.GPUBusy = c.values(c.busy)
	s.History.CPU = c.values(c.load)
}

func (c *Collector) values(r *ring.Ring) []float64 {
	c.buf = r.Values(c.buf)
	return append([]float64(nil), c.buf...)
}

// gpuBusy is the trainer's own GPU busy share when it publishes GPU times,
// else the highest device activity (GPM SM activity, else kernel-active).
func gpuBusy(s *snapshot.Snapshot) float64 {
	if s.Summary != nil && s.Summary.HasGPU && s.Link.State == snapshot.LinkConnected {
		return 100 * s.Summary.GPUBusy
	}
	best := math.NaN()
	for _, d := range s.GPU.Devices {
		v := d.SMActivity
		if !v.OK() {
			v = d.KernelActive
		}
		if v.OK() && (math.IsNaN(best) || *v.Value > best) {
			best = *v.Value
		}
	}
	return best
}
