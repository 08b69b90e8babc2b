package monitor

import (
	"math"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics/ring"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// HistoryLen is how many refreshes the sparklines remember.
const HistoryLen = 240

// Collector builds one snapshot per refresh: the feed's trainer summary and
// verdict, every registered source's reading, and the short histories
// behind the sparklines. Collect may be called from any goroutine; one
// call at a time is enforced.
type Collector struct {
	Feed    *feed.Feed
	Sources []source.Source

	mu        sync.Mutex
	lastSteps int64
	lastTime  time.Time
	rate      *ring.Ring
	busy      *ring.Ring
	load      *ring.Ring
	buf       []float64
}

// NewCollector returns a Collector over the feed and the sources, sampled
// in the order given.
func NewCollector(f *feed.Feed, sources ...source.Source) *Collector {
	return &Collector{Feed: f, Sources: sources,
		rate: ring.New(HistoryLen), busy: ring.New(HistoryLen), load: ring.New(HistoryLen)}
}

// Collect samples every source at now and returns the snapshot for the
// window w. Sampling errors are not returned: they show in the snapshot as
// status lines, failed readings and the sampler statistics.
func (c *Collector) Collect(now time.Time, w snapshot.Window) snapshot.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := snapshot.Snapshot{Version: snapshot.SchemaVersion, Time: now, Window: w,
		GPU: snapshot.GPU{Status: "GPU monitoring off", Devices: []snapshot.Device{}}}
	c.Feed.Fill(&s)
	t := source.Target{PID: c.Feed.TrainerPID()}
	s.Samplers = make([]snapshot.SamplerStat, len(c.Sources))
	for i, src := range c.Sources {
		start := time.Now()
		err := src.Sample(now, t)
		s.Samplers[i] = snapshot.SamplerStat{Name: src.Name(), Seconds: time.Since(start).Seconds(), OK: err == nil}
		src.Fill(&s)
	}
	c.record(&s)
	return s
}

// Close closes every source.
func (c *Collector) Close() {
	for _, src := range c.Sources {
		src.Close()
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
