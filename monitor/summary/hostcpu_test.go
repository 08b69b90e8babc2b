package summary

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/recording"
)

// TestCPUMeans: the means weigh the wait by the demand, average the
// training thread over the refreshes that knew it, and keep the pools.
func TestCPUMeans(t *testing.T) {
	var m CPUMeans
	if m.Run() != nil {
		t.Fatal("means without readings")
	}
	m.Add(&verdict.HostCPU{UsableCores: 2, QuotaCPUs: 0.5, ThrottledShare: 1, Demand: 3, Used: 0.5, WaitShare: 0.8,
		Training: 1, TrainingCPU: 0.2, Others: 0.3, IdleCores: 1.5, WorkerCores: 0.2, TrainingSwitches: 300, TrainingPreempted: 20, IntraOpThreads: 2,
		Pools: []verdict.CPUPool{{Role: "worker", Processes: 2, Busy: 2}, {Role: "training", Processes: 1, Busy: 1}}})
	m.Add(&verdict.HostCPU{UsableCores: 2, ThrottledShare: 0.5, Demand: 1, Used: 0.5, WaitShare: 0.5,
		Training: -1, TrainingCPU: -1, IdleCores: -1, WorkerCores: 0.4,
		Pools: []verdict.CPUPool{{Role: "worker", Processes: 2, Busy: 2}}})
	m.Add(nil)
	got := m.Run()
	if math.Abs(got.WaitShare-(0.8*3+0.5*1)/4) > 1e-9 {
		t.Errorf("wait share %v, want the waits weighed by the demand", got.WaitShare)
	}
	want := &RunCPU{Refreshes: 2, UsableCores: 2, QuotaCPUs: 0.5, ThrottledShare: 0.75, Demand: 2, Used: 0.5,
		WaitShare: got.WaitShare, Training: 1, TrainingCPU: 0.2, Others: 0.3, IdleCores: 1.5,
		TrainingSwitches: 300, TrainingPreempted: 20, IntraOpThreads: 2,
		WorkerCores: got.WorkerCores, Pools: []RunPool{{Role: "training", Processes: 1, Busy: 1}, {Role: "worker", Processes: 2, Busy: 2}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("means\n%+v\nwant\n%+v", got, want)
	}
	if math.Abs(got.WorkerCores-0.3) > 1e-9 {
		t.Errorf("worker cores %v, want 0.3", got.WorkerCores)
	}
	if c := got.HostCPU(); c.Refreshes != 2 || len(c.Pools) != 2 || c.WorkerCores != got.WorkerCores || c.TrainingSwitches != 300 || c.IntraOpThreads != 2 {
		t.Errorf("as the rules read it: %+v", c)
	}
}

// Whole runs' CPU readings as pipetop run kept them: a 0.5-CPU quota that
// ran out in most periods, and a training thread alone on a CPU.
var (
	throttledRun = &RunCPU{Refreshes: 20, UsableCores: 0.5, QuotaCPUs: 0.5, ThrottledShare: 0.9, Demand: 2.1, Used: 0.5,
		WaitShare: 0.75, Training: 1, TrainingCPU: 0.3, Others: 0.2, IdleCores: 1.4, Pools: []RunPool{{Role: "intra-op", Processes: 1, Busy: 2}}}
	trainingRun = &RunCPU{Refreshes: 20, UsableCores: 2, Demand: 1.02, Used: 1, WaitShare: 0.02, Training: 0.99, TrainingCPU: 0.97,
		Others: 0.03, IdleCores: 0.95, Pools: []RunPool{{Role: "training", Processes: 1, Busy: 1}}}
)

// TestScriptJudgesHostCPU: a summary whose shares say compute-bound is
// judged with the CPU readings of the run, as the live view judged it.
func TestScriptJudgesHostCPU(t *testing.T) {
	compute := func(c *RunCPU) Script {
		return Script{Schema: ScriptSchema, Name: "py", Steps: 200, WallNs: 4e9, StepMeanNs: 2e7, StepsPerSec: 50,
			Stages: []ScriptStage{{Name: "data_wait", MeanNs: 2e5, Share: 0.01}, {Name: "forward", MeanNs: 1.9e7, Share: 0.95},
				{Name: "optim", MeanNs: 8e5, Share: 0.04}}, HostCPU: c}
	}
	for _, tc := range []struct {
		name string
		cpu  *RunCPU
		want verdict.Kind
	}{
		{"no readings: the shares alone", nil, verdict.ComputeBound},
		{"a quota that ran out", throttledRun, verdict.Throttled},
		{"one busy thread, cores idle", trainingRun, verdict.TrainingThreadBound},
		{"readings over no refresh", &RunCPU{UsableCores: 0.5, QuotaCPUs: 0.5, ThrottledShare: 1}, verdict.ComputeBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := compute(tc.cpu)
			if v := s.Judge(); v.Kind != tc.want {
				t.Errorf("verdict %s, want %s", v, tc.want)
			}
		})
	}
}

// TestReadScriptsAddsHostCPU: pipetop run's readings of a process are
// judged with its old-format summary and written into its file, whose
// schema is raised; the file reads back with them.
func TestReadScriptsAddsHostCPU(t *testing.T) {
	dir := t.TempDir()
	path := copyFile(t, oldScript, dir)
	files, errs, err := ReadScripts(dir, time.Unix(0, 0), map[int]Kept{41: {CPU: throttledRun}, 42: {CPU: trainingRun}})
	if err != nil || len(errs) != 0 || len(files) != 1 {
		t.Fatalf("ReadScripts = %d files, %v, %v", len(files), errs, err)
	}
	if v := files[0].Verdict; v == nil || v.Kind != verdict.Throttled {
		t.Fatalf("verdict %+v, want throttled (the shares alone say input-bound)", v)
	}
	back, err := ReadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Schema != ScriptSchema || !reflect.DeepEqual(back.HostCPU, throttledRun) || back.Verdict.Kind != verdict.Throttled {
		t.Errorf("read back schema %q, host_cpu %+v, verdict %+v", back.Schema, back.HostCPU, back.Verdict)
	}
	if v := back.Judge(); v.Kind != verdict.Throttled {
		t.Errorf("judged again from the file: %s", v)
	}
	var text strings.Builder
	WriteScriptText(&text, &back, path)
	if want := "cpu: threads wanted 2.1 CPUs of 0.5 usable, waited 75 % of that time for one; quota 0.5 CPUs, ran out in 90 % of its periods; the training thread wanted a CPU 100 % of the time (on one 30 %) (means of 20 readings)"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
}

// TestRecordingJudgesHostCPU: pipetop summary of a recording judges the
// whole run with the recorded threads readings: a compute-bound run
// under a quota that ran out is throttled.
func TestRecordingJudgesHostCPU(t *testing.T) {
	es := run(1, ms/4).Entries()
	if v := FromEntries(es).Verdict; v.Kind != verdict.ComputeBound {
		t.Fatalf("without readings: %s, want compute-bound", v)
	}
	threads, _ := json.Marshal(map[string]any{
		"threads": []map[string]any{
			{"pid": 9, "tid": 9, "role": "training", "cpu": 30.0, "wait": 70.0},
			{"pid": 9, "tid": 10, "role": "intra-op", "cpu": 20.0, "wait": 80.0},
		},
		"usable_cores": 0.5, "quota": map[string]any{"version": 2, "cpus": 0.5, "throttled_share": 0.95},
	})
	last := es[len(es)-1].T
	for i := range 10 {
		es = append(es, recording.Entry{T: last.Add(time.Duration(i) * time.Second), Host: recording.Host{"threads": threads}})
	}
	r := FromEntries(es)
	if r.Verdict.Kind != verdict.Throttled {
		t.Errorf("verdict %s, want throttled", r.Verdict)
	}
	if r.CPU == nil || r.CPU.Refreshes != 10 {
		t.Errorf("CPU use %+v", r.CPU)
	}
}

// TestRecordingOverTimeJudgesHostCPU: the verdicts over time judge each
// window with the CPU readings recorded in it: a run that is compute-bound
// until a quota starts to run out halfway through turns throttled then,
// and not before.
func TestRecordingOverTimeJudgesHostCPU(t *testing.T) {
	steps := run(1, ms/4).Entries()
	throttled, _ := json.Marshal(map[string]any{
		"threads": []map[string]any{
			{"pid": 9, "tid": 9, "role": "training", "cpu": 30.0, "wait": 70.0},
			{"pid": 9, "tid": 10, "role": "intra-op", "cpu": 20.0, "wait": 80.0},
		},
		"usable_cores": 0.5, "quota": map[string]any{"version": 2, "cpus": 0.5, "throttled_share": 0.95},
	})
	free, _ := json.Marshal(map[string]any{
		"threads":      []map[string]any{{"pid": 9, "tid": 9, "role": "training", "cpu": 100.0, "wait": 1.0}},
		"usable_cores": 2.0,
	})
	var es []recording.Entry
	every := max(1, len(steps)/100) // about one reading a second of the run
	for i, e := range steps {
		es = append(es, e)
		if i%every == 0 {
			raw := free
			if i > len(steps)/2 {
				raw = throttled
			}
			es = append(es, recording.Entry{T: e.T, Host: recording.Host{"threads": raw}})
		}
	}
	r := FromEntries(es)
	first, last := r.Verdicts[0], r.Verdicts[len(r.Verdicts)-1]
	if first.Kind == verdict.Throttled || last.Kind != verdict.Throttled {
		t.Fatalf("verdicts over time %+v: want throttled from about halfway, not from the start", r.Verdicts)
	}
	if last.FromSec < 40 || last.FromSec > 90 {
		t.Errorf("throttled from %.0f s of %.0f s, want from about halfway (after the first readings of the quota)", last.FromSec, r.DurationSec)
	}
}

// TestEndOfRunMemoryCreep: the loss-list leak's resident memory, as
// pipetop run kept it (400 MiB more in 30 s, steadily), is memory creep at
// the end of the run as it was live, judged with the summary and kept in
// its file; the same run at a flat resident memory is not.
func TestEndOfRunMemoryCreep(t *testing.T) {
	rss := func(growth float64) *verdict.Series {
		s := &verdict.Series{}
		for i := range 31 {
			s.Add(int64(1e18)+int64(i)*1e9, 500e6+growth*float64(i)/30)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		rss   *verdict.Series
		creep bool
	}{
		{"the loss list kept with its graph", rss(400 << 20), true},
		{"flat resident memory", rss(0), false},
		{"no readings", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := copyFile(t, oldScript, dir)
			files, errs, err := ReadScripts(dir, time.Unix(0, 0), map[int]Kept{41: {RSS: tc.rss}})
			if err != nil || len(errs) != 0 || len(files) != 1 {
				t.Fatalf("ReadScripts = %d files, %v, %v", len(files), errs, err)
			}
			back, err := ReadScript(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []*verdict.Verdict{files[0].Verdict, back.Verdict} {
				if got := strings.Contains(v.String(), "memory creep: the trainer's resident memory grew 400 MiB in 30 s"); got != tc.creep {
					t.Errorf("memory creep named %v, want %v: %s", got, tc.creep, v)
				}
			}
			if tc.creep && !strings.Contains(back.Verdict.String(), ".item()") {
				t.Errorf("no advice: %s", back.Verdict)
			}
			if v := back.Judge(); v.String() != back.Verdict.String() {
				t.Errorf("judged again from the file: %s, was %s", v, back.Verdict)
			}
		})
	}
}

// TestRecordingJudgesMemoryCreep: pipetop summary of a recording whose
// process readings show the trainer's resident memory growing 400 MiB over
// 30 s names memory creep for the whole run, as the live view did; the
// same recording at a flat resident memory does not.
func TestRecordingJudgesMemoryCreep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		growth float64
		creep  bool
	}{{"growing", 400 << 20, true}, {"flat", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			es := run(1, ms/4).Entries()
			last := es[len(es)-1].T
			for i := range 31 {
				raw, _ := json.Marshal(map[string]any{"alive": true, "self": map[string]any{"pid": 9,
					"rss": map[string]any{"value": 500e6 + tc.growth*float64(i)/30, "state": "ok"}}})
				es = append(es, recording.Entry{T: last.Add(time.Duration(i-31) * time.Second), Host: recording.Host{"process": raw}})
			}
			slices.SortStableFunc(es, func(a, b recording.Entry) int { return a.T.Compare(b.T) })
			v := FromEntries(es).Verdict
			if got := strings.Contains(v.String(), "memory creep: the trainer's resident memory grew 400 MiB in 30 s"); got != tc.creep {
				t.Errorf("memory creep named %v, want %v: %s", got, tc.creep, v)
			}
		})
	}
}
