package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pipetop/pipetop/metrics/verdict"
)

// WriteTable prints the report: the bisect's verdict and its loader
// phase's statistics and sources, what was tuned and why, every trial, the confirmation's candidates and the advice.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "tune: %s\n", strings.Join(r.Command, " "))
	verdict.WriteWrapped(w, "bisect:  ", r.Bisect.Verdict.Headline)
	r.Bisect.WriteLoader(w)
	verdict.WriteWrapped(w, "tuned:   ", r.Reason)
	if d := r.DataLoader; d != nil {
		fmt.Fprintf(w, "the training DataLoader, made at %s: %s\n", d.Site, r.Baseline)
	}
	width := r.settingWidth()
	if len(r.Trials) > 0 {
		fmt.Fprintf(w, "\n%-8s %-*s %10s %5s %8s\n", "trial", width, "setting", "samples/s", "cores", "peak RSS")
		for i, tr := range r.Trials {
			fmt.Fprintln(w, tr.row(i+1, width))
		}
	}
	if len(r.Candidates) > 0 {
		fmt.Fprintf(w, "\nconfirmed in full runs, alternating (median, min-max of %d runs each):\n", r.Candidates[0].Runs)
		for _, c := range r.Candidates {
			fmt.Fprintln(w, c.row(width))
		}
	}
	r.writeAdvice(w)
}

// settingWidth is the widest setting's length, for the columns.
func (r *Report) settingWidth() int {
	n := len("setting")
	for _, tr := range r.Trials {
		n = max(n, len(tr.Setting.String()))
	}
	return n
}

// row is a trial's line, its setting in width columns.
func (tr Trial) row(n, width int) string {
	phase := tr.Phase
	if tr.Confirm {
		phase += "*"
	}
	rate := "-"
	if tr.SamplesPerSec > 0 {
		rate = fmt.Sprintf("%.1f", tr.SamplesPerSec)
	}
	line := fmt.Sprintf("%-3d %-4s %-*s %10s %5.1f %8s", n, short(phase), width, tr.Setting, rate, tr.CPUCores, mb(tr.PeakRSS))
	if tr.Status != verdict.PhaseOK && tr.Status != verdict.PhaseShort {
		note := tr.Status
		if len(tr.Notes) > 0 {
			note += ": " + tr.Notes[0]
		}
		line += "  " + note
	}
	return line
}

// short is a trial's phase in four columns.
func short(phase string) string {
	if len(phase) > 4 {
		return phase[:4]
	}
	return phase
}

// row is a candidate's line, its setting in width columns.
func (c Candidate) row(width int) string {
	tag := ""
	if c.Baseline {
		tag = "  (own)"
	}
	return fmt.Sprintf("  %-*s %8.1f  %.1f-%.1f  %4.1f cores %8s%s", width+5, c.Setting, c.Median, c.Min, c.Max, c.CPUCores, mb(c.PeakRSS), tag)
}

// mb is bytes in MB, "-" for none.
func mb(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MB", float64(b)/1e6)
}

// writeAdvice prints the winner and the change, or the best setting the
// budget left unconfirmed.
func (r *Report) writeAdvice(w io.Writer) {
	fmt.Fprintln(w)
	won := r.Winner != nil && !r.Winner.Baseline
	switch {
	case r.Failed:
		verdict.WriteWrapped(w, "advice:  ", "none: "+r.Reason+"; "+r.Bisect.Verdict.Next)
	case r.Tuned == "":
		verdict.WriteWrapped(w, "advice:  ", "keep the pipeline as it is: "+r.Reason+"; "+r.Bisect.Verdict.Next)
	case won:
		verdict.WriteWrapped(w, "advice:  ", fmt.Sprintf("%s: %.2fx the script's own samples/s (the medians of their full runs)", r.Winner.Setting, r.SpeedUp))
		for _, c := range r.Change {
			verdict.WriteWrapped(w, "change:  ", c)
		}
		verdict.WriteWrapped(w, "try it:  ", "pipetop run --apply tune.json -- "+strings.Join(r.Command, " ")+" (with the report saved as tune.json)")
	case r.Unconfirmed != nil:
	case r.Winner == nil:
		verdict.WriteWrapped(w, "advice:  ", r.noWinner()+"; see the trials above")
	default:
		verdict.WriteWrapped(w, "advice:  ", "keep the script's settings: no setting tried beat them beyond the noise of the runs")
	}
	if u := r.Unconfirmed; u != nil {
		label := "advice:  "
		if won {
			label = "also:    "
		}
		verdict.WriteWrapped(w, label, u.Words())
	}
	if r.NoEffect() {
		verdict.WriteWrapped(w, "note:    ", "no setting changed the loader's samples/s by 5 % or more: the script may not use them (an IterableDataset that shards by worker itself, a custom sampler or batch_sampler)")
	}
	if r.OutOfBudget {
		fmt.Fprintln(w, "the budget ran out: the best so far is advised")
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the trials so far")
	}
}

// NoEffect is whether the loader trials (two or more with figures) all
// delivered within Rising of each other: the settings made no difference.
func (r *Report) NoEffect() bool {
	lo, hi, n := 0.0, 0.0, 0
	for _, tr := range r.Trials {
		if tr.Phase != verdict.PhaseLoader || tr.SamplesPerSec <= 0 {
			continue
		}
		if n == 0 || tr.SamplesPerSec < lo {
			lo = tr.SamplesPerSec
		}
		hi = max(hi, tr.SamplesPerSec)
		n++
	}
	return n >= 2 && hi < Rising*lo
}

// ReadReport reads a pipetop tune --json file.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("%s: not a tune report: %w", path, err)
	}
	if r.Schema != Schema {
		return Report{}, fmt.Errorf("%s: schema %q, want %q (a pipetop tune --json file)", path, r.Schema, Schema)
	}
	return r, nil
}

// Words is the unconfirmed setting in a sentence: its trial's figure
// beside the baseline's, that no full run confirmed it, and how to.
func (u *Unconfirmed) Words() string {
	return fmt.Sprintf("%s: %.1f samples/s in a %s trial, %.1fx the script's own %.1f — unconfirmed: the budget left no time to confirm it in full runs; confirm it with `%s`",
		u.Setting, u.SamplesPerSec, u.Phase, u.SamplesPerSec/u.BaselineSamplesPerSec, u.BaselineSamplesPerSec, u.Confirm)
}
