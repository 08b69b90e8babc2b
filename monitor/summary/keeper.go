package summary

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources/procs"
)

// KeptRSS is how many of the trainer's resident-memory readings the
// Keeper keeps, the newest: as many as the live view judges memory creep
// over (monitor.HistoryLen).
const KeptRSS = 240

// Keeper keeps what the live view reads of a run pipetop run started,
// refresh by refresh, for the end-of-run verdict, by trainer pid: the CPU
// readings' means over the refreshes on which the trainer had trained,
// its newest resident-memory readings (KeptRSS, for memory creep), and
// each stage's pause code from the newest refresh that told it from
// the rest of the steps. It is safe for concurrent use.
type Keeper struct {
	mu     sync.Mutex
	cpu    map[int]*CPUMeans
	rss    map[int]*verdict.Series
	pauses map[int]map[string]stage.CodeGroup
}

// NewKeeper returns an empty Keeper.
func NewKeeper() *Keeper {
	return &Keeper{cpu: map[int]*CPUMeans{}, rss: map[int]*verdict.Series{}, pauses: map[int]map[string]stage.CodeGroup{}}
}

// AddSnapshot keeps one refresh's CPU readings and the trainer's resident
// memory when the trainer trained in its window.
func (k *Keeper) AddSnapshot(s *snapshot.Snapshot) {
	if s.Trainer == nil || s.Summary == nil || s.Summary.Steps == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.cpu[s.Trainer.PID]
	if m == nil {
		m = &CPUMeans{}
		k.cpu[s.Trainer.PID] = m
	}
	m.AddSnapshot(s)
	var h verdict.Host
	procs.Part.FillHost(s, &h)
	if len(h.RSS.TimeNs) > 0 {
		r := k.rss[s.Trainer.PID]
		if r == nil {
			r = &verdict.Series{}
			k.rss[s.Trainer.PID] = r
		}
		keepRSS(r, h.RSS)
	}
}

// keepRSS appends the readings of add to r, keeping the newest KeptRSS.
func keepRSS(r *verdict.Series, add verdict.Series) {
	for i, t := range add.TimeNs {
		if len(r.TimeNs) >= KeptRSS {
			r.TimeNs, r.Value = slices.Delete(r.TimeNs, 0, 1), slices.Delete(r.Value, 0, 1)
		}
		r.Add(t, add.Value[i])
	}
}

// AddPauses keeps the pause code of one refresh of trainer pid (its
// window's summary sm and stack samples' profile c), when the trainer
// trained in it and a pause was told.
func (k *Keeper) AddPauses(pid int, sm *stage.Summary, c *stage.CodeProfile) {
	if sm == nil || sm.Steps == 0 || c == nil || len(c.Pauses) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pauses[pid]
	if p == nil {
		p = map[string]stage.CodeGroup{}
		k.pauses[pid] = p
	}
	for _, g := range c.Pauses {
		p[g.Stage] = g
	}
}

// Kept returns what was kept, by trainer pid (ReadScripts takes it); a
// trainer with no readings and no pauses is absent.
func (k *Keeper) Kept() map[int]Kept {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[int]Kept{}
	for pid, m := range k.cpu {
		if r := m.Run(); r != nil {
			out[pid] = Kept{CPU: r}
		}
	}
	for pid, r := range k.rss {
		kept := out[pid]
		kept.RSS = &verdict.Series{TimeNs: slices.Clone(r.TimeNs), Value: slices.Clone(r.Value)}
		out[pid] = kept
	}
	for pid, p := range k.pauses {
		kept := out[pid]
		kept.Pauses = slices.SortedFunc(maps.Values(p), func(a, b stage.CodeGroup) int { return strings.Compare(a.Stage, b.Stage) })
		out[pid] = kept
	}
	return out
}
