package bisect

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// CompareSchema tags the JSON of pipetop compare of two bisect reports.
const CompareSchema = "pipetop-bisect-compare/1"

// StatusAbsent is a phase's status in a report that lacks it.
const StatusAbsent = "absent"

// Comparison is pipetop compare of two bisect reports: every phase present
// in either, side by side, and both verdicts. Its JSON is pipetop compare
// --json of two bisect files.
type Comparison struct {
	Schema string        `json:"schema"`
	A      Side          `json:"a"`
	B      Side          `json:"b"`
	Phases []PhaseChange `json:"phases"`
	// Gate is the decision of --fail-if-slower; absent without it.
	Gate *Gate `json:"gate,omitempty"`
}

// Side is one of the two reports compared.
type Side struct {
	// File is the file the report was read from (set by the caller).
	File            string          `json:"file"`
	Command         []string        `json:"command"`
	Host            string          `json:"host"`
	Started         time.Time       `json:"started"`
	SecondsPerPhase float64         `json:"seconds_per_phase"`
	Verdict         verdict.Verdict `json:"verdict"`
}

// PhaseChange is one phase in A and in B.
type PhaseChange struct {
	Phase string `json:"phase"`
	// StatusA and StatusB are the phase's status in each report
	// (verdict.PhaseOK ...; StatusAbsent when the report lacks it).
	StatusA string `json:"status_a"`
	StatusB string `json:"status_b"`
	// BatchA and BatchB are the batch sizes; 0 when absent or unknown.
	BatchA int `json:"batch_a"`
	BatchB int `json:"batch_b"`
	// SamplesPerSecA and SamplesPerSecB are the phase's samples/s; 0 when
	// it has no figures (failed, skipped, absent).
	SamplesPerSecA float64 `json:"samples_per_sec_a"`
	SamplesPerSecB float64 `json:"samples_per_sec_b"`
	// Ratio is SamplesPerSecB / SamplesPerSecA; nil unless both reports
	// measured the phase.
	Ratio *float64 `json:"ratio"`
	// StatusChanged is whether StatusA and StatusB differ.
	StatusChanged bool `json:"status_changed"`
}

// Compare compares two bisect reports, phase by phase: A's phases in its
// order, then those only B has.
func Compare(a, b Report) Comparison {
	c := Comparison{Schema: CompareSchema, A: side(a), B: side(b)}
	for _, name := range phaseNames(a, b) {
		pa, pb := a.phase(name), b.phase(name)
		pc := PhaseChange{Phase: name, StatusA: status(pa), StatusB: status(pb)}
		pc.BatchA, pc.SamplesPerSecA = figures(pa)
		pc.BatchB, pc.SamplesPerSecB = figures(pb)
		if pc.SamplesPerSecA > 0 && pc.SamplesPerSecB > 0 {
			r := pc.SamplesPerSecB / pc.SamplesPerSecA
			pc.Ratio = &r
		}
		pc.StatusChanged = pc.StatusA != pc.StatusB
		c.Phases = append(c.Phases, pc)
	}
	return c
}

func side(r Report) Side {
	return Side{Command: r.Command, Host: r.Host, Started: r.Started, SecondsPerPhase: r.SecondsPerPhase, Verdict: r.Verdict}
}

// phaseNames are the names of a's phases, then b's that a lacks, each once.
func phaseNames(a, b Report) []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range append(append([]verdict.PhaseResult(nil), a.Phases...), b.Phases...) {
		if !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, p.Name)
		}
	}
	return names
}

// phase is the report's first phase called name; nil when it has none.
func (r *Report) phase(name string) *verdict.PhaseResult {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// status is p's status: StatusAbsent for none, PhaseOK for a phase that
// names none (pipetrain bisect's).
func status(p *verdict.PhaseResult) string {
	switch {
	case p == nil:
		return StatusAbsent
	case p.Status == "":
		return verdict.PhaseOK
	}
	return p.Status
}

// figures are p's batch size and samples/s; samples/s is 0 when p has no
// figures to compare.
func figures(p *verdict.PhaseResult) (int, float64) {
	if p == nil {
		return 0, 0
	}
	if !p.Measured() {
		return p.Batch, 0
	}
	return p.Batch, p.SamplesPerSec
}

// Gate is the decision of pipetop compare --fail-if-slower PCT on two
// bisect reports: B regressed when its full phase's samples/s is more than
// PCT % lower than A's, or its full phase has no figures (it failed). A
// bisect keeps no per-step spread, so there is no noise allowance.
type Gate struct {
	FailIfSlowerPct float64 `json:"fail_if_slower_pct"`
	Regressed       bool    `json:"regressed"`
	// SlowerPct is how much lower B's full samples/s is than A's, in % of
	// A's (negative: B is faster); 100 when B's full phase has no figures.
	SlowerPct float64 `json:"slower_pct"`
	Line      string  `json:"line"` // the decision in one line
}

// ErrNoFull is the error of a gate that has no full phase to judge.
var ErrNoFull = errors.New("no full phase to gate on")

// Judge decides whether B regressed by more than pct percent on the full
// phase's samples/s and sets c.Gate. It fails (ErrNoFull) when either
// report lacks the full phase, or A's has no figures: there is nothing to
// judge B against.
func (c *Comparison) Judge(pct float64) (Gate, error) {
	full := c.change(verdict.PhaseFull)
	switch {
	case full == nil || full.StatusA == StatusAbsent || full.StatusB == StatusAbsent:
		return Gate{}, fmt.Errorf("--fail-if-slower: A or B has no full phase: %w", ErrNoFull)
	case full.SamplesPerSecA <= 0:
		return Gate{}, fmt.Errorf("--fail-if-slower: A's full phase has no samples/s (%s): %w", full.StatusA, ErrNoFull)
	}
	g := Gate{FailIfSlowerPct: pct, SlowerPct: 100}
	a, b := full.SamplesPerSecA, full.SamplesPerSecB
	if b > 0 {
		g.SlowerPct = 100 * (a - b) / a
	}
	g.Regressed = g.SlowerPct > pct
	change := fmt.Sprintf("full phase samples/s %+.1f %% (%s → %s; no noise model)", 100*(b-a)/a, units.Rate(a), units.Rate(b))
	switch {
	case b <= 0:
		g.Line = fmt.Sprintf("REGRESSION: B's full phase has no samples/s (%s); A's ran at %s", full.StatusB, units.Rate(a))
	case g.Regressed:
		g.Line = fmt.Sprintf("REGRESSION: B is more than %g %% slower than A: %s", pct, change)
	default:
		g.Line = fmt.Sprintf("ok: B is not more than %g %% slower than A: %s", pct, change)
	}
	c.Gate = &g
	return g, nil
}

// change is the comparison of phase name; nil when neither report has it.
func (c *Comparison) change(name string) *PhaseChange {
	for i := range c.Phases {
		if c.Phases[i].Phase == name {
			return &c.Phases[i]
		}
	}
	return nil
}

// WriteText prints the comparison: both reports, each phase's samples/s
// in A and B, B/A and its status (A → B when it changed), then both
// verdicts' headlines.
func (c *Comparison) WriteText(w io.Writer) error {
	for _, s := range []struct {
		label string
		side  Side
	}{{"A", c.A}, {"B", c.B}} {
		fmt.Fprintf(w, "%s: %s  bisect of %s (%s, %s, %g s a phase)\n", s.label, s.side.File, strings.Join(s.side.Command, " "),
			s.side.Host, s.side.Started.UTC().Format("2006-01-02 15:04 UTC"), s.side.SecondsPerPhase)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tA samples/s\tB samples/s\tB/A\tstatus")
	for _, p := range c.Phases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Phase, rate(p.SamplesPerSecA), rate(p.SamplesPerSecB), ratio(p.Ratio), p.statusText())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	verdict.WriteWrapped(w, "verdict A: ", c.A.Verdict.Headline)
	verdict.WriteWrapped(w, "verdict B: ", c.B.Verdict.Headline)
	return nil
}

// rate is samples/s in the table; "-" for none.
func rate(x float64) string {
	if x <= 0 {
		return "-"
	}
	return units.Rate(x)
}

// ratio is B/A in the table; "-" for none.
func ratio(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *r)
}

// statusText is the phase's status, or both when it changed.
func (p PhaseChange) statusText() string {
	if p.StatusChanged {
		return p.StatusA + " → " + p.StatusB
	}
	return p.StatusA
}
