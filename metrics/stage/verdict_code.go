package stage

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/units"
)

// inputCode is the code the input's time goes to, for an input verdict's
// headline: the workers' hot spot, or the training thread's in data_wait
// when batches load on it (no workers); "" when none dominates.
func inputCode(code *CodeProfile, l *LoaderStats) string {
	if l != nil && l.Workers > 0 {
		if g := code.Group(RoleWorker, ""); g != nil && g.Hot != nil {
			return "; workers spend " + g.Hot.Phrase()
		}
		return ""
	}
	if g := code.Group(RoleTrain, DataWait); g != nil && g.Hot != nil {
		return "; data_wait spends " + g.Hot.Phrase()
	}
	return ""
}

// untimed is the verdict for a step whose time is mostly outside every
// stage; with stack samples it names the function that time goes to.
func untimed(s Summary, share float64, code *CodeProfile) Verdict {
	v := Verdict{Kind: Untimed, Stage: Other,
		Headline: fmt.Sprintf("untimed work: %s of each step (%s) is outside every stage", units.Pct(share), units.Dur(s.Stage(Other).Mean)),
		Next:     "wrap the missing work in a stage span to see what it is"}
	if g := code.Group(RoleTrain, Other); g != nil && g.Hot != nil {
		h := g.Hot
		share, where := h.Where()
		v.Headline += fmt.Sprintf("; %s of it %s", units.Pct(share), where)
		v.Next = fmt.Sprintf("make %s cheaper or call it less often (every N steps); it runs on the training thread between the timed stages", h.Culprit())
	}
	return v
}

// Phrase says where the time goes: "95 % under zarr `Array.__getitem__`
// (innermost zarr `Array._chunk_getitem`, 91 %), called from
// `ZDS.__getitem__` at ds.py:9" when a library call holds it, "90 % in
// `log_metrics` at train.py:88" when the user's function does.
func (h *HotSpot) Phrase() string {
	share, where := h.Where()
	return units.Pct(share) + " " + where
}

// Where is Phrase in two parts: the share of the group's time and where it
// goes ("under ...", "in ...").
func (h *HotSpot) Where() (share float64, where string) {
	if c := h.Calls; c != nil {
		s := "under " + funcText(c.CodeFrame)
		if l := h.Leaf; l != nil {
			s += fmt.Sprintf(" (innermost %s, %s)", funcText(l.CodeFrame), units.Pct(l.Share))
		}
		return c.Share, s + ", called from " + h.at()
	}
	if h.LineShare >= HotShare {
		return h.LineShare, "in " + h.at()
	}
	return h.Share, fmt.Sprintf("in `%s` (%s)", userName(h.User.Name), h.User.File)
}

// Culprit names the user's function, with its line when one holds most of
// its time.
func (h *HotSpot) Culprit() string {
	if h.LineShare >= HotShare {
		return h.at()
	}
	return fmt.Sprintf("`%s` (%s)", userName(h.User.Name), h.User.File)
}

// at is the user's function at its heaviest line: "`f` at file:line".
func (h *HotSpot) at() string {
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
func funcText(f CodeFrame) string {
	if f.Lib == "" {
		return "`" + f.Name + "`"
	}
	return f.Lib + " `" + f.Name + "`"
}
