package verdict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// AlsoShare: a cost of at least this share of the run's time is named
// beside the verdict ("also: ...") even when another kind wins.
const AlsoShare = 0.10

// Cost is a cost of the run named beside the verdict: a stage outside the
// network (a pause every N steps, evaluation, preprocessing, untimed work,
// waiting for data or for other ranks) that takes AlsoShare of the run's
// time or more, or a finding of a rule that did not win and that costs the
// run whatever its share (memory creep, a thread holding the GIL).
type Cost struct {
	Kind  Kind   `json:"kind"`
	Stage string `json:"stage,omitempty"`
	// Share is the cost's share of the run's time; 0 for a finding that
	// is not a time (memory creep).
	Share float64 `json:"share,omitempty"`
	Text  string  `json:"text"`
}

// alsoStages are the stages outside the network whose time is a cost of
// its own, in the order they are named at an equal share.
var alsoStages = []string{stage.Other, stage.Eval, stage.Preprocess, stage.DataWait, stage.Sync, stage.Comm}

// Also is the costs of the run named beside v: each of alsoStages that
// takes AlsoShare of the steps' time or more, and the memory and GIL
// findings, but never the stage or the kind v names itself; none while
// the run is starting, warming up, stalled or a rank stopped (no shares to
// speak of).
func Also(in *Inputs, v Verdict) []Cost {
	switch v.Kind {
	case Starting, WarmingUp, Stalled, RankStopped:
		return nil
	}
	s := in.Summary
	if s.Steps < MinSteps || s.WallMean <= 0 {
		return nil
	}
	var out []Cost
	for _, name := range alsoStages {
		if name == v.Stage || (name == stage.Comm && v.Kind == Straggler) {
			continue
		}
		if c, ok := stageCost(in, name); ok {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Cost) int { return cmp.Compare(b.Share, a.Share) })
	if m, ok := memoryRule(in); ok && m.Kind != v.Kind {
		out = append(out, Cost{Kind: m.Kind, Text: m.Headline})
	}
	if g, ok := gilRule(in); ok && v.Kind != GILBound {
		out = append(out, Cost{Kind: GILBound, Text: strings.TrimPrefix(g.Headline, "gil-bound: ")})
	}
	return out
}

// stageCost is the cost of stage name in the window: a pause every N
// steps that takes AlsoShare of the run's time, else the stage's mean
// share when it is AlsoShare or more.
func stageCost(in *Inputs, name string) (Cost, bool) {
	s := &in.Summary
	st := s.Stage(name)
	if st == nil {
		return Cost{}, false
	}
	c := Cost{Kind: costKind(name), Stage: name}
	if p := s.PauseOf(name); periodic(p) && p.RunShare(s.WallMean) >= AlsoShare {
		c.Share = p.RunShare(s.WallMean)
		what, hot, of := pauseWhat(in, name)
		c.Text = fmt.Sprintf("%s every %d steps, %s, %s of the run", what, p.Period, units.Dur(p.EachNs()), units.Pct(c.Share))
		if hot != nil {
			share, where := phraseParts(hot)
			c.Text += fmt.Sprintf("; %s of %s %s", units.Pct(share), of, where)
		}
		if name == stage.Eval {
			c.Kind = StageBound
		}
		return c, true
	}
	if st.Share < AlsoShare {
		return Cost{}, false
	}
	c.Share = st.Share
	c.Text = fmt.Sprintf("%s %s of each step (%s)", stageWhat(name), units.Pct(st.Share), units.Dur(st.Mean))
	if g := in.Code.Group(stage.RoleTrain, name); name != stage.DataWait && g != nil && g.Hot != nil {
		c.Text += ", " + Phrase(g.Hot)
	}
	if name == stage.DataWait && in.Loader != nil {
		if advice, ok := tripAdvice(in.Loader); ok {
			c.Text += ": " + advice
		}
	}
	return c, true
}

// pauseWhat names what pauses every N steps in stage name: the library
// call that writes a checkpoint (`torch.save`) when the pauses' stack
// samples have one on their hot path; else the stage's work, with the
// hot spot of the samples it read when they have one (the user's
// function that saves, when its time goes to a rename or a write the
// samples show no library call for) and what those samples are: "each
// pause" when the pauses' own could be told from the rest, else "its
// samples" (all of the stage's).
func pauseWhat(in *Inputs, name string) (string, *stage.HotSpot, string) {
	if name != stage.Other {
		return stageWhat(name), nil, ""
	}
	g, of := in.Code.Pause(stage.Other), "each pause"
	if g == nil {
		g, of = in.Code.Group(stage.RoleTrain, stage.Other), "its samples"
	}
	if call, _ := checkpointCall(g); call != nil {
		return callName(call.CodeFrame), nil, ""
	}
	if g != nil {
		return stageWhat(name), g.Hot, of
	}
	return stageWhat(name), nil, ""
}

// stageWhat says what a stage outside the network is, in a cost.
func stageWhat(name string) string {
	switch name {
	case stage.Other:
		return "untimed work (other)"
	case stage.Eval:
		return "evaluation"
	case stage.Preprocess:
		return "preprocessing on the training thread"
	case stage.DataWait:
		return "waiting for data (data_wait)"
	case stage.Sync:
		return "reading results back (sync)"
	case stage.Comm:
		return "waiting for the other ranks (comm)"
	}
	return name
}

// costKind is the kind whose rule names stage name when it wins.
func costKind(name string) Kind {
	switch name {
	case stage.Other:
		return Untimed
	case stage.Preprocess:
		return PreprocessBound
	case stage.DataWait:
		return ModerateInput
	case stage.Sync:
		return SyncBound
	}
	return StageBound
}

// callName names a library call as its user writes it: "`torch.save`".
func callName(f stage.CodeFrame) string {
	name := f.Name
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	if f.Lib == "" {
		return "`" + name + "`"
	}
	return "`" + f.Lib + "." + name + "`"
}

// AlsoText is the costs as one phrase: "`torch.save` every 25 steps,
// 170 ms, 14 % of the run; evaluation 12 % of each step (9.0 ms)".
func AlsoText(cs []Cost) string {
	texts := make([]string, len(cs))
	for i, c := range cs {
		texts[i] = c.Text
	}
	return strings.Join(texts, "; ")
}
