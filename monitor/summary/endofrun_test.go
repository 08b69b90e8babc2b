package summary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rankDocJSON is a summary file of rank r of run "job1" with 40 steps of
// 50 ms: fwdMs of forward, commMs of comm, the rest data_wait; its timeline
// has a point every second (20 steps), for 2 s.
func rankDocJSON(r, pid int, fwdMs, commMs float64, end time.Time) string {
	const steps, stepMs = 40, 50.0
	stages := func(n float64) string {
		return fmt.Sprintf(`{"forward":%d,"comm":%d,"data_wait":%d}`, int64(n*fwdMs*1e6), int64(n*commMs*1e6), int64(n*(stepMs-fwdMs-commMs)*1e6))
	}
	var tl []string
	for i := 0; i <= 2; i++ { // 20 steps a second
		n := float64(20 * i)
		tl = append(tl, fmt.Sprintf(`{"t":%d,"steps":%d,"wall_ns":%d,"stages":%s}`, int64(1000+i)*1e9, int(n), int64(n*stepMs*1e6), stages(n)))
	}
	return fmt.Sprintf(`{"schema":"pipetop-summary/1","name":"train","pid":%d,"end_ns":%d,"steps":%d,"samples":0,
		"wall_ns":%d,"step_mean_ns":%g,"steps_per_sec":20,"samples_per_sec":0,
		"stages":[{"name":"data_wait","total_ns":%d,"mean_ns":%g,"share":%g},{"name":"forward","total_ns":%d,"mean_ns":%g,"share":%g},
		{"name":"comm","total_ns":%d,"mean_ns":%g,"share":%g}],
		"rank_of":{"launcher":"slurm","rank":%d,"world_size":3,"run":"slurm:77"},"host":"node%d",
		"ddp":{"hooks":["allreduce"],"buckets":40,"buckets_per_step":1,"bytes":4000,"bytes_per_step":100,"reduced":40,"ready_to_done_mean_ns":2e6,"ready_to_done_max_ns":5000000},
		"timeline":[%s]}`,
		pid, end.UnixNano(), steps, int64(steps*stepMs*1e6), stepMs*1e6,
		int64(steps*(stepMs-fwdMs-commMs)*1e6), (stepMs-fwdMs-commMs)*1e6, (stepMs-fwdMs-commMs)/stepMs,
		int64(steps*fwdMs*1e6), fwdMs*1e6, fwdMs/stepMs, int64(steps*commMs*1e6), commMs*1e6, commMs/stepMs,
		r, r, strings.Join(tl, ","))
}

// TestJobSummary: the summaries of ranks 0 and 1 of a 3-rank run (rank 1
// planted slow in forward) become one job summary, printed once and
// written beside them; a single process's summary is reported apart.
func TestJobSummary(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	end := start.Add(time.Second)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pipetop-summary-train-10.json", rankDocJSON(0, 10, 10, 30, end))
	write("pipetop-summary-train-11.json", rankDocJSON(1, 11, 40, 2, end))
	var stdout, stderr bytes.Buffer
	if err := EndOfRun(dir, start, nil, false, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	text := stderr.String()
	for _, want := range []string{"pipetop: run slurm:77 (slurm launcher): 2 of 3 ranks, one job summary",
		"node1", "no summary from ranks [2]", "straggler over the run: straggler: rank 1 (pid 11 on node1) — its forward is 80 % vs 20 % on the median rank",
		"over time: 0–2 s rank 1 in forward", "ddp rank 0: 1.0 buckets a step", "pipetop-job-slurm_77.json"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "pipetop: "); n != 1 {
		t.Errorf("%d summaries printed, want the one job summary:\n%s", n, text)
	}
	var j Job
	b, err := os.ReadFile(filepath.Join(dir, "pipetop-job-slurm_77.json"))
	if err == nil {
		err = json.Unmarshal(b, &j)
	}
	if err != nil || j.Schema != JobSchema || len(j.Ranks) != 2 || j.Straggler == nil || *j.Straggler.Rank != 1 || len(j.OverTime) != 2 {
		t.Fatalf("job file: %v %+v", err, j)
	}
	if j.Ranks[1].Summary != filepath.Join(dir, "pipetop-summary-train-11.json") || j.Ranks[1].Verdict == nil {
		t.Errorf("rank 1's own summary and verdict: %+v", j.Ranks[1])
	}

	// Balanced ranks: no straggler, over the run or over time.
	dir2 := t.TempDir()
	for r := range 2 {
		if err := os.WriteFile(filepath.Join(dir2, fmt.Sprintf("pipetop-summary-train-%d.json", r)), []byte(rankDocJSON(r, r, 20, 5, end)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Reset()
	if err := EndOfRun(dir2, start, nil, true, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var docs []Job
	if err := json.Unmarshal(stdout.Bytes(), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("--json: %v, %d documents\n%s", err, len(docs), stdout.String())
	}
	if docs[0].Straggler != nil {
		t.Errorf("balanced ranks flagged: %s", docs[0].Straggler)
	}
	for _, w := range docs[0].OverTime {
		if w.Straggler != nil {
			t.Errorf("balanced ranks flagged over time: %s", w.Straggler)
		}
	}
}

// FuzzJobSummary: any summary document read as two ranks of one run
// makes a job summary without panicking (the timelines and stage totals
// come from files another program wrote).
func FuzzJobSummary(f *testing.F) {
	f.Add([]byte(rankDocJSON(0, 1, 10, 30, time.Now())))
	f.Add([]byte(`{"schema":"pipetop-summary/1","steps":0,"timeline":[{"t":0},{"t":0},{"t":-5,"steps":-3,"wall_ns":-1}]}`))
	f.Add([]byte(`{"timeline":[{"t":1,"steps":5,"wall_ns":5,"stages":{"x":9}},{"t":2,"steps":1,"wall_ns":1,"stages":{}}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		var docs []ScriptFile
		for r := range 2 {
			var s Script
			if json.Unmarshal(b, &s) != nil {
				return
			}
			s.RankOf = &RankOf{Rank: r, WorldSize: 2, Run: "f"}
			docs = append(docs, ScriptFile{Script: &s, Path: fmt.Sprint(r)})
		}
		j, err := BuildJob(dir, "f", docs)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Ranks) != 2 {
			t.Fatalf("%d ranks", len(j.Ranks))
		}
		WriteJobText(&bytes.Buffer{}, j)
	})
}

// TestReportSummaries checks the summary reader: this run's file gets the
// verdict, an earlier run's is left out, a broken one is named.
func TestReportSummaries(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	doc := func(name string, end time.Time) string {
		return fmt.Sprintf(`{"schema":"pipetop-summary/1","name":%q,"pid":7,"end_ns":%d,"steps":20,"samples":80,
			"wall_ns":400000000,"step_mean_ns":20000000,"steps_per_sec":50,"samples_per_sec":200,
			"stages":[{"name":"data_wait","total_ns":300000000,"mean_ns":15000000,"share":0.75},
			{"name":"forward","total_ns":100000000,"mean_ns":5000000,"share":0.25}],
			"loader":{"source":"torch","workers":2,"worker_busy":0.97,"worker_busy_each":[0.96,0.98],"cores":16}}`, name, end.UnixNano())
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pipetop-summary-now-7.json", doc("now", start.Add(time.Second)))
	write("pipetop-summary-old-6.json", doc("old", start.Add(-time.Hour)))
	write("pipetop-summary-bad-5.json", `{"schema":"pipetop-summary/1",`)
	var stdout, stderr bytes.Buffer
	if err := EndOfRun(dir, start, nil, false, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	text := stderr.String()
	for _, want := range []string{"pipetop-summary-bad-5.json", "pipetop: now (pid 7): 20 steps", "data_wait", "75.0 %",
		"num_workers=2 busy 97 % (96 %, 98 %)", "verdict: input-bound", "2 workers are busy 97 %: raise num_workers to 6; 13 cores idle"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "pipetop: old") {
		t.Errorf("an earlier run's summary was reported:\n%s", text)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pipetop-summary-now-7.json"))
	if err != nil || !strings.Contains(string(b), `"kind": "input-bound"`) {
		t.Errorf("verdict not added to the file: %v\n%s", err, b)
	}
}
