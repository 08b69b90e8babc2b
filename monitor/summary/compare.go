package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/recording"
)

// Load reads a run from a recording or from a summary JSON file (what
// `pipetop summary --json` prints).
func Load(path string) (Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Run{}, fmt.Errorf("read run: %w", err)
	}
	if r, ok, err := fromPython(b, path); ok {
		return r, err
	}
	var r Run
	if json.Unmarshal(b, &r) == nil && r.Version > 0 {
		if r.Version != Version {
			return Run{}, fmt.Errorf("%s: summary version %d, this pipetop reads %d", path, r.Version, Version)
		}
		if r.Source == "" {
			r.Source = path
		}
		return r, nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) && !bytes.Contains(b[:min(len(b), 200)], []byte("pipetop_recording")) {
		return Run{}, fmt.Errorf("%s: neither a pipetop recording nor a summary (no summary_version)", path)
	}
	r, err = FromFile(path)
	if errors.Is(err, recording.ErrDamaged) {
		return r, nil
	}
	return r, err
}

// Change is a difference between two runs in one number.
type Change struct {
	Name        string  `json:"name"` // "step time" or a stage name
	A           float64 `json:"a"`    // step time: ns; a stage: its mean ns per step
	B           float64 `json:"b"`
	Delta       float64 `json:"delta"`       // B - A, ns
	Noise       float64 `json:"noise"`       // the smallest |Delta| the runs' spread makes meaningful, ns
	Significant bool    `json:"significant"` // |Delta| > Noise
	// Stages only: the share of the step in A and B, in points (0..100).
	ShareA float64 `json:"share_a,omitempty"`
	ShareB float64 `json:"share_b,omitempty"`
}

// Comparison is run B measured against run A.
type Comparison struct {
	A, B     string  `json:"-"`
	StepTime Change  `json:"step_time"` // mean step wall time, ns
	Relative float64 `json:"relative"`  // (B - A) / A of the step time
	// Throughput is samples/s (steps/s when either run's steps carry no
	// sample counts), as ThroughputUnit says; Delta and Noise in that unit.
	Throughput     Change   `json:"throughput"`
	ThroughputUnit string   `json:"throughput_unit"` // "samples/s" or "steps/s"
	Stages         []Change `json:"stages"`          // share of the step, in points
	Text           string   `json:"text"`
	// Gate is the decision of --fail-if-slower; absent without it.
	Gate *Gate `json:"gate,omitempty"`
}

// Gate is the regression decision of pipetop compare --fail-if-slower PCT:
// B regressed when its step time is more than PCT % longer than A's, or
// its throughput more than PCT % lower, and that difference is
// significant (larger than the runs' noise, Change.Noise).
type Gate struct {
	FailIfSlowerPct float64 `json:"fail_if_slower_pct"`
	Regressed       bool    `json:"regressed"`
	// Regressions names what regressed: "step time", "samples/s" or
	// "steps/s"; empty when nothing did.
	Regressions []string `json:"regressions"`
	// How much slower B is, in percent of A (negative: faster), and the
	// noise of each figure in the same percent.
	StepSlowerPct       float64 `json:"step_slower_pct"`
	StepNoisePct        float64 `json:"step_noise_pct"`
	ThroughputSlowerPct float64 `json:"throughput_slower_pct"`
	ThroughputNoisePct  float64 `json:"throughput_noise_pct"`
	Line                string  `json:"line"` // the decision in one line
}

// Thresholds of a significant difference.
const (
	// MinStepChange is the smallest step time change reported, whatever
	// the spread: a relative difference below it is noise on any machine.
	MinStepChange = 0.01
	// MinStagePart is the smallest change in a stage's time reported, as a
	// part of A's step time: a stage's share moves when another stage
	// grows, so significance is judged on its own time.
	MinStagePart = 0.02
	// DefaultSpread stands for the spread of a run too short to measure
	// one (fewer than 3 buckets).
	DefaultSpread = 0.05
)

// Compare measures b against a. A difference counts when it exceeds twice
// the standard error of the two runs' per-bucket means (and the minimums
// above).
func Compare(a, b Run) Comparison {
	c := Comparison{A: a.Source, B: b.Source}
	ma, sa := bucketStats(a, func(p Point) float64 { return p.WallMeanNs })
	mb, sb := bucketStats(b, func(p Point) float64 { return p.WallMeanNs })
	wa, wb := a.Whole.WallMean, b.Whole.WallMean
	if math.IsNaN(ma) || math.IsNaN(mb) {
		sa, sb = DefaultSpread*wa/2, DefaultSpread*wb/2
	}
	c.StepTime = change("step time", wa, wb, max(2*math.Hypot(sa, sb), MinStepChange*wa))
	if wa > 0 {
		c.Relative = (wb - wa) / wa
	}
	c.Throughput, c.ThroughputUnit = throughput(a, b)
	for _, name := range stageNames(a, b) {
		get := func(p Point) float64 { return p.Shares[name] * p.WallMeanNs }
		_, ssa := bucketStats(a, get)
		_, ssb := bucketStats(b, get)
		noise := MinStagePart * wa
		if !math.IsNaN(ssa) && !math.IsNaN(ssb) {
			noise = max(noise, 2*math.Hypot(ssa, ssb))
		}
		sc := change(name, mean(a, name), mean(b, name), noise)
		sc.ShareA, sc.ShareB = 100*share(a, name), 100*share(b, name)
		c.Stages = append(c.Stages, sc)
	}
	c.Text = c.describe()
	return c
}

// throughput compares the runs' samples/s, or steps/s when either run's
// steps carry no sample counts. The noise is that of the per-bucket rates
// but the last bucket's, which a run ends part of the way through.
func throughput(a, b Run) (Change, string) {
	unit := "samples/s"
	whole := func(r Run) float64 { return r.Whole.SamplesPerSec }
	get := func(p Point) float64 { return p.SamplesPerSec }
	if a.Whole.SamplesPerSec <= 0 || b.Whole.SamplesPerSec <= 0 {
		unit = "steps/s"
		whole = func(r Run) float64 { return r.Whole.StepsPerSec }
		get = func(p Point) float64 { return p.StepsPerSec }
	}
	cut := func(r Run) Run {
		r.Throughput = r.Throughput[:max(0, len(r.Throughput)-1)]
		return r
	}
	wa, wb := whole(a), whole(b)
	ma, sa := bucketStats(cut(a), get)
	mb, sb := bucketStats(cut(b), get)
	if math.IsNaN(ma) || math.IsNaN(mb) {
		sa, sb = DefaultSpread*wa/2, DefaultSpread*wb/2
	}
	return change(unit, wa, wb, max(2*math.Hypot(sa, sb), MinStepChange*wa)), unit
}

// Judge decides whether B regressed by more than pct percent (the gate of
// pipetop compare --fail-if-slower) and sets c.Gate.
func (c *Comparison) Judge(pct float64) Gate {
	g := Gate{FailIfSlowerPct: pct, Regressions: []string{}}
	st, tp := c.StepTime, c.Throughput
	if st.A > 0 {
		g.StepSlowerPct, g.StepNoisePct = 100*st.Delta/st.A, 100*st.Noise/st.A
	}
	if tp.A > 0 {
		g.ThroughputSlowerPct, g.ThroughputNoisePct = -100*tp.Delta/tp.A, 100*tp.Noise/tp.A
	}
	var what []string
	if st.Significant && g.StepSlowerPct > pct {
		g.Regressions = append(g.Regressions, "step time")
		what = append(what, fmt.Sprintf("step time %+.1f %% (%s → %s, noise ±%.1f %%)",
			g.StepSlowerPct, units.Dur(st.A), units.Dur(st.B), g.StepNoisePct))
	}
	if tp.Significant && g.ThroughputSlowerPct > pct {
		g.Regressions = append(g.Regressions, tp.Name)
		what = append(what, fmt.Sprintf("%s %+.1f %% (%s → %s, noise ±%.1f %%)",
			tp.Name, -g.ThroughputSlowerPct, units.Rate(tp.A), units.Rate(tp.B), g.ThroughputNoisePct))
	}
	g.Regressed = len(what) > 0
	if g.Regressed {
		g.Line = fmt.Sprintf("REGRESSION: B is more than %g %% slower than A: %s", pct, strings.Join(what, "; "))
	} else {
		g.Line = fmt.Sprintf("ok: B is not more than %g %% slower than A beyond the noise (step time %+.1f %% ±%.1f %%, %s %+.1f %% ±%.1f %%)",
			pct, g.StepSlowerPct, g.StepNoisePct, tp.Name, -g.ThroughputSlowerPct, g.ThroughputNoisePct)
	}
	c.Gate = &g
	return g
}

func change(name string, a, b, noise float64) Change {
	d := b - a
	return Change{Name: name, A: a, B: b, Delta: d, Noise: noise, Significant: math.Abs(d) > noise}
}

// bucketStats is the mean of get over the run's buckets with steps and the
// standard error of that mean; NaN for fewer than 3 buckets.
func bucketStats(r Run, get func(Point) float64) (mean, se float64) {
	var v []float64
	for _, p := range r.Throughput {
		if p.Steps > 0 {
			v = append(v, get(p))
		}
	}
	if len(v) < 3 {
		return math.NaN(), math.NaN()
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean = sum / float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(v)-1))
	return mean, sd / math.Sqrt(float64(len(v)))
}

func mean(r Run, name string) float64 {
	if st := r.Whole.Stage(name); st != nil {
		return st.Mean
	}
	return 0
}

func share(r Run, name string) float64 {
	if st := r.Whole.Stage(name); st != nil {
		return st.Share
	}
	return 0
}

// stageNames lists the stages of either run, a's order first.
func stageNames(a, b Run) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range []Run{a, b} {
		for _, st := range r.Whole.Stages {
			if !seen[st.Name] {
				seen[st.Name] = true
				names = append(names, st.Name)
			}
		}
	}
	return names
}

// describe says the difference in words: the step time first, then the
// stages that changed, largest first, then the largest that did not.
func (c Comparison) describe() string {
	st := c.StepTime
	if !st.Significant {
		if tp := c.Throughput; tp.Significant {
			return fmt.Sprintf("B runs %.1f %% %s %s (%s vs %s) though a step takes about as long (%s vs %s): the time between steps changed",
				100*math.Abs(tp.Delta)/max(tp.A, 1e-9), moreOrFewer(tp.Delta), tp.Name, units.Rate(tp.B), units.Rate(tp.A), units.Dur(st.B), units.Dur(st.A))
		}
		return fmt.Sprintf("no significant difference: a step takes %s in A and %s in B (%+.1f %%, within the runs' spread of ±%.1f %%)",
			units.Dur(st.A), units.Dur(st.B), 100*c.Relative, 100*st.Noise/max(st.A, 1))
	}
	word := "slower"
	if st.Delta < 0 {
		word = "faster"
	}
	head := fmt.Sprintf("B is %.1f %% %s per step (%s vs %s)", 100*math.Abs(c.Relative), word, units.Dur(st.B), units.Dur(st.A))
	if tp := c.Throughput; tp.Significant {
		head += fmt.Sprintf(", %.1f %% %s %s (%s vs %s)", 100*math.Abs(tp.Delta)/max(tp.A, 1e-9), moreOrFewer(tp.Delta), tp.Name, units.Rate(tp.B), units.Rate(tp.A))
	}
	changed, same := []Change{}, []Change{}
	for _, s := range c.Stages {
		if s.Significant {
			changed = append(changed, s)
		} else {
			same = append(same, s)
		}
	}
	sort.SliceStable(changed, func(i, j int) bool { return math.Abs(changed[i].Delta) > math.Abs(changed[j].Delta) })
	sort.SliceStable(same, func(i, j int) bool { return max(same[i].A, same[i].B) > max(same[j].A, same[j].B) })
	var parts []string
	for _, s := range changed {
		parts = append(parts, fmt.Sprintf("%s %+.1f points (%s → %s)", s.Name, s.ShareB-s.ShareA, units.Dur(s.A), units.Dur(s.B)))
	}
	for _, s := range same[:min(2, len(same))] {
		parts = append(parts, s.Name+" unchanged")
	}
	if len(parts) == 0 {
		return head
	}
	return head + ": " + strings.Join(parts, "; ")
}

// moreOrFewer is the word for a change in a rate.
func moreOrFewer(delta float64) string {
	if delta < 0 {
		return "fewer"
	}
	return "more"
}

// pythonSummary is the end-of-run summary the Python publisher writes
// (pipetop-summary-NAME-PID.json, docs/python.md).
type pythonSummary struct {
	Schema        string  `json:"schema"`
	Name          string  `json:"name"`
	PID           int     `json:"pid"`
	EndNs         int64   `json:"end_ns"`
	Steps         int     `json:"steps"`
	WallNs        int64   `json:"wall_ns"`
	StepMeanNs    float64 `json:"step_mean_ns"`
	StepsPerSec   float64 `json:"steps_per_sec"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Stages        []struct {
		Name   string  `json:"name"`
		MeanNs float64 `json:"mean_ns"`
		Share  float64 `json:"share"`
	} `json:"stages"`
	Verdict *verdict.Verdict `json:"verdict"`
}

// PythonSchema is the schema of the Python publisher's summary file.
const PythonSchema = "pipetop-summary/1"

// fromPython reads a Python end-of-run summary; ok is false for anything
// else. It has no buckets, so comparisons with it use DefaultSpread.
func fromPython(b []byte, path string) (r Run, ok bool, err error) {
	var p pythonSummary
	if json.Unmarshal(b, &p) != nil || !strings.HasPrefix(p.Schema, "pipetop-summary/") {
		return Run{}, false, nil
	}
	if p.Schema != PythonSchema {
		return Run{}, true, fmt.Errorf("%s: summary schema %q, this pipetop reads %q", path, p.Schema, PythonSchema)
	}
	r = Run{Version: Version, Name: p.Name, PID: p.PID, Source: path, DurationSec: float64(p.WallNs) / 1e9,
		StartNs: p.EndNs - p.WallNs, Throughput: []Point{}, Verdicts: []Period{}}
	r.Whole = stage.Summary{Steps: p.Steps, SpanNs: p.WallNs, WallMean: p.StepMeanNs,
		StepsPerSec: p.StepsPerSec, SamplesPerSec: p.SamplesPerSec}
	for _, st := range p.Stages {
		r.Whole.Stages = append(r.Whole.Stages, stage.StageStat{Name: st.Name, Mean: st.MeanNs, Share: st.Share})
	}
	if p.Verdict != nil {
		r.Verdict = *p.Verdict
	}
	return r, true, nil
}
