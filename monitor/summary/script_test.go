package summary

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// oldScript is a run summary as the publisher wrote it before ranks,
// DDP, timelines and stack samples (and before pipetop run added a
// verdict).
const oldScript = "testdata/pipetop-summary-old-41.json"

// copyFile copies src into dir and returns the copy's path.
func copyFile(t *testing.T, src, dir string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestScriptOldFormat: a summary of the old format still reads, through
// every reader: ReadScript (pipetop run), Load (compare, report) and
// DecodeScript (flame).
func TestScriptOldFormat(t *testing.T) {
	s, err := ReadScript(oldScript)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "old" || s.Steps != 100 || len(s.Stages) != 2 || s.FirstStep == nil || s.RankOf != nil || s.Stacks != nil || s.Verdict != nil {
		t.Fatalf("read %+v", s)
	}
	r, err := Load(oldScript)
	if err != nil {
		t.Fatal(err)
	}
	// data_wait's share leaves the first step out: (1.2 s - 0.8 s) of
	// the other 99 steps' 1.1 s.
	if r.Name != "old" || r.Source != oldScript || r.Whole.Steps != 100 || r.Whole.LastStep != 0 || r.StartNs != 1700000000000000000 ||
		math.Abs(r.Whole.Stage(stage.DataWait).Share-0.4/1.1) > 1e-9 || len(r.Throughput) != 0 {
		t.Errorf("loaded %+v", r)
	}
	b, _ := os.ReadFile(oldScript)
	if d, ok, err := DecodeScript(b, oldScript); !ok || err != nil || d.Name != "old" {
		t.Errorf("DecodeScript = %+v, %v, %v", d, ok, err)
	}
}

// TestScriptRoundTrip: judging a summary and writing its verdict into the
// file keeps every other field (those this struct does not know
// included), and the file reads back with the verdict.
func TestScriptRoundTrip(t *testing.T) {
	path := copyFile(t, oldScript, t.TempDir())
	s, err := ReadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	v := s.Judge()
	if v.Kind != verdict.InputBound {
		t.Fatalf("verdict %s, want input-bound", v.Kind)
	}
	if err := AddVerdict(path, v); err != nil {
		t.Fatal(err)
	}
	back, err := ReadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Verdict == nil || !reflect.DeepEqual(*back.Verdict, v) {
		t.Errorf("verdict read back %+v, want %+v", back.Verdict, v)
	}
	back.Verdict, s.Verdict, s.code = nil, nil, nil
	if !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v\nwant %+v", back, s)
	}
	var raw struct{ Argv []string }
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &raw); err != nil || !reflect.DeepEqual(raw.Argv, []string{"train.py"}) {
		t.Errorf("a field the struct does not know was lost: argv %q (%v)", raw.Argv, err)
	}
	if r, err := Load(path); err != nil || r.Verdict.Kind != verdict.InputBound {
		t.Errorf("Load after the verdict: %v, %+v", err, r.Verdict)
	}
}

// TestScriptBadFiles: a file that is not a readable run summary gives an
// error that names it.
func TestScriptBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"cut.json", `{"schema":"pipetop-summary/1",`, "unexpected end of JSON input"},
		{"other.json", `{"schema":"pipetop-job/1"}`, `schema "pipetop-job/1", want "pipetop-summary/2"`},
		{"newer.json", `{"schema":"pipetop-summary/9"}`, `schema "pipetop-summary/9"`},
		{"stacks.json", `{"schema":"pipetop-summary/1","stacks":{"hz":-1}}`, "stacks.json"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadScript(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadScript(%s) = %v, want an error naming the file and %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadScript(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing file: %v", err)
	}
	if _, ok, _ := DecodeScript([]byte(`{"summary_version":1}`), "x"); ok {
		t.Error("DecodeScript took a pipetop summary --json document for a run summary")
	}
	if _, ok, err := DecodeScript([]byte(`{"schema":"pipetop-summary/9"}`), "newer.json"); !ok || err == nil || !strings.Contains(err.Error(), "newer.json") {
		t.Errorf("DecodeScript of a newer schema: %v, %v", ok, err)
	}
}

// TestJobRoundTrip: the job summary BuildJob writes reads back into the
// same struct.
func TestJobRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var files []ScriptFile
	for r := range 2 {
		s, err := ReadScript(oldScript)
		if err != nil {
			t.Fatal(err)
		}
		s.RankOf = &RankOf{Launcher: "torchrun", Rank: r, WorldSize: 3, Run: "torchrun:9/x"}
		s.Judge()
		files = append(files, ScriptFile{Script: &s, Path: filepath.Join(dir, "rank"+string(rune('0'+r)))})
	}
	j, err := BuildJob(dir, "torchrun:9/x", Jobs(files)["torchrun:9/x"])
	if err != nil {
		t.Fatal(err)
	}
	if j.Path != filepath.Join(dir, "pipetop-job-torchrun_9_x.json") || !reflect.DeepEqual(j.Missing, []int{2}) || len(j.Ranks) != 2 {
		t.Fatalf("job %+v", j)
	}
	b, err := os.ReadFile(j.Path)
	if err != nil {
		t.Fatal(err)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, j) {
		t.Errorf("read back %+v (%v)\nwant %+v", back, err, *j)
	}
	var text strings.Builder
	WriteJobText(&text, j)
	if !strings.Contains(text.String(), "2 of 3 ranks") || !strings.Contains(text.String(), "no summary from ranks [2]") {
		t.Errorf("text:\n%s", text.String())
	}
}

// TestReadScriptsSince: ReadScripts skips an earlier run's summaries and
// reports a broken file without stopping.
func TestReadScriptsSince(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, oldScript, dir) // ended in 2023: before start
	if err := os.WriteFile(filepath.Join(dir, "pipetop-summary-bad-5.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, errs, err := ReadScripts(dir, time.Unix(1800000000, 0), nil)
	if err != nil || len(files) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "pipetop-summary-bad-5.json") {
		t.Errorf("ReadScripts = %d files, errors %v, %v", len(files), errs, err)
	}
	files, _, _ = ReadScripts(dir, time.Unix(0, 0), nil)
	if len(files) != 1 || files[0].Verdict == nil {
		t.Errorf("ReadScripts since 1970 = %+v, want the one summary, judged", files)
	}
}

// FuzzDecodeScript: whatever a run summary file holds (another program
// wrote it), decoding it never panics, an error names the file, and a
// summary that decodes can be judged, read as a Run and printed.
func FuzzDecodeScript(f *testing.F) {
	if b, err := os.ReadFile(oldScript); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"pipetop-summary/1","steps":3,"wall_ns":30,"step_mean_ns":10,"stages":[{"name":"data_wait","mean_ns":5,"share":0.5}]}`))
	f.Add([]byte(`{"schema":"pipetop-summary/2"}`))
	f.Add([]byte(`{"schema":"pipetop-summary/1","steps":-1,"wall_ns":-5,"stages":[{"name":"","share":-2}],"stacks":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok, err := DecodeScript(b, "fuzz.json")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if !ok {
			return
		}
		if s.Stacks != nil && s.Stacks.Validate() != nil {
			return // ReadScript refuses such a file
		}
		s.Judge()
		_ = s.Run("fuzz.json")
		WriteScriptText(io.Discard, &s, "fuzz.json")
	})
}

// A run whose first step waited 1.5 s for its DataLoader's workers to
// start is judged on its other steps: the start-up is not every step's
// input wait.
func TestWholeLeavesTheStartUpOut(t *testing.T) {
	ms := int64(time.Millisecond)
	wall, wait := 1500*ms+99*20*ms, 1500*ms+99*ms/2
	s := Script{Steps: 100, WallNs: wall, StepMeanNs: float64(wall) / 100,
		Stages: []ScriptStage{{Name: stage.DataWait, TotalNs: wait, Share: float64(wait) / float64(wall)}, {Name: stage.Forward, TotalNs: 99 * 19 * ms}}}
	all := s.Whole()
	before := all.Stage(stage.DataWait).Share
	s.FirstStep = &FirstStep{WallNs: 1500 * ms}
	s.FirstStep.Stages = append(s.FirstStep.Stages, struct {
		Name  string `json:"name"`
		CPUNs int64  `json:"cpu_ns"`
	}{stage.DataWait, 1500 * ms})
	w := s.Whole()
	if got := w.Stage(stage.DataWait).Share; before < 0.4 || math.Abs(got-0.025) > 1e-9 || math.Abs(w.WallMean-float64(20*ms)) > 1 {
		t.Errorf("data_wait share %.3f with the first step, %.3f without (want 0.025), step mean %.0f", before, got, w.WallMean)
	}
}
