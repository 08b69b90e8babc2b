package summary

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
)

const ms = time.Millisecond

// run plants a 2-minute run: data_wait, forward, backward, other.
func run(seed uint64, dataWait time.Duration) rectest.Run {
	return rectest.Run{Name: "cmp", PID: 9, Start: time.Unix(1_800_000_000, 0), Steps: 6000,
		Stages: []string{stage.DataWait, stage.Forward, stage.Backward, stage.Other},
		Means:  []time.Duration{dataWait, 10 * ms, 6 * ms, 1 * ms}, Jitter: 0.3, Seed: seed}
}

func TestSummaryOfPlantedRun(t *testing.T) {
	r := FromEntries(run(1, 3*ms).Entries())
	if r.Whole.Steps != 6000 || r.Name != "cmp" || r.PID != 9 {
		t.Fatalf("summary %s", r.Describe())
	}
	if got := r.Whole.Stage(stage.Forward).Share; math.Abs(got-10.0/20) > 0.01 {
		t.Errorf("forward share %.3f, planted 0.50", got)
	}
	if math.Abs(r.DurationSec-120) > 1 || len(r.Throughput) < 50 || len(r.Throughput) > 70 {
		t.Errorf("%.1f s in %d buckets of %.0f s", r.DurationSec, len(r.Throughput), r.BucketSec)
	}
	if len(r.Verdicts) == 0 || r.Verdicts[len(r.Verdicts)-1].ToSec < 119 {
		t.Errorf("verdicts over time %+v", r.Verdicts)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6,000 steps", "forward", "verdict over the run:", "verdicts over time"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestVerdictsOverTime: a run that turns input-bound halfway says so, with
// the time it changed: drift in data_wait against its first minutes, as
// the live view says, over time and for the whole run.
func TestVerdictsOverTime(t *testing.T) {
	a := run(1, 1*ms)
	a.Steps = 3000
	es := a.Entries()
	b := run(2, 30*ms)
	b.Steps = 1000
	b.Start = es[len(es)-1].T
	for _, e := range b.Entries()[1:] { // same process: no second hello
		if e.Frame != nil {
			for i := range e.Frame.Steps {
				e.Frame.Steps[i].Step += 3000
			}
		}
		es = append(es, e)
	}
	r := FromEntries(es)
	last := r.Verdicts[len(r.Verdicts)-1]
	if last.Kind != verdict.Drift || last.Stage != stage.DataWait || last.FromSec < 50 || last.FromSec > 100 {
		t.Fatalf("verdicts %+v, want drift in data_wait from about 54 s", r.Verdicts)
	}
	if r.Verdict.Kind != verdict.Drift || !strings.Contains(r.Verdict.Headline, "data_wait grew from") {
		t.Errorf("whole run: %s, want drift in data_wait", r.Verdict)
	}
	if r.Verdicts[0].Kind == verdict.InputBound {
		t.Fatalf("first verdict %+v, want not input-bound", r.Verdicts[0])
	}
}

func TestComparePlantedStage(t *testing.T) {
	a := FromEntries(run(1, 3*ms).Entries())
	b := FromEntries(run(2, 9*ms).Entries())
	c := Compare(a, b)
	// Planted: data_wait 3 of 20 ms (15 %) against 9 of 26 ms (34.6 %).
	want := 100 * (9.0/26 - 3.0/20)
	var dw Change
	for _, s := range c.Stages {
		if s.Name == stage.DataWait {
			dw = s
		} else if s.Significant {
			t.Errorf("stage %s called changed: %+v", s.Name, s)
		}
	}
	if !dw.Significant || math.Abs(dw.ShareB-dw.ShareA-want) > 2 {
		t.Errorf("data_wait %+v, want a change of %.1f points", dw, want)
	}
	if !c.StepTime.Significant || math.Abs(c.Relative-0.30) > 0.02 {
		t.Errorf("step time %+v relative %.3f, want +30 %%", c.StepTime, c.Relative)
	}
	if !strings.Contains(c.Text, "% slower per step") || !strings.Contains(c.Text, "data_wait +19") || !strings.Contains(c.Text, "forward unchanged") {
		t.Errorf("text %q", c.Text)
	}
}

func TestCompareSameConfig(t *testing.T) {
	c := Compare(FromEntries(run(1, 3*ms).Entries()), FromEntries(run(7, 3*ms).Entries()))
	if c.StepTime.Significant || !strings.HasPrefix(c.Text, "no significant difference") {
		t.Errorf("same config: %+v\n%s", c.StepTime, c.Text)
	}
	for _, s := range c.Stages {
		if s.Significant {
			t.Errorf("stage %s called changed: %+v", s.Name, s)
		}
	}
}

// TestLoadPythonSummary: compare reads the Python publisher's end-of-run
// summary file.
func TestLoadPythonSummary(t *testing.T) {
	path := t.TempDir() + "/pipetop-summary-py-7.json"
	doc := `{"schema":"pipetop-summary/1","name":"py","pid":7,"argv":["train.py"],"end_ns":2000000000,
"steps":100,"samples":800,"wall_ns":1000000000,"step_mean_ns":10000000,"steps_per_sec":100,"samples_per_sec":800,
"stages":[{"name":"data_wait","total_ns":300000000,"mean_ns":3000000,"share":0.3},{"name":"forward","total_ns":700000000,"mean_ns":7000000,"share":0.7}],
"first_step":null,"loader":null,"verdict":{"kind":"input-bound","stage":"data_wait","headline":"input-bound: ...","next":"..."}}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "py" || r.Whole.Steps != 100 || r.Whole.Stage(stage.Forward).Share != 0.7 || r.Verdict.Kind != verdict.InputBound {
		t.Fatalf("loaded %+v", r)
	}
	os.WriteFile(path, []byte(`{"schema":"pipetop-summary/9"}`), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "pipetop-summary/9") {
		t.Errorf("a newer schema: %v", err)
	}
}

// TestCompareJudgesThroughput: B's steps take as long as A's but B idles
// 15 ms between steps (97 against 36 steps/s): compare says the rate
// changed, not "no significant difference".
func TestCompareJudgesThroughput(t *testing.T) {
	base := run(1, 3*ms)
	base.Means = []time.Duration{1 * ms, 5 * ms, 4 * ms, 300 * time.Microsecond}
	a := FromEntries(base.Entries())
	es := base.Entries()
	gap := int64(17500 * time.Microsecond)
	n := int64(0)
	for _, e := range es {
		if e.Frame != nil {
			for i := range e.Frame.Steps {
				e.Frame.Steps[i].StartNs += n * gap
				e.Frame.Steps[i].EndNs += n * gap
				n++
			}
		}
	}
	b := FromEntries(es)
	c := Compare(a, b)
	if c.StepTime.Significant || !c.Throughput.Significant || c.ThroughputUnit != "samples/s" {
		t.Fatalf("step time %+v, throughput %+v (%s)", c.StepTime, c.Throughput, c.ThroughputUnit)
	}
	if !strings.Contains(c.Text, "fewer samples/s") || !strings.Contains(c.Text, "time between steps") {
		t.Errorf("text: %s", c.Text)
	}
	if g := c.Judge(5); !g.Regressed || len(g.Regressions) != 1 || g.Regressions[0] != "samples/s" {
		t.Errorf("gate %+v, want samples/s regressed", g)
	}
	t.Log(c.Text)
}
