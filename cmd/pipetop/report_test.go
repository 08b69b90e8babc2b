package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/bisect/bisecttest"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
)

// bisectFile writes the constructed bisect report, its full phase at rate
// samples/s, to dir/name and returns its path.
func bisectFile(t *testing.T, dir, name string, rate float64) string {
	t.Helper()
	return reportFile(t, dir, name, bisecttest.Constructed(rate))
}

// reportFile writes the bisect report r to dir/name and returns its path.
func reportFile(t *testing.T, dir, name string, r bisect.Report) string {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bisectDir is a constructed pipetop bisect --record directory: the
// report, and a planted recording of the loader and full phases (the
// failed and skipped phases have none).
func bisectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bisectFile(t, dir, bisect.ReportFile, 600)
	for _, phase := range []string{"loader", "full"} {
		r := rectest.Run{Name: "train-" + phase, PID: 7, Start: time.Unix(1_800_000_000, 0), Steps: 400,
			Stages: []string{stage.DataWait, stage.Forward, stage.Other}, Means: []time.Duration{20 * time.Millisecond, 25 * time.Millisecond, 5 * time.Millisecond},
			Jitter: 0.2, Seed: 3}
		if err := rectest.Write(filepath.Join(dir, phase+".pipetop"), r.Entries()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pipetopReport runs pipetop report with args and returns its stderr.
func pipetopReport(t *testing.T, args ...string) string {
	t.Helper()
	var errb bytes.Buffer
	if err := run(context.Background(), append([]string{"report"}, args...), &bytes.Buffer{}, &errb); err != nil {
		t.Fatalf("pipetop report %s: %v\n%s", strings.Join(args, " "), err, &errb)
	}
	return errb.String()
}

// TestReportOfABisectDir: pipetop report DIR writes DIR/bisect.html and
// each recorded phase's own report beside it, linked relatively; with -o
// elsewhere the links still lead there; pipetop compare takes DIR for its
// bisect.json; a bisect JSON file outside a --record directory gets a page
// without links.
func TestReportOfABisectDir(t *testing.T) {
	dir := bisectDir(t)
	pipetopReport(t, dir)
	page := readText(t, filepath.Join(dir, "bisect.html"))
	for _, phase := range []string{"loader", "full"} {
		if !strings.Contains(page, `href="`+phase+`.html"`) || readText(t, filepath.Join(dir, phase+".html")) == "" {
			t.Errorf("phase %s: no own report linked as %s.html", phase, phase)
		}
	}
	if strings.Contains(page, `href="forward.html"`) || strings.Contains(page, `href="/`) {
		t.Error("a phase without a recording is linked, or a link is absolute")
	}
	out := filepath.Join(t.TempDir(), "sub", "page.html")
	os.MkdirAll(filepath.Dir(out), 0o755)
	pipetopReport(t, filepath.Join(dir, bisect.ReportFile), "-o", out)
	rel, _ := filepath.Rel(filepath.Dir(out), filepath.Join(dir, "full.html"))
	if !strings.Contains(readText(t, out), `href="`+filepath.ToSlash(rel)+`"`) {
		t.Errorf("-o %s: no relative link %s", out, rel)
	}
	var c bisect.Comparison
	runJSON(t, &c, "compare", "--json", dir, filepath.Join(dir, bisect.ReportFile))
	if len(c.Phases) != 4 || c.A.File != filepath.Join(dir, bisect.ReportFile) {
		t.Errorf("compare of a --record directory and its bisect.json: %+v", c)
	}
	lone := bisectFile(t, t.TempDir(), "b.json", 600)
	pipetopReport(t, lone)
	if p := readText(t, strings.TrimSuffix(lone, ".json")+".html"); !strings.Contains(p, `data-phase="full"`) || strings.Contains(p, "href=") {
		t.Error("a lone bisect file's page lacks its phases or links to reports that are not there")
	}
}

// TestReportOfAMissingBisect: a directory without bisect.json and a bisect
// file of another schema are errors naming the file.
func TestReportOfAMissingBisect(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"schema":"pipetop-bisect/9"}`), 0o644)
	for _, c := range []struct{ path, want string }{{dir, bisect.ReportFile}, {other, `schema "pipetop-bisect/9"`}} {
		err := run(context.Background(), []string{"report", c.path}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("report %s: %v, want an error naming %s", c.path, err, c.want)
		}
	}
}

// TestReportOfRealBisects: every real bisect file in
// testdata/bisect/report makes a page, and compares with itself.
func TestReportOfRealBisects(t *testing.T) {
	files, _ := filepath.Glob("testdata/bisect/report/*.json")
	if len(files) == 0 {
		t.Skip("no real bisect file in testdata/bisect/report")
	}
	for _, f := range files {
		out := filepath.Join(t.TempDir(), "page.html")
		pipetopReport(t, f, "-o", out)
		if !strings.Contains(readText(t, out), `id="phases"`) {
			t.Errorf("%s: no phases on the page", f)
		}
		var c bisect.Comparison
		runJSON(t, &c, "compare", "--json", f, f)
		if len(c.Phases) == 0 {
			t.Errorf("%s compared with itself: no phases", f)
		}
	}
}

// readText is the text of the file at path.
func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
