package remote

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// summarize is the rank's window summary from its rates: means and shares
// per stage (stage seconds per second over steps per second), the step
// wall time's mean and its p50 and p99 from the histogram buckets. Nil
// without steps in the range.
func (r *rankData) summarize() *stage.Summary {
	steps := math.Round(r.steps)
	if steps < 1 || r.rate <= 0 || r.wall <= 0 {
		return nil
	}
	s := &stage.Summary{Steps: int(steps), StepsPerSec: r.rate, SamplesPerSec: r.samples,
		WallMean: r.wall * 1e9, WallP50: r.p50 * 1e9, WallP99: r.p99 * 1e9,
		SpanNs: int64(steps / r.rate * 1e9), LastStep: int64(r.lastStep), LastEndNs: int64(r.lastEnd * 1e9),
		HasLoss: r.hasLoss, LastLoss: float32(r.loss)}
	for _, name := range stageOrder(r.stages) {
		st := r.stages[name]
		stat := stage.StageStat{Name: name, Mean: st.cpu / r.rate * 1e9}
		stat.Share = stat.Mean / s.WallMean
		if st.hasGPU {
			stat.HasGPU, stat.GPUMean = true, st.gpu/r.rate*1e9
			s.HasGPU = true
			if stage.ClassOf(name) != stage.ClassComm { // the stream waiting for other ranks: not busy
				s.GPUBusyMean += stat.GPUMean
			}
		}
		s.Stages = append(s.Stages, stat)
	}
	if s.HasGPU {
		s.GPUBusy = min(1, s.GPUBusyMean/s.WallMean)
	}
	return s
}

// stageOrder lists the stage names in the stage table's order, then the
// publisher's own names alphabetically.
func stageOrder(stages map[string]*stageRate) []string {
	index := map[string]int{}
	for i, k := range stage.Known {
		index[k.Name] = i
	}
	names := make([]string, 0, len(stages))
	for name := range stages {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, aok := index[names[i]]
		b, bok := index[names[j]]
		switch {
		case aok && bok:
			return a < b
		case aok != bok:
			return aok
		}
		return names[i] < names[j]
	})
	return names
}

// snapshotRank is the rank's entry in the snapshot's ranks; its own
// verdict over the window is the snapshotter's (RemoteReading.Own), as a
// local view judges each rank.
func (r *rankData) snapshotRank() snapshot.Rank {
	out := snapshot.Rank{Rank: r.rank, Host: cmpOr(r.host, r.instance), Instance: r.instance,
		Link: snapshot.LinkDisconnected, Summary: r.summary}
	out.PID, _ = strconv.Atoi(r.pid)
	if r.connected {
		out.Link = snapshot.LinkConnected
	}
	return out
}

// window is what the rank's verdict is given on (judge.Inputs makes its
// inputs). Now is when its exporter was last scraped, so that a step's
// age is not the scrape interval's.
func (r *rankData) window(now time.Time) judge.Window {
	w := judge.Window{Live: r.connected, NowNs: now.UnixNano(), StartNs: int64(r.start * 1e9)}
	if !r.scraped.IsZero() && r.scraped.Before(now) {
		w.NowNs = r.scraped.UnixNano()
	}
	if r.summary != nil {
		w.Summary = *r.summary
	}
	return w
}

// trainer is the snapshot's trainer part for this rank.
func (r *rankData) trainer(now time.Time) *snapshot.Trainer {
	rank := r.rank
	t := &snapshot.Trainer{Name: r.trainerName, Rank: &rank, WorldSize: r.world, Stages: stageOrder(r.stages)}
	t.PID, _ = strconv.Atoi(r.pid)
	if r.start > 0 {
		st := time.UnixMilli(int64(r.start * 1e3)).UTC()
		t.Started = &st
		t.UptimeSec = max(0, now.Sub(st).Seconds())
	}
	return t
}
