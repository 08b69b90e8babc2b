package stage

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Thresholds of the hot code a verdict may cite.
const (
	HotShare      = 0.5 // a call holding at least this share of a group's sampled time is on its hot path
	MinHotSamples = 20  // fewer samples than this in a group: no code is cited
)

// Profile sizes: what a CodeGroup lists.
const (
	TopFuncs     = 10 // functions by self time
	FoldedStacks = 20 // the heaviest folded stacks
)

// CodeProfile is which code the sampled time went to over a window: the
// training thread's samples by the stage it was in, the DataLoader
// workers' fetches together. Shares are of each group's sampled time.
type CodeProfile struct {
	// Hz is the stack sampler's rate.
	Hz float64 `json:"hz"`
	// Samples and SampledNs sum every group's.
	Samples   int64 `json:"samples"`
	SampledNs int64 `json:"sampled_ns"`
	// Lost counts samples workers could not deliver.
	Lost int64 `json:"lost,omitempty"`
	// Dropped counts the stacks read from outside that raced the
	// interpreter and were dropped (StackSamples.Dropped).
	Dropped int64 `json:"dropped,omitempty"`
	// Groups: the training thread's stages (most sampled first), then the
	// workers.
	Groups []CodeGroup `json:"groups"`
	// Threads are the trainer process's other Python threads, the most
	// CPU holding the GIL first; nil when the publisher sends none.
	Threads []ThreadProfile `json:"threads,omitempty"`
	// IntraOpThreads and InterOpThreads are torch's thread counts in the
	// trainer process, from the newest frame that says; 0 when unknown.
	IntraOpThreads int `json:"intra_op_threads,omitempty"`
	InterOpThreads int `json:"inter_op_threads,omitempty"`
	// Pauses are the training thread's own samples of the window's
	// periodic pauses, one group per paused stage (CodeRing.PauseGroup);
	// nil when none could be told from the rest of the steps.
	Pauses []CodeGroup `json:"pauses,omitempty"`
}

// Pause returns the group of the training thread's samples in the
// periodic pauses of stage st, nil when none.
func (p *CodeProfile) Pause(st string) *CodeGroup {
	if p == nil {
		return nil
	}
	for i := range p.Pauses {
		if p.Pauses[i].Stage == st {
			return &p.Pauses[i]
		}
	}
	return nil
}

// Who names g's threads: "workers", "workers in slow fetches" (their
// samples in fetches far slower than their usual ones, also counted with
// all the workers'), "training thread in data_wait", or the role.
func (g *CodeGroup) Who() string {
	switch {
	case g.Role == RoleWorker && g.Stage == SlowFetch:
		return "workers in slow fetches"
	case g.Role == RoleWorker:
		return "workers"
	case g.Role == RoleTrain:
		return "training thread in " + g.Stage
	}
	return g.Role
}

// CodeGroup is the samples of one role (and, for the training thread,
// one stage; for the workers, SlowFetch for their slow fetches).
type CodeGroup struct {
	// Role is RoleTrain or RoleWorker.
	Role string `json:"role"`
	// Stage is the training thread's stage; empty for workers.
	Stage string `json:"stage,omitempty"`
	// Workers is the number of workers sampled (role worker).
	Workers int `json:"workers,omitempty"`
	// Samples counts the samples; SampledNs is the wall time they stand for.
	Samples   int64 `json:"samples"`
	SampledNs int64 `json:"sampled_ns"`
	// Path is the hot path: from the outermost call, each call that holds
	// at least HotShare of the group's time, the heaviest first; Line is
	// the call's heaviest line.
	Path []PathStep `json:"path"`
	// Hot is what a verdict cites, nil when no user function dominates.
	Hot *HotSpot `json:"hot,omitempty"`
	// Top lists the functions with the most self time (the innermost
	// frame of a sample).
	Top []FuncShare `json:"top"`
	// Stacks are the heaviest folded stacks.
	Stacks []FoldedStack `json:"stacks"`
}

// PathStep is one call of a hot path.
type PathStep struct {
	CodeFrame
	// Share is the part of the group's time spent in this call and below.
	Share float64 `json:"share"`
}

// HotSpot names the code a group's time goes to: the innermost of the
// user's own functions on the hot path, the library call it makes there
// and the innermost library function that still holds HotShare.
type HotSpot struct {
	// User is the user's function, at its heaviest line.
	User CodeFrame `json:"user"`
	// Share is the part of the time spent in User; LineShare at its line.
	Share     float64 `json:"share"`
	LineShare float64 `json:"line_share"`
	// Calls is the library function User calls on the hot path; nil when
	// the time is User's own (or in C code it calls).
	Calls *PathStep `json:"calls,omitempty"`
	// Leaf is the innermost library function on the hot path, when it is
	// below Calls.
	Leaf *PathStep `json:"leaf,omitempty"`
}

// FuncShare is one function with its self and total shares.
type FuncShare struct {
	Name string `json:"name"`
	File string `json:"file"`
	Lib  string `json:"lib,omitempty"`
	// Self is the share of samples with this function innermost; Total of
	// samples with it anywhere on the stack.
	Self  float64 `json:"self"`
	Total float64 `json:"total"`
}

// FoldedStack is one stack, its frames "name (file:line)" outermost first
// joined with ";", with its samples.
type FoldedStack struct {
	Stack     string `json:"stack"`
	Samples   int64  `json:"samples"`
	SampledNs int64  `json:"sampled_ns"`
}

// Group returns the profile's group of role and stage, nil when none.
func (p *CodeProfile) Group(role, stage string) *CodeGroup {
	if p == nil {
		return nil
	}
	for i := range p.Groups {
		if p.Groups[i].Role == role && p.Groups[i].Stage == stage {
			return &p.Groups[i]
		}
	}
	return nil
}

// group profiles the weighted stacks of one group. Its hot spot needs
// MinHotSamples samples, or, when minNs > 0, samples standing for minNs
// (a few samples each standing for a long hold of the GIL).
func (t *codeTables) group(g groupKey, ws []weighted, minNs int64) CodeGroup {
	cg := CodeGroup{Role: g.role, Stage: g.stage}
	for _, w := range ws {
		cg.Samples += w.n
		cg.SampledNs += w.ns
	}
	if cg.SampledNs <= 0 {
		return cg
	}
	tree := t.callTree(ws)
	cg.Path = tree.hotPath(t, float64(cg.SampledNs))
	cg.Hot = hotSpot(cg.Path, tree, float64(cg.SampledNs))
	if cg.Samples < MinHotSamples && (minNs <= 0 || cg.SampledNs < minNs) {
		cg.Hot = nil
	}
	cg.Top = t.topFuncs(ws, float64(cg.SampledNs))
	cg.Stacks = t.folded(ws)
	return cg
}

// callTree is a group's samples as a tree of calls by function.
type callTree struct {
	nodes []treeNode
	child map[[2]int32]int32 // (parent node, function) -> node
}

type treeNode struct {
	fn     int32
	ns     int64
	lines  map[int]int64 // the node's time by the line it was at
	childs []int32
}

func (t *codeTables) callTree(ws []weighted) *callTree {
	ct := &callTree{nodes: []treeNode{{fn: -1}}, child: map[[2]int32]int32{}}
	for _, w := range ws {
		cur := int32(0)
		ct.nodes[0].ns += w.ns
		for _, f := range t.stacks[w.stack] {
			fn := t.fn[f]
			k := [2]int32{cur, fn}
			n, ok := ct.child[k]
			if !ok {
				n = int32(len(ct.nodes))
				ct.nodes = append(ct.nodes, treeNode{fn: fn, lines: map[int]int64{}})
				ct.child[k] = n
				ct.nodes[cur].childs = append(ct.nodes[cur].childs, n)
			}
			ct.nodes[n].ns += w.ns
			ct.nodes[n].lines[t.frames[f].Line] += w.ns
			cur = n
		}
	}
	return ct
}

// hotPath follows the heaviest child from the root while it holds at
// least HotShare of total; each step's line is its heaviest.
func (ct *callTree) hotPath(t *codeTables, total float64) []PathStep {
	var path []PathStep
	pathNodes := ct.pathNodes(total)
	for _, n := range pathNodes {
		node := ct.nodes[n]
		f := t.frames[node.fn]
		f.Line, _ = heaviestLine(node.lines)
		path = append(path, PathStep{CodeFrame: f, Share: float64(node.ns) / total})
	}
	return path
}

// pathNodes are the nodes of the hot path, outermost first.
func (ct *callTree) pathNodes(total float64) []int32 {
	var out []int32
	cur := int32(0)
	for {
		best, bestNs := int32(-1), int64(0)
		for _, c := range ct.nodes[cur].childs {
			if ns := ct.nodes[c].ns; ns > bestNs || (ns == bestNs && best >= 0 && c < best) {
				best, bestNs = c, ns
			}
		}
		if best < 0 || float64(bestNs) < HotShare*total {
			return out
		}
		out = append(out, best)
		cur = best
	}
}

// heaviestLine is the line holding the most time, the lowest on a tie.
func heaviestLine(lines map[int]int64) (line int, ns int64) {
	for l, v := range lines {
		if v > ns || (v == ns && l < line) {
			line, ns = l, v
		}
	}
	return line, ns
}

// hotSpot finds what path cites: its innermost user call, the library
// call below it and the innermost library call. A top-level script
// (<module>) is cited only when one of its lines holds HotShare.
func hotSpot(path []PathStep, ct *callTree, total float64) *HotSpot {
	u := -1
	for i, s := range path {
		if s.User() {
			u = i
		}
	}
	if u < 0 {
		return nil
	}
	nodes := ct.pathNodes(total)
	_, lineNs := heaviestLine(ct.nodes[nodes[u]].lines)
	h := &HotSpot{User: path[u].CodeFrame, Share: path[u].Share, LineShare: float64(lineNs) / total}
	if path[u].Name == "<module>" && h.LineShare < HotShare {
		return nil
	}
	if u+1 < len(path) {
		c := path[u+1]
		h.Calls = &c
		if last := path[len(path)-1]; u+2 < len(path) && !last.User() {
			h.Leaf = &last
		}
	}
	return h
}

// topFuncs lists the functions with the most self time.
func (t *codeTables) topFuncs(ws []weighted, total float64) []FuncShare {
	self, all := map[int32]int64{}, map[int32]int64{}
	for _, w := range ws {
		st := t.stacks[w.stack]
		if len(st) == 0 {
			continue
		}
		self[t.fn[st[len(st)-1]]] += w.ns
		seen := map[int32]bool{}
		for _, f := range st {
			if fn := t.fn[f]; !seen[fn] {
				seen[fn] = true
				all[fn] += w.ns
			}
		}
	}
	out := make([]FuncShare, 0, len(self))
	for fn, ns := range self {
		f := t.frames[fn]
		out = append(out, FuncShare{Name: f.Name, File: f.File, Lib: f.Lib, Self: float64(ns) / total, Total: float64(all[fn]) / total})
	}
	slices.SortFunc(out, func(a, b FuncShare) int {
		return cmp.Or(cmp.Compare(b.Self, a.Self), cmp.Compare(a.Name, b.Name), cmp.Compare(a.File, b.File))
	})
	return out[:min(len(out), TopFuncs)]
}

// folded lists the heaviest stacks in folded form.
func (t *codeTables) folded(ws []weighted) []FoldedStack {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b weighted) int { return cmp.Or(cmp.Compare(b.ns, a.ns), cmp.Compare(a.stack, b.stack)) })
	out := make([]FoldedStack, 0, min(len(ws), FoldedStacks))
	for _, w := range ws[:min(len(ws), FoldedStacks)] {
		out = append(out, FoldedStack{Stack: t.foldedText(w.stack), Samples: w.n, SampledNs: w.ns})
	}
	return out
}

// foldedText is a stack as "name (file:line);..." outermost first.
func (t *codeTables) foldedText(stack int32) string {
	parts := make([]string, 0, len(t.stacks[stack]))
	for _, f := range t.stacks[stack] {
		parts = append(parts, FrameLabel(t.frames[f]))
	}
	return strings.Join(parts, ";")
}

// FrameLabel is a frame as flame graphs name it: "name (file:line)", with
// the characters folded stacks reserve (";" and newlines) replaced.
func FrameLabel(f CodeFrame) string {
	s := f.Name
	if f.File != "" {
		s = fmt.Sprintf("%s (%s:%d)", f.Name, f.File, f.Line)
	}
	return strings.NewReplacer(";", ",", "\n", " ", "\r", " ").Replace(s)
}
