package summary

import (
	"slices"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// endInputs are in (the whole run's inputs) made to judge the run's end
// against its first minutes, as the live view judges its window against
// the run's start: the newest VerdictWindow of the recent steps that
// started after the baseline, against the baseline the timeline gives;
// ok is false when the file lacks either.
func (s *Script) endInputs(in verdict.Inputs) (verdict.Inputs, bool) {
	base := s.baseline()
	if base == nil || s.Recent == nil || len(s.Recent.Steps) == 0 {
		return in, false
	}
	last := s.Recent.Steps[len(s.Recent.Steps)-1]
	if len(last) < 3 {
		return in, false
	}
	end, ok := s.Recent.summarize(max(base.LastEndNs, last[2]-int64(VerdictWindow)))
	if !ok {
		return in, false
	}
	in.Summary, in.Baseline = end, base
	return in, true
}

// baseline is the means of the run's first minutes from its timeline, as
// the live view's baseline: from the first point past the warm-up
// (verdict.BaselineSkip steps) to the last point within
// verdict.BaselineNs of it and within the first third of the run; nil
// when the timeline holds no such span.
func (s *Script) baseline() *stage.Summary {
	tl := s.Timeline
	i := slices.IndexFunc(tl, func(p TimePoint) bool { return p.Steps >= verdict.BaselineSkip })
	if i < 0 {
		return nil
	}
	from := tl[i]
	limit := min(int64(verdict.BaselineNs), (s.EndNs-from.T)/3)
	to := from
	for _, p := range tl[i+1:] {
		if p.T-from.T > limit {
			break
		}
		to = p
	}
	n, wall := to.Steps-from.Steps, to.WallNs-from.WallNs
	if n <= 0 || wall <= 0 {
		return nil
	}
	b := &stage.Summary{Steps: int(n), SpanNs: to.T - from.T, WallMean: float64(wall) / float64(n), LastEndNs: to.T, LastStep: to.Steps - 1}
	for _, st := range s.Stages {
		d := float64(to.Stages[st.Name] - from.Stages[st.Name])
		b.Stages = append(b.Stages, stage.StageStat{Name: st.Name, Mean: d / float64(n), Share: d / float64(wall)})
	}
	return b
}
