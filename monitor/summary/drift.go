package summary

import (
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/judge"
)

// withEnd gives w (the whole run's window) the run's first minutes and
// its end (judge.EndFrom) of the recent steps, which the drift rule judges
// against them as the live view judges its window at the run's end; w is
// left as it is when the file lacks either.
func (s *Script) withEnd(w *judge.Window) {
	r := s.Recent
	if r == nil || len(r.Steps) == 0 || len(r.Steps[len(r.Steps)-1]) < 3 {
		return
	}
	lastEnd := r.Steps[len(r.Steps)-1][2]
	base := s.baseline().At(lastEnd)
	if base == nil {
		return
	}
	end, ok := r.summarize(judge.EndFrom(lastEnd, base))
	if !ok {
		return
	}
	w.Baseline, w.BaselineFirst, w.End = base, 0, &end
}

// baseline is the run's first minutes from its timeline: each interval
// between two of its points counted as a span of steps
// (verdict.Baseline.AddSpan), so that the one baseline rule
// (verdict.Baseline.At) takes them as the live view takes its steps; nil
// without a timeline.
func (s *Script) baseline() *verdict.Baseline {
	tl := s.Timeline
	if len(tl) < 2 {
		return nil
	}
	names := make([]string, len(s.Stages))
	for k, st := range s.Stages {
		names[k] = st.Name
	}
	b := verdict.NewBaseline(names)
	cpu := make([]int64, len(names))
	for i := 1; i < len(tl); i++ {
		from, to := tl[i-1], tl[i]
		for k, name := range names {
			cpu[k] = to.Stages[name] - from.Stages[name]
		}
		b.AddSpan(from.Steps, to.Steps-from.Steps, from.T, to.T, to.WallNs-from.WallNs, cpu)
	}
	return b
}
