package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
)

const ms = time.Millisecond

// planted is a run whose data_wait steps from 2 ms to 12 ms after 1500 of
// 3000 steps: at 1500 × 10 ms = 15 s.
func planted(t *testing.T) []recording.Entry {
	t.Helper()
	a := rectest.Run{Name: "chg", PID: 5, Start: time.Unix(1_800_000_000, 0), Steps: 1500,
		Stages: []string{stage.DataWait, stage.Forward, stage.Other},
		Means:  []time.Duration{2 * ms, 7 * ms, 1 * ms}, Jitter: 0.3, Seed: 1}
	es := a.Entries()
	b := a
	b.Means = []time.Duration{12 * ms, 7 * ms, 1 * ms}
	b.Start, b.Seed = es[len(es)-1].T, 2
	for _, e := range b.Entries()[1:] {
		if e.Frame != nil {
			for i := range e.Frame.Steps {
				e.Frame.Steps[i].Step += 1500
			}
		}
		es = append(es, e)
	}
	return es
}

func TestChangeOfAPlantedRun(t *testing.T) {
	r := FromEntries(recording.Header{Source: "test"}, planted(t))
	var got []string
	for _, c := range r.Changes {
		got = append(got, c.Stage)
		if c.Stage == stage.DataWait && (math.Abs(c.AtSec-15) > 0.1 || math.Abs(c.BeforeNs-2e6) > 2e5 || math.Abs(c.AfterNs-12e6) > 5e5) {
			t.Errorf("data_wait change %+v, planted 2 → 12 ms at 15 s", c)
		}
		if c.Stage == stage.Forward {
			t.Errorf("forward did not change: %+v", c)
		}
	}
	if strings.Join(got, ",") != StepTime+","+stage.DataWait {
		t.Errorf("changes in %v, want the step time and data_wait", got)
	}
	var b strings.Builder
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-stage="data_wait" data-before-ms=`, `id="chart-host"`, `Content-Security-Policy`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "@import", "url("} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("page holds %q: it must load nothing", bad)
		}
	}
}

// TestNoChangeInASteadyRun: a steady run with ±30 % jitter marks none.
func TestNoChangeInASteadyRun(t *testing.T) {
	for seed := range uint64(10) {
		a := rectest.Run{Name: "steady", PID: 5, Start: time.Unix(1_800_000_000, 0), Steps: 3000,
			Stages: []string{stage.DataWait, stage.Forward, stage.Other},
			Means:  []time.Duration{2 * ms, 7 * ms, 1 * ms}, Jitter: 0.3, Wobble: 0.05, Seed: seed}
		if cs := FromEntries(recording.Header{}, a.Entries()).Changes; len(cs) > 0 {
			t.Errorf("seed %d: changes %+v in a steady run", seed, cs)
		}
	}
}

// TestReportOfAPythonSummary: the Python publisher's summary file gives
// the verdict and the stage table, and says why there are no plots.
func TestReportOfAPythonSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipetop-summary-loop-42.json")
	doc := `{"schema":"pipetop-summary/1","name":"loop","pid":42,"end_ns":1800000010000000000,"steps":40,"wall_ns":2000000000,
	"step_mean_ns":50000000,"steps_per_sec":20,"samples_per_sec":80,
	"stages":[{"name":"data_wait","mean_ns":20000000,"share":0.4},{"name":"forward","mean_ns":30000000,"share":0.6}],
	"verdict":{"kind":"input-bound","stage":"data_wait","headline":"input-bound: data_wait 40 %","next":"more workers"}}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recorded {
		t.Fatal("a summary file read as a recording")
	}
	var b strings.Builder
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"input-bound: data_wait 40 %", "<td>data_wait</td>", "40.0 %", "a run summary holds no readings over time", "loop"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<svg") {
		t.Error("a summary file's page draws a chart it has no data for")
	}
}

// FuzzFromFile: any file is read or refused without a panic, and what is
// read writes a page.
func FuzzFromFile(f *testing.F) {
	f.Add([]byte(`{"schema":"pipetop-summary/1","name":"x","steps":1}`))
	f.Add([]byte(`{"summary_version":1,"name":"x","throughput":[{"at_sec":1,"steps":1}]}`))
	f.Add([]byte("{\"pipetop_recording\":1,\"start_ns\":1}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := FromFile(path)
		if err != nil {
			return
		}
		var sb strings.Builder
		if err := Write(&sb, r); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReportOfASummaryJSON: pipetop summary --json's file holds buckets:
// the page draws step time, stages and throughput from them, and says the
// loader and host plots need a recording.
func TestReportOfASummaryJSON(t *testing.T) {
	run := FromEntries(recording.Header{}, planted(t)).Run
	b, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := FromFile(path)
	if err != nil || r.Recorded {
		t.Fatalf("read %s: %v (recorded %v)", path, err, r.Recorded)
	}
	var sb strings.Builder
	if err := Write(&sb, r); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	for _, want := range []string{`id="chart-step-time"`, `id="chart-stages"`, `id="chart-throughput"`, `id="chart-verdicts"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, `id="chart-host"`) || strings.Count(page, "a run summary holds no readings over time") != 2 {
		t.Errorf("the loader and host plots should say they need a recording")
	}
}
