// Package judge is the one place a verdict's inputs are built: every
// window a verdict is given on (the live view's window at each refresh, a
// remote rank's, each of a recording's windows over time, a recording's
// whole run, the whole run of a process pipetop run started) is a Window,
// and Inputs turns it into the verdict.Inputs the rules read. A new input
// is a field of Window and one line of Inputs; what fills it is the
// source's, and live, recorded and end-of-run verdicts cannot read it
// differently. Verdict judges a window of a recording or of a whole run
// (the live view judges a refresh's windows at once, verdict.JudgeRun).
package judge

import (
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// EndWindow is the span of steps at the end of a whole run that is judged
// against the run's first minutes for drift, as the live view judges its
// window at the run's end; the verdicts of a recording over time each
// cover as much (pipetop export's default window).
const EndWindow = 30 * time.Second

// Window is what a verdict is given on: a window of one trainer's steps
// and what was read beside them. Only Summary is required.
type Window struct {
	// Summary summarizes the window's steps.
	Summary stage.Summary
	// Loader is the loader's latest statistics; Progress the latest
	// in-flight step; Code the profile of the window's stack samples. Nil
	// when unknown.
	Loader   *stage.LoaderStats
	Progress *stage.Progress
	Code     *stage.CodeProfile
	// Host is what was read of the machine around the trainer; nil when
	// unknown.
	Host *verdict.Host
	// RSS is the trainer's resident memory over the end of a whole run
	// (what pipetop run kept of the live view's readings): judged for
	// memory creep as the live view judges its own history. Empty for a
	// live window, whose Host carries its history.
	RSS verdict.Series
	// Ranks are every rank's window summaries, for the straggler and
	// stopped-rank rules; nil for a single process or a rank judged on its
	// own.
	Ranks []verdict.RankSummary
	// Measured is pipetop tune's measured advice for the trainer's
	// script; nil when there is none.
	Measured *verdict.Measured
	// Baseline is the run's first minutes (verdict.Baseline.At), for
	// drift; BaselineFirst the number of the first step it saw.
	Baseline      *stage.Summary
	BaselineFirst int64
	// Live says the trainer is connected; NowNs is the clock (0 turns the
	// time rules off) and StartNs when the trainer started.
	Live           bool
	NowNs, StartNs int64
	// End, for a window of a recording or a whole run, summarizes its
	// steps since EndFrom: what the drift rule judges against Baseline
	// (the window itself may hold the baseline: the whole run, a short
	// run's windows), and whose drift outranks the window's verdict as it
	// would the live view's (verdict.WithDrift). Nil for a live window.
	End *stage.Summary
}

// Inputs are the verdict inputs of w. The training thread's intra-op
// pool size that the stack samples report (torch.get_num_threads()) names
// that pool among the threads the host readings hold.
func Inputs(w Window) verdict.Inputs {
	host := w.Host
	if host != nil && host.CPU != nil && w.Code != nil && w.Code.IntraOpThreads > 0 && host.CPU.IntraOpThreads != w.Code.IntraOpThreads {
		h, c := *host, *host.CPU
		c.IntraOpThreads = w.Code.IntraOpThreads
		h.CPU = &c
		host = &h
	}
	if len(w.RSS.TimeNs) > 0 {
		h := verdict.Host{}
		if host != nil {
			h = *host
		}
		h.RSS = w.RSS
		host = &h
	}
	return verdict.Inputs{Summary: w.Summary, Loader: w.Loader, Progress: w.Progress, Code: w.Code, Host: host,
		Ranks: w.Ranks, Measured: w.Measured, Baseline: w.Baseline, BaselineFirst: w.BaselineFirst,
		Live: w.Live, NowNs: w.NowNs, StartNs: w.StartNs}
}

// Verdict judges w: a window of a recording, or a whole run, whose end's
// drift outranks its verdict as Judge ranks a live window's findings.
func Verdict(w Window) verdict.Verdict {
	in := Inputs(w)
	v := verdict.Judge(in)
	if w.End != nil && w.Baseline != nil {
		end := in
		end.Summary = *w.End
		v = verdict.WithDrift(v, end)
	}
	return v
}

// EndFrom is when the end of a whole run that ended at lastEndNs begins
// (Window.End: its steps that started then or later): its last EndWindow,
// and after its baseline's last step ended (a step that began as that one
// ended would join the two, which the drift rule refuses).
func EndFrom(lastEndNs int64, base *stage.Summary) int64 {
	from := lastEndNs - int64(EndWindow)
	if base != nil {
		from = max(from, base.LastEndNs+1)
	}
	return from
}
