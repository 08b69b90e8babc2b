package verdict

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// inputCode is the code the input's time goes to, for an input verdict's
// headline: the workers' hot spot, or the training thread's in data_wait
// when batches load on it (no workers); "" when none dominates.
func inputCode(code *stage.CodeProfile, l *stage.LoaderStats) string {
	if l != nil && l.Workers > 0 {
		if g := code.Group(stage.RoleWorker, ""); g != nil && g.Hot != nil {
			return "; workers spend " + Phrase(g.Hot)
		}
		return ""
	}
	if g := code.Group(stage.RoleTrain, stage.DataWait); g != nil && g.Hot != nil {
		return "; data_wait spends " + Phrase(g.Hot)
	}
	return ""
}

// stallCode is inputCode for stalls: with workers, their samples in the
// fetches far slower than their usual ones (what the stalls wait for);
// without, the training thread's own samples in stalls that recur (p
// periodic) when they can be told from the rest of the steps; else
// inputCode.
func stallCode(code *stage.CodeProfile, l *stage.LoaderStats, p *stage.WaitPattern) string {
	if g := slowFetches(code, l); g != nil {
		return "; in the slow fetches, workers spend " + Phrase(g.Hot)
	}
	if g := code.Pause(stage.DataWait); periodic(p) && (l == nil || l.Workers == 0) && g != nil && g.Hot != nil {
		return "; in the stalls, data_wait spends " + Phrase(g.Hot)
	}
	return inputCode(code, l)
}

// slowFetches is the workers' samples in their slow fetches when they
// have a hot spot; nil without workers or such samples.
func slowFetches(code *stage.CodeProfile, l *stage.LoaderStats) *stage.CodeGroup {
	if l == nil || l.Workers == 0 {
		return nil
	}
	if g := code.Group(stage.RoleWorker, stage.SlowFetch); g != nil && g.Hot != nil {
		return g
	}
	return nil
}

// untimed is the verdict for a step whose time is mostly outside every
// stage; with stack samples it names the function that time goes to (in
// a pause every N steps, the pauses' own samples when they can be told
// from the rest), and a pause under a file write is a checkpoint.
func untimed(s stage.Summary, share float64, code *stage.CodeProfile, host *Host) Verdict {
	v := Verdict{Kind: Untimed, Stage: stage.Other,
		Headline: fmt.Sprintf("untimed work: %s of each step (%s) is outside every stage", units.Pct(share), units.Dur(s.Stage(stage.Other).Mean)),
		Next:     "wrap the missing work in a stage span to see what it is"}
	p := s.PauseOf(stage.Other)
	if periodic(p) {
		v.Headline = fmt.Sprintf("untimed work outside every stage: %s (%s of each step on average)", pauseText(p, s), units.Dur(s.Stage(stage.Other).Mean))
		v.Next = fmt.Sprintf("find what the loop does every %d steps between the timed stages (a checkpoint, an evaluation, a log flush) and wrap it in a stage span", p.Period)
	}
	g, of := code.Group(stage.RoleTrain, stage.Other), "of it"
	if pg := code.Pause(stage.Other); periodic(p) && pg != nil && pg.Hot != nil {
		g, of = pg, "of each pause"
	}
	if g == nil || g.Hot == nil {
		return v
	}
	h := g.Hot
	hs, where := phraseParts(h)
	v.Headline += fmt.Sprintf("; %s %s %s", units.Pct(hs), of, where)
	v.Next = fmt.Sprintf("make %s cheaper or call it less often (every N steps); it runs on the training thread between the timed stages", culprit(h))
	if !periodic(p) {
		return v
	}
	if call, what := checkpointCall(g); call != nil {
		v.Next = checkpointNext(what, call, h, p, s, host)
	} else {
		v.Next = fmt.Sprintf("make %s cheaper or call it less often than every %d steps; it runs on the training thread between the timed stages", culprit(h), p.Period)
	}
	return v
}

// Phrase says where a hot spot's time goes: "95 % under zarr
// `Array.__getitem__` (innermost zarr `Array._chunk_getitem`, 91 %), called
// from `ZDS.__getitem__` at ds.py:9" when a library call holds it, "90 % in
// `log_metrics` at train.py:88" when the user's function does. The input
// and untimed verdicts, the hot code pane and the summaries all word it so.
func Phrase(h *stage.HotSpot) string {
	share, where := phraseParts(h)
	return units.Pct(share) + " " + where
}

// phraseParts is Phrase in two parts: the share of the group's time and
// where it goes ("under ...", "in ...").
func phraseParts(h *stage.HotSpot) (share float64, where string) {
	if c := h.Calls; c != nil {
		s := "under " + funcText(c.CodeFrame)
		if l := h.Leaf; l != nil {
			s += fmt.Sprintf(" (innermost %s, %s)", funcText(l.CodeFrame), units.Pct(l.Share))
		}
		return c.Share, s + ", called from " + at(h)
	}
	if h.LineShare >= stage.HotShare {
		return h.LineShare, "in " + at(h)
	}
	return h.Share, fmt.Sprintf("in `%s` (%s)", userName(h.User.Name), h.User.File)
}

// culprit names the user's function of h, with its line when one holds
// most of its time.
func culprit(h *stage.HotSpot) string {
	if h.LineShare >= stage.HotShare {
		return at(h)
	}
	return fmt.Sprintf("`%s` (%s)", userName(h.User.Name), h.User.File)
}

// at is the user's function of h at its heaviest line: "`f` at
// file:line".
func at(h *stage.HotSpot) string {
	return fmt.Sprintf("`%s` at %s:%d", userName(h.User.Name), h.User.File, h.User.Line)
}

// userName names a function as its author wrote it: a comprehension or
// generator expression (a function of its own before Python 3.12) by the
// function it is written in.
func userName(name string) string {
	for _, inner := range []string{".<locals>.<listcomp>", ".<locals>.<dictcomp>", ".<locals>.<setcomp>", ".<locals>.<genexpr>"} {
		if outer, ok := strings.CutSuffix(name, inner); ok {
			return outer
		}
	}
	return name
}

// funcText names a library function: "zarr `Array.__getitem__`".
func funcText(f stage.CodeFrame) string {
	if f.Lib == "" {
		return "`" + f.Name + "`"
	}
	return f.Lib + " `" + f.Name + "`"
}
