// Package report writes a run as one self-contained HTML page: the
// verdict and its timeline, step time, stage shares, throughput, loader,
// host and per-rank plots drawn as inline SVG by this package, the stage
// table and the run's config. It reads recordings and run summaries; the
// page loads nothing (no scripts, fonts or images from anywhere).
package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources"
	"github.com/pipetop/pipetop/monitor/summary"
)

// Report is what the page shows of one run.
type Report struct {
	File string      // the file it was made from
	Run  summary.Run // throughput, verdicts, stage tables
	// Recorded is false for a run summary file, which holds no readings
	// over time: the page then says which plots it cannot draw.
	Recorded bool
	Config   []Setting
	Host     []HostPoint
	Loader   []LoaderPoint
	Ranks    []RankRow // a run of several ranks: each rank's work per bucket
	Changes  []Change  // the largest step change of each stage and of the step time
}

// Setting is one line of the run's config.
type Setting struct{ Name, Value string }

// HostPoint is one host reading; nil fields were not read.
type HostPoint struct {
	AtSec    float64
	CPU      *float64 // busy %, all cores
	GPU      *float64 // SM activity % (else kernel-active %), mean over devices
	GPUMemGB *float64 // memory used, summed over devices
}

// LoaderPoint is one loader statistics frame.
type LoaderPoint struct {
	AtSec         float64
	WorkerBusy    float64 // 0..1
	QueueFill     float64 // ready batches / capacity, 0..1 (0 without a capacity)
	ReadAmp       float64
	CacheHitRate  float64
	SamplesPerSec float64
}

// RankRow is one rank's work (step time outside comm: what the others
// wait for) in each bucket of the run, ns; NaN for a bucket without steps.
type RankRow struct {
	Rank   int
	WorkNs []float64
}

// FromFile reads a recording or a run summary (pipetop summary --json, or
// the Python publisher's pipetop-summary-*.json).
func FromFile(path string) (Report, error) {
	run, err := summary.Load(path)
	if err != nil {
		return Report{}, fmt.Errorf("report: %w", err)
	}
	r := Report{File: path, Run: run}
	h, es, rerr := recording.ReadAll(path)
	if es == nil && rerr != nil {
		r.Config = summaryConfig(run)
		return r, nil // a summary file: what summary.Load read is all there is
	}
	r.Recorded = true
	r.read(h, es)
	return r, nil
}

// FromEntries makes the report of recorded entries.
func FromEntries(h recording.Header, es []recording.Entry) Report {
	r := Report{File: h.Source, Run: summary.FromEntries(es), Recorded: true}
	r.read(h, es)
	return r
}

// read fills the series from the recording.
func (r *Report) read(h recording.Header, es []recording.Entry) {
	main := mainRank(es)
	first := r.Run.StartNs
	at := func(ns int64) float64 { return float64(ns-first) / 1e9 }
	var names []string
	var steps []stage.Record
	var hello *ipc.Hello
	ranks := map[int]*rankAcc{}
	for _, e := range es {
		mine := rankOf(e.Rank) == main
		switch {
		case e.Host != nil:
			if p, ok := hostPoint(e.Host); ok {
				p.AtSec = at(e.T.UnixNano())
				r.Host = append(r.Host, p)
			}
		case e.Hello != nil && mine:
			hello, names, steps = e.Hello, e.Hello.Stages, steps[:0]
		case e.Frame == nil:
		case e.Frame.Type == ipc.TypeStages && mine:
			names, steps = e.Frame.Stages, steps[:0]
		case e.Frame.Type == ipc.TypeLoader && mine && e.Frame.Loader != nil:
			r.Loader = append(r.Loader, loaderPoint(e.Frame.Loader, at(e.T.UnixNano())))
		case e.Frame.Type == ipc.TypeSteps:
			if mine {
				steps = append(steps, e.Frame.Steps...)
			}
			if e.Rank != nil {
				acc := ranks[*e.Rank]
				if acc == nil {
					acc = &rankAcc{}
					ranks[*e.Rank] = acc
				}
				acc.add(e.Frame.Steps, names, first, r.Run.BucketSec, len(r.Run.Throughput))
			}
		}
	}
	r.Config = recordingConfig(h, hello, r.Run)
	r.Changes = changes(steps, names, first)
	for _, k := range slices.Sorted(maps.Keys(ranks)) {
		r.Ranks = append(r.Ranks, RankRow{Rank: k, WorkNs: ranks[k].means()})
	}
}

// rankOf is a rank, or -1 for a single trainer.
func rankOf(rank *int) int {
	if rank == nil {
		return -1
	}
	return *rank
}

// mainRank is the lowest rank of a recorded run (as summary takes it), or
// -1 for a single trainer.
func mainRank(es []recording.Entry) int {
	lo := math.MaxInt
	for _, e := range es {
		if e.Rank != nil {
			lo = min(lo, *e.Rank)
		}
	}
	if lo == math.MaxInt {
		return -1
	}
	return lo
}

// rankAcc sums one rank's work by bucket.
type rankAcc struct {
	sum []float64
	n   []int
}

// add puts steps (of the stage list names; comm's class left out) into
// their buckets: bucket i ends at first + (i+1)*bucket seconds.
func (a *rankAcc) add(steps []stage.Record, names []string, first int64, bucket float64, buckets int) {
	if bucket <= 0 || buckets == 0 {
		return
	}
	if a.sum == nil {
		a.sum, a.n = make([]float64, buckets), make([]int, buckets)
	}
	for i := range steps {
		s := &steps[i]
		work := float64(s.WallNs())
		for k := 0; k < s.NumStages && k < len(names); k++ {
			if stage.ClassOf(names[k]) == stage.ClassComm {
				work -= float64(s.CPU[k])
			}
		}
		b := int(math.Ceil(float64(s.EndNs-first)/(bucket*1e9))) - 1
		if b < 0 || b >= buckets {
			continue
		}
		a.sum[b] += work
		a.n[b]++
	}
}

func (a *rankAcc) means() []float64 {
	out := make([]float64, len(a.sum))
	for i := range out {
		out[i] = math.NaN()
		if a.n[i] > 0 {
			out[i] = a.sum[i] / float64(a.n[i])
		}
	}
	return out
}

// hostPoint reads the CPU and GPU parts of one host reading.
func hostPoint(h recording.Host) (HostPoint, bool) {
	var s snapshot.Snapshot
	_ = monitor.LoadReadings(h, &s, sources.Parts()) // what decoded is still drawn
	p := HostPoint{CPU: s.CPU.Total.Value}
	var gpu, mem float64
	var ng, nm int
	for _, d := range s.GPU.Devices {
		v := d.Readings[gpumetric.SMActivity].Value
		if v == nil {
			v = d.Readings[gpumetric.KernelActive].Value
		}
		if v != nil {
			gpu += *v
			ng++
		}
		if d.Readings[gpumetric.MemUsed].Value != nil {
			mem += *d.Readings[gpumetric.MemUsed].Value / (1 << 30)
			nm++
		}
	}
	if ng > 0 {
		g := gpu / float64(ng)
		p.GPU = &g
	}
	if nm > 0 {
		p.GPUMemGB = &mem
	}
	return p, p.CPU != nil || p.GPU != nil
}

func loaderPoint(l *stage.LoaderStats, at float64) LoaderPoint {
	p := LoaderPoint{AtSec: at, WorkerBusy: l.WorkerBusy, ReadAmp: l.ReadAmp, CacheHitRate: l.CacheHitRate, SamplesPerSec: l.SamplesPerSec}
	if l.QueueCap > 0 {
		p.QueueFill = float64(l.QueueDepth) / float64(l.QueueCap)
	}
	return p
}

// recordingConfig is what the recording says about the run.
func recordingConfig(h recording.Header, hello *ipc.Hello, run summary.Run) []Setting {
	c := summaryConfig(run)
	c = append(c, Setting{"recorded from", h.Source}, Setting{"host", h.Host})
	if hello != nil {
		c = append(c, Setting{"stages", strings.Join(hello.Stages, ", ")})
		if hello.WorldSize > 0 {
			c = append(c, Setting{"world size", strconv.Itoa(hello.WorldSize)})
		}
		var cfg map[string]any
		if json.Unmarshal(hello.Config, &cfg) == nil {
			for _, k := range slices.Sorted(maps.Keys(cfg)) {
				c = append(c, Setting{"config " + k, fmt.Sprint(cfg[k])})
			}
		} else if len(hello.Config) > 0 {
			c = append(c, Setting{"config", string(hello.Config)})
		}
	}
	return slices.DeleteFunc(c, func(s Setting) bool { return s.Value == "" })
}

// summaryConfig is what any summary says about the run.
func summaryConfig(run summary.Run) []Setting {
	c := []Setting{{"trainer", run.Name}, {"pid", strconv.Itoa(run.PID)}}
	if len(run.Ranks) > 0 {
		c = append(c, Setting{"ranks", strconv.Itoa(len(run.Ranks))})
	}
	if run.Damage != "" {
		c = append(c, Setting{"damaged", run.Damage})
	}
	return c
}
