// Package flame writes stack samples (the stacks frames of a recording, or
// a run summary's) in the formats flame-graph viewers open: speedscope's
// JSON file format (one sampled profile per rank and role: the training
// thread, with the stage it was in as the outermost frame, and each
// DataLoader worker), and folded stacks, one "frame;frame;... count" line
// per stack, which flamegraph.pl, inferno and speedscope read.
package flame

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/pipetop/pipetop/metrics/stage"
)

// Samples is the stacks frames of one rank (nil for a single process).
type Samples struct {
	Rank   *int
	Frames []*stage.StackSamples
}

// SpeedscopeSchema is the schema URL speedscope files name.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// profile is one flame graph: a rank's role (and worker) with its stacks.
type profile struct {
	name   string
	order  [3]int // rank, role, worker: how profiles are sorted
	stacks map[string]*stack
	keys   []string // the stacks in the order first seen
}

// stack is one distinct stack of a profile: its frames (indices into the
// shared frame table) and what its samples add up to.
type stack struct {
	frames []int
	n, ns  int64
}

// table is the shared frames of a file.
type table struct {
	frames []stage.CodeFrame
	index  map[stage.CodeFrame]int
}

func (t *table) id(f stage.CodeFrame) int {
	if i, ok := t.index[f]; ok {
		return i
	}
	t.index[f] = len(t.frames)
	t.frames = append(t.frames, f)
	return len(t.frames) - 1
}

// fold gathers every row of every frame into profiles over one table.
func fold(all []Samples) (*table, []*profile) {
	t := &table{index: map[stage.CodeFrame]int{}}
	byName := map[string]*profile{}
	var out []*profile
	for _, s := range all {
		for _, fr := range s.Frames {
			for _, r := range fr.Rows {
				p := byName[profileName(s.Rank, r)]
				if p == nil {
					p = &profile{name: profileName(s.Rank, r), order: profileOrder(s.Rank, r), stacks: map[string]*stack{}}
					byName[p.name] = p
					out = append(out, p)
				}
				p.add(t, fr, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *profile) int {
		return cmp.Or(cmp.Compare(a.order[0], b.order[0]), cmp.Compare(a.order[1], b.order[1]), cmp.Compare(a.order[2], b.order[2]), cmp.Compare(a.name, b.name))
	})
	return t, out
}

// add counts row r of frame fr; the training thread's stage is its
// outermost frame, "[data_wait]".
func (p *profile) add(t *table, fr *stage.StackSamples, r stage.StackRow) {
	ids := make([]int, 0, len(r.Stack)+1)
	if r.Role == stage.RoleTrain && r.Stage != "" {
		ids = append(ids, t.id(stage.CodeFrame{Name: "[" + r.Stage + "]"}))
	}
	for _, j := range r.Stack {
		ids = append(ids, t.id(fr.Frames[j]))
	}
	key := fmt.Sprint(ids)
	s := p.stacks[key]
	if s == nil {
		s = &stack{frames: ids}
		p.stacks[key] = s
		p.keys = append(p.keys, key)
	}
	s.n += r.N
	s.ns += r.Ns
}

// profileName names the flame graph a row belongs to.
func profileName(rank *int, r stage.StackRow) string {
	name := r.Role
	switch {
	case r.Role == stage.RoleTrain:
		name = "training thread"
	case r.Role == stage.RoleWorker && r.Worker != nil:
		name = "worker " + strconv.Itoa(*r.Worker)
	}
	if rank != nil {
		name = fmt.Sprintf("rank %d · %s", *rank, name)
	}
	return name
}

func profileOrder(rank *int, r stage.StackRow) [3]int {
	o := [3]int{-1, 2, -1}
	if rank != nil {
		o[0] = *rank
	}
	switch r.Role {
	case stage.RoleTrain:
		o[1] = 0
	case stage.RoleWorker:
		o[1] = 1
	}
	if r.Worker != nil {
		o[2] = *r.Worker
	}
	return o
}

// speedscope is the file speedscope opens.
type speedscope struct {
	Schema             string           `json:"$schema"`
	Shared             shared           `json:"shared"`
	Profiles           []sampledProfile `json:"profiles"`
	Name               string           `json:"name,omitempty"`
	ActiveProfileIndex int              `json:"activeProfileIndex"`
	Exporter           string           `json:"exporter"`
}

type shared struct {
	Frames []ssFrame `json:"frames"`
}

type ssFrame struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

type sampledProfile struct {
	Type       string  `json:"type"`
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	StartValue int64   `json:"startValue"`
	EndValue   int64   `json:"endValue"`
	Samples    [][]int `json:"samples"`
	Weights    []int64 `json:"weights"`
}

// WriteSpeedscope writes every sample as a speedscope file named name: a
// sampled profile per rank and role, each distinct stack one sample
// weighted by the wall time its samples stand for (nanoseconds), so the
// weights add up to the samples' time.
func WriteSpeedscope(w io.Writer, name string, all []Samples) error {
	t, ps := fold(all)
	doc := speedscope{Schema: SpeedscopeSchema, Name: name, Exporter: "pipetop flame", Profiles: []sampledProfile{}}
	doc.Shared.Frames = make([]ssFrame, len(t.frames))
	for i, f := range t.frames {
		doc.Shared.Frames[i] = ssFrame{Name: frameName(f), File: f.File, Line: f.Line}
	}
	for _, p := range ps {
		sp := sampledProfile{Type: "sampled", Name: p.name, Unit: "nanoseconds", Samples: [][]int{}, Weights: []int64{}}
		for _, k := range p.keys {
			s := p.stacks[k]
			sp.Samples = append(sp.Samples, s.frames)
			sp.Weights = append(sp.Weights, s.ns)
			sp.EndValue += s.ns
		}
		doc.Profiles = append(doc.Profiles, sp)
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write speedscope: %w", err)
	}
	return nil
}

// frameName is a frame as a viewer lists it: "zarr Array.__getitem__" for
// a library's, the name alone for the user's code.
func frameName(f stage.CodeFrame) string {
	if f.Lib == "" || f.Lib == "(more)" {
		return f.Name
	}
	return f.Lib + " " + f.Name
}

// WriteFolded writes every stack as one folded line, "profile;frame;...
// count", outermost first, the count being its samples; frames read
// "name (file:line)".
func WriteFolded(w io.Writer, all []Samples) error {
	t, ps := fold(all)
	bw := bufio.NewWriter(w)
	for _, p := range ps {
		for _, k := range p.keys {
			s := p.stacks[k]
			if s.n == 0 {
				continue
			}
			bw.WriteString(stage.FrameLabel(stage.CodeFrame{Name: p.name}))
			for _, f := range s.frames {
				bw.WriteByte(';')
				bw.WriteString(stage.FrameLabel(t.frames[f]))
			}
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatInt(s.n, 10))
			bw.WriteByte('\n')
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write folded stacks: %w", err)
	}
	return nil
}
