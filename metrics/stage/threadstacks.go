package stage

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// ThreadSamples is one of the trainer process's other Python threads in a
// stacks frame (the training thread and pipetop's own threads left out):
// its stack samples, its CPU time and how much CPU it gained while the
// stack sampler held the GIL (its probes), which tells a thread running
// Python code, holding the GIL, from one whose time is in C calls that
// release it.
type ThreadSamples struct {
	// TID is the thread's native id (Linux gettid in the trainer's pid
	// namespace); Name its threading name.
	TID  int    `json:"tid"`
	Name string `json:"name"`
	// CPUNs is the CPU time the thread used over CoveredNs of wall time.
	CPUNs     int64 `json:"cpu_ns"`
	CoveredNs int64 `json:"covered_ns"`
	// N counts its stack samples.
	N int64 `json:"n"`
	// FreeNs is the CPU time it gained during Probes probes that held the
	// GIL for ProbedNs in all.
	FreeNs   int64 `json:"free_ns"`
	ProbedNs int64 `json:"probed_ns"`
	Probes   int64 `json:"probes"`
	// Rows are its folded stacks, indexing the frame's Frames.
	Rows []ThreadRow `json:"rows"`
}

// ThreadRow is one folded stack of a thread.
type ThreadRow struct {
	Stack []int `json:"stack"`
	N     int64 `json:"n"`
	Ns    int64 `json:"ns"`
}

// MaxStackThreads bounds the threads of one stacks frame.
const MaxStackThreads = 256

// validThreads checks the threads of s.
func (s *StackSamples) validThreads() error {
	if len(s.Threads) > MaxStackThreads {
		return fmt.Errorf("stacks: %d threads (at most %d)", len(s.Threads), MaxStackThreads)
	}
	if s.IntraOpThreads < 0 || s.InterOpThreads < 0 {
		return errors.New("stacks: a negative thread count")
	}
	for i := range s.Threads {
		if err := s.validThread(&s.Threads[i]); err != nil {
			return fmt.Errorf("stacks: thread %d: %w", i, err)
		}
	}
	return nil
}

func (s *StackSamples) validThread(t *ThreadSamples) error {
	switch {
	case t.TID < 0 || len(t.Name) > MaxCodeText:
		return fmt.Errorf("tid %d, name of %d bytes (want 0 or more, at most %d bytes)", t.TID, len(t.Name), MaxCodeText)
	case t.CPUNs < 0 || t.CoveredNs < 0 || t.N < 0 || t.FreeNs < 0 || t.ProbedNs < 0 || t.Probes < 0:
		return errors.New("a negative time or count")
	case len(t.Rows) > MaxStackRows:
		return fmt.Errorf("%d rows (at most %d)", len(t.Rows), MaxStackRows)
	}
	for i, r := range t.Rows {
		if r.N < 0 || r.Ns < 0 || len(r.Stack) > MaxStackDepth {
			return fmt.Errorf("row %d: a negative count or %d frames deep (at most %d)", i, len(r.Stack), MaxStackDepth)
		}
		for _, j := range r.Stack {
			if j < 0 || j >= len(s.Frames) {
				return fmt.Errorf("row %d: frame index %d out of range (%d frames)", i, j, len(s.Frames))
			}
		}
	}
	return nil
}

// ThreadProfile is one of the trainer's other Python threads over a
// window: how much of a core it used, how much of that ran without the
// GIL, and where its samples went.
type ThreadProfile struct {
	TID  int    `json:"tid"`
	Name string `json:"name"`
	// CPU is its share of one core; Free the share of a core it used
	// while the stack sampler held the GIL (in C calls that release it),
	// from Probes probes.
	CPU    float64 `json:"cpu"`
	Free   float64 `json:"free"`
	Probes int64   `json:"probes"`
	// Samples counts its stack samples, SampledNs the wall time they
	// stand for.
	Samples   int64 `json:"samples"`
	SampledNs int64 `json:"sampled_ns"`
	// Path is its hot path (as CodeGroup.Path) and Hot the user function
	// on it, nil when none holds HotShare.
	Path []PathStep `json:"path,omitempty"`
	Hot  *HotSpot   `json:"hot,omitempty"`
}

// GIL is the share of a core the thread used holding the GIL: its CPU
// less what it used without it.
func (p *ThreadProfile) GIL() float64 { return max(0, p.CPU-p.Free) }

// Where is the code the thread's time goes to: the user's function on its
// hot path at its heaviest line, else the innermost call of the hot path
// (a library's thread); ok is false when no call holds HotShare.
func (p *ThreadProfile) Where() (CodeFrame, bool) {
	if p.Hot != nil {
		return p.Hot.User, true
	}
	if len(p.Path) == 0 {
		return CodeFrame{}, false
	}
	return p.Path[len(p.Path)-1].CodeFrame, true
}

// threadEntry is one thread of one stacks frame, interned.
type threadEntry struct {
	tid                  int
	name                 string
	cpu, covered, n      int64
	free, probed, probes int64
	rows                 []weighted
}

// internThreads interns the threads of s; ids maps s's frame indices to
// interned frames.
func (c *CodeRing) internThreads(s *StackSamples, ids []int32) []threadEntry {
	if len(s.Threads) == 0 {
		return nil
	}
	out := make([]threadEntry, 0, len(s.Threads))
	var buf []int32
	for _, t := range s.Threads {
		e := threadEntry{tid: t.TID, name: t.Name, cpu: t.CPUNs, covered: t.CoveredNs, n: t.N,
			free: t.FreeNs, probed: t.ProbedNs, probes: t.Probes}
		for _, r := range t.Rows {
			buf = buf[:0]
			for _, j := range r.Stack {
				buf = append(buf, ids[j])
			}
			e.rows = append(e.rows, weighted{stack: c.t.stack(buf), n: r.N, ns: r.Ns})
		}
		out = append(out, e)
	}
	return out
}

// threadProfiles sums the threads of entries by tid, the most CPU
// holding the GIL first.
func (t *codeTables) threadProfiles(entries []codeEntry) []ThreadProfile {
	type acc struct {
		e    threadEntry
		rows map[int32]*weighted
	}
	by := map[int]*acc{}
	for _, e := range entries {
		for _, th := range e.threads {
			a := by[th.tid]
			if a == nil {
				a = &acc{e: threadEntry{tid: th.tid}, rows: map[int32]*weighted{}}
				by[th.tid] = a
			}
			a.e.name = th.name
			a.e.cpu += th.cpu
			a.e.covered += th.covered
			a.e.n += th.n
			a.e.free += th.free
			a.e.probed += th.probed
			a.e.probes += th.probes
			for _, r := range th.rows {
				w := a.rows[r.stack]
				if w == nil {
					w = &weighted{stack: r.stack}
					a.rows[r.stack] = w
				}
				w.n += r.n
				w.ns += r.ns
			}
		}
	}
	out := make([]ThreadProfile, 0, len(by))
	for _, a := range by {
		out = append(out, t.threadProfile(a.e, a.rows))
	}
	slices.SortFunc(out, func(a, b ThreadProfile) int { return cmp.Or(cmp.Compare(b.GIL(), a.GIL()), cmp.Compare(a.TID, b.TID)) })
	return out
}

// threadProfile profiles one thread's sums.
func (t *codeTables) threadProfile(e threadEntry, rows map[int32]*weighted) ThreadProfile {
	p := ThreadProfile{TID: e.tid, Name: e.name, Probes: e.probes}
	if e.covered > 0 {
		p.CPU = float64(e.cpu) / float64(e.covered)
	}
	if e.probed > 0 {
		p.Free = float64(e.free) / float64(e.probed)
	}
	ws := make([]weighted, 0, len(rows))
	for _, w := range rows {
		ws = append(ws, *w)
	}
	slices.SortFunc(ws, func(a, b weighted) int { return cmp.Compare(a.stack, b.stack) })
	g := t.group(groupKey{role: "thread"}, ws, 0)
	p.Samples, p.SampledNs, p.Path, p.Hot = g.Samples, g.SampledNs, g.Path, g.Hot
	return p
}

// reintern moves the thread's stacks from the tables old to t.
func (e *threadEntry) reintern(old, t *codeTables) {
	var buf []int32
	for i := range e.rows {
		buf = buf[:0]
		for _, f := range old.stacks[e.rows[i].stack] {
			buf = append(buf, t.frame(old.frames[f]))
		}
		e.rows[i].stack = t.stack(buf)
	}
}

// addThreads sets p's threads and torch thread counts from the entries
// taken in [fromNs, toNs].
func (c *CodeRing) addThreads(p *CodeProfile, fromNs, toNs int64) {
	var in []codeEntry
	for _, e := range c.entries {
		if e.timeNs < fromNs || e.timeNs > toNs {
			continue
		}
		if len(e.threads) > 0 {
			in = append(in, e)
		}
		if e.intraOp > 0 {
			p.IntraOpThreads, p.InterOpThreads = e.intraOp, e.interOp
		}
	}
	if len(in) > 0 {
		p.Threads = c.t.threadProfiles(in)
	}
}
