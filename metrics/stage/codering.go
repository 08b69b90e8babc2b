package stage

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// CodeRing keeps a trainer's recent stacks frames, their frames and stacks
// interned so that profiling a window is one map update per row, and
// profiles any span of them. It is not safe for concurrent use.
type CodeRing struct {
	t       codeTables
	entries []codeEntry // oldest first
	max     int         // entries kept
}

// codeEntry is one stacks frame, interned.
type codeEntry struct {
	timeNs     int64
	intervalNs int64 // the wall time the frame covers; 0 for a whole run
	hz         float64
	lost       int64
	dropped    int64
	rows       []codeRow
	// threads are the frame's other Python threads; intraOp and interOp
	// torch's thread counts (0: unknown).
	threads          []threadEntry
	intraOp, interOp int
}

// codeRow is one row of a stacks frame, interned.
type codeRow struct {
	group  groupKey
	worker int32 // -1: none
	stack  int32
	n, ns  int64
}

// groupKey is what a profile groups rows by: the training thread's by the
// stage it was in, every worker's together.
type groupKey struct{ role, stage string }

// codeTables interns frames, functions and stacks.
type codeTables struct {
	frames  []CodeFrame
	frameID map[CodeFrame]int32
	fn      []int32 // the function (frame with line 0) of each frame
	stacks  [][]int32
	stackID map[string]int32
}

func newCodeTables() codeTables {
	return codeTables{frameID: map[CodeFrame]int32{}, stackID: map[string]int32{}}
}

// maxInterned bounds the interned tables; beyond it the ring re-interns
// what it still holds.
const maxInterned = 1 << 17

// DefaultCodeEntries is how many stacks frames a CodeRing keeps: ten
// minutes at one a second.
const DefaultCodeEntries = 600

// NewCodeRing returns a ring keeping up to entries stacks frames
// (DefaultCodeEntries if < 1).
func NewCodeRing(entries int) *CodeRing {
	if entries < 1 {
		entries = DefaultCodeEntries
	}
	return &CodeRing{t: newCodeTables(), max: entries}
}

// Len is the number of stacks frames held.
func (c *CodeRing) Len() int { return len(c.entries) }

// Add keeps s (already validated); the oldest frame goes when the ring is
// full.
func (c *CodeRing) Add(s *StackSamples) {
	if len(c.t.frames) > maxInterned || len(c.t.stacks) > maxInterned {
		c.compact()
	}
	ids := make([]int32, len(s.Frames))
	for i, f := range s.Frames {
		ids[i] = c.t.frame(f)
	}
	e := codeEntry{timeNs: s.TimeNs, intervalNs: s.IntervalNs, hz: s.Hz, lost: s.Lost, dropped: s.Dropped, rows: make([]codeRow, 0, len(s.Rows)),
		threads: c.internThreads(s, ids), intraOp: s.IntraOpThreads, interOp: s.InterOpThreads}
	var buf []int32
	for _, r := range s.Rows {
		buf = buf[:0]
		for _, j := range r.Stack {
			buf = append(buf, ids[j])
		}
		w := int32(-1)
		if r.Worker != nil {
			w = int32(*r.Worker)
		}
		row := codeRow{group: groupOf(r), worker: w, stack: c.t.stack(buf), n: r.N, ns: r.Ns}
		e.rows = append(e.rows, row)
		if r.Role == RoleWorker && r.Stage == SlowFetch {
			row.group = slowFetches // also apart: what the stalls wait for
			e.rows = append(e.rows, row)
		}
	}
	if len(c.entries) >= c.max {
		c.entries = slices.Delete(c.entries, 0, len(c.entries)-c.max+1)
	}
	c.entries = append(c.entries, e)
}

// slowFetches groups the workers' samples in their slow fetches, which
// also count with all the workers' (a group the profile's totals leave
// out).
var slowFetches = groupKey{RoleWorker, SlowFetch}

// groupOf is the group a row counts in.
func groupOf(r StackRow) groupKey {
	if r.Role == RoleTrain {
		return groupKey{RoleTrain, r.Stage}
	}
	return groupKey{r.Role, ""}
}

func (t *codeTables) frame(f CodeFrame) int32 {
	if id, ok := t.frameID[f]; ok {
		return id
	}
	id := int32(len(t.frames))
	t.frames = append(t.frames, f)
	t.fn = append(t.fn, id)
	t.frameID[f] = id
	if f.Line != 0 {
		fn := f
		fn.Line = 0
		t.fn[id] = t.frame(fn)
	}
	return id
}

func (t *codeTables) stack(ids []int32) int32 {
	key := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(key[4*i:], uint32(id))
	}
	if id, ok := t.stackID[string(key)]; ok {
		return id
	}
	id := int32(len(t.stacks))
	t.stacks = append(t.stacks, slices.Clone(ids))
	t.stackID[string(key)] = id
	return id
}

// compact re-interns the frames and stacks the held entries use.
func (c *CodeRing) compact() {
	old := c.t
	c.t = newCodeTables()
	var buf []int32
	for i := range c.entries {
		for j := range c.entries[i].rows {
			r := &c.entries[i].rows[j]
			buf = buf[:0]
			for _, f := range old.stacks[r.stack] {
				buf = append(buf, c.t.frame(old.frames[f]))
			}
			r.stack = c.t.stack(buf)
		}
		for j := range c.entries[i].threads {
			c.entries[i].threads[j].reintern(&old, &c.t)
		}
	}
}

// Newest is the time of the newest stacks frame; ok is false when empty.
func (c *CodeRing) Newest() (ns int64, ok bool) {
	if len(c.entries) == 0 {
		return 0, false
	}
	return c.entries[len(c.entries)-1].timeNs, true
}

// Profile profiles the stacks frames taken in [fromNs, toNs]; nil when
// none holds a sample.
func (c *CodeRing) Profile(fromNs, toNs int64) *CodeProfile {
	acc := map[codeRowKey]*[2]int64{}
	workers := map[groupKey]map[int32]bool{}
	p := &CodeProfile{}
	for _, e := range c.entries {
		if e.timeNs < fromNs || e.timeNs > toNs {
			continue
		}
		p.Hz, p.Lost, p.Dropped = e.hz, p.Lost+e.lost, p.Dropped+e.dropped
		for _, r := range e.rows {
			k := codeRowKey{r.group, r.stack}
			a := acc[k]
			if a == nil {
				a = &[2]int64{}
				acc[k] = a
			}
			a[0] += r.n
			a[1] += r.ns
			if r.worker >= 0 {
				if workers[r.group] == nil {
					workers[r.group] = map[int32]bool{}
				}
				workers[r.group][r.worker] = true
			}
		}
	}
	if len(acc) == 0 {
		return nil
	}
	byGroup := map[groupKey][]weighted{}
	for k, a := range acc {
		byGroup[k.group] = append(byGroup[k.group], weighted{stack: k.stack, n: a[0], ns: a[1]})
	}
	for g, ws := range byGroup {
		cg := c.t.group(g, ws, 0)
		cg.Workers = len(workers[g])
		if g != slowFetches {
			p.Samples += cg.Samples
			p.SampledNs += cg.SampledNs
		}
		p.Groups = append(p.Groups, cg)
	}
	slices.SortFunc(p.Groups, func(a, b CodeGroup) int {
		if a.Role != b.Role {
			return cmp.Compare(roleOrder(a.Role), roleOrder(b.Role))
		}
		return cmp.Or(cmp.Compare(b.SampledNs, a.SampledNs), cmp.Compare(a.Stage, b.Stage))
	})
	c.addThreads(p, fromNs, toNs)
	return p
}

// roleOrder lists the training thread's groups first, then the workers'.
func roleOrder(role string) int {
	switch role {
	case RoleTrain:
		return 0
	case RoleWorker:
		return 1
	}
	return 2
}

// codeRowKey is a row of a profile: a group's stack.
type codeRowKey struct {
	group groupKey
	stack int32
}

// weighted is one stack of a group with its samples.
type weighted struct {
	stack int32
	n, ns int64
}

// ProfileOf profiles stacks frames (a whole run's, read from a file) with
// a ring of their own; nil when none holds a sample.
func ProfileOf(frames ...*StackSamples) *CodeProfile {
	c := NewCodeRing(len(frames))
	for _, s := range frames {
		if s != nil {
			c.Add(s)
		}
	}
	return c.Profile(0, 1<<63-1)
}
