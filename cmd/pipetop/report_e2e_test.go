package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/chromium"
	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/bisect/bisecttest"
	"github.com/pipetop/pipetop/monitor/summary"
)

// changeAfter is when the planted data_wait step change happens, after
// the synthetic publisher starts.
const changeAfter = 4 * time.Second

// plantedFixture is the recording plantedRunOfRanks made for
// TestReportInABrowser; plantedAt its sidecar, when the change was planted
// (Unix ns).
const plantedFixture, plantedAt = "planted-ranks.pipetop", "planted-ranks.at"

// plantedRunOfRanks records 8 s of a real synthetic run of two ranks, rank
// 1 a straggler (6 ms more data_wait a step), whose data_wait steps from
// 6 ms to 20 ms changeAfter after the publisher starts, to rec, and when
// the change was planted to the file plantedAt beside it.
func plantedRunOfRanks(t *testing.T, rec string) {
	t.Helper()
	bin, socks := testkit.BinDir(t), t.TempDir()
	t.Setenv(ipc.DirEnv, socks)
	pub := exec.Command(filepath.Join(bin, "synthetic"), "-name", "planted", "-rate", "100", "-quiet", "-ranks", "2",
		"-straggler", "1", "-straggle", "6ms", "-change-after", changeAfter.String(), "-change", "20ms")
	pub.Env = append(os.Environ(), ipc.DirEnv+"="+socks)
	started := time.Now()
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer testkit.Stop(pub)
	for i := 0; ; i++ {
		if eps, _ := ipc.ListDir(socks); len(eps) == 2 {
			break
		}
		if i == 1500 {
			t.Fatal("the synthetic publisher's 2 sockets did not appear")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"record", "--duration", "8s", "--no-gpu", "--interval", "250ms", "-o", rec, "planted"}, io.Discard, &stderr)
	if err != nil {
		t.Fatalf("record: %v\n%s", err, &stderr)
	}
	at := strconv.FormatInt(started.Add(changeAfter).UnixNano(), 10)
	if err := os.WriteFile(filepath.Join(filepath.Dir(rec), plantedAt), []byte(at+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// plantedTime is when the change of the planted fixture was planted.
func plantedTime(t *testing.T) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", plantedAt))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", plantedAt, err)
	}
	return time.Unix(0, ns)
}

// browser starts headless Chromium for the test, or skips it when none is
// installed (scripts/install-deps.sh installs Debian's chromium).
func browser(t *testing.T) *chromium.Browser {
	t.Helper()
	bin := chromium.Find()
	if bin == "" {
		t.Skip("chromium not installed (Debian package chromium, see scripts/install-deps.sh): skipping the report in a real browser")
	}
	b, err := chromium.Start(bin, t.TempDir(), 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestReportInABrowser: the report of a planted run (recorded once by
// plantedRunOfRanks: go test -run TestReportInABrowser -update; the live
// path of a recording is TestRecordReplaySummaryCompareTrace's), opened in headless
// Chromium, draws every chart, marks the data_wait step change within 1 s
// of when it was planted and the straggler's row, renders a screenshot and
// makes no network request. A page that does load something from the
// network shows that the request check sees requests.
func TestReportInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the recorded run in a browser")
	}
	rec := recorded(t, plantedFixture, plantedRunOfRanks)
	planted := plantedTime(t)
	page := filepath.Join(t.TempDir(), "report.html")
	var errb bytes.Buffer
	if err := run(context.Background(), []string{"report", rec, "-o", page}, io.Discard, &errb); err != nil {
		t.Fatalf("report: %v\n%s", err, &errb)
	}
	var sr summary.Run
	runJSON(t, &sr, "summary", "--json", rec)
	want := planted.Sub(time.Unix(0, sr.StartNs)).Seconds()

	b := browser(t)
	url := "file://" + page
	if err := b.Open(url); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"chart-verdicts", "chart-step-time", "chart-stages", "chart-throughput", "chart-loader",
		"chart-read-amp", "chart-host", "chart-ranks"} {
		var w float64
		if err := b.Eval(fmt.Sprintf(`(() => { const e = document.getElementById(%q); return e ? e.getBoundingClientRect().width : -1 })()`, id), &w); err != nil {
			t.Fatal(err)
		}
		if w < 600 {
			t.Errorf("chart %s: width %.0f px at a 1280 px window, want drawn (-1: missing)", id, w)
		}
	}
	var counts []int
	b.Eval(`[document.querySelectorAll('#chart-stages rect.share').length, document.querySelectorAll('#chart-step-time polyline').length,
		document.querySelectorAll('#stage-table tr').length, document.querySelectorAll('#config tr').length,
		document.querySelectorAll('#chart-verdicts rect.period').length]`, &counts)
	if len(counts) != 5 || counts[0] < 20 || counts[1] < 2 || counts[2] < 5 || counts[3] < 3 || counts[4] < 1 {
		t.Errorf("stage bands, step lines, stage rows, config rows, verdict periods: %v", counts)
	}

	var at []float64
	if err := b.Eval(`[...document.querySelectorAll('#chart-stages .mark.change[data-stage="data_wait"]')].map(e => parseFloat(e.dataset.atSec))`, &at); err != nil {
		t.Fatal(err)
	}
	t.Logf("data_wait step change marked at %v s, planted at %.3f s; requests: %v", at, want, b.Requests())
	if len(at) != 1 || math.Abs(at[0]-want) > 1 {
		t.Errorf("data_wait step change marked at %v s, planted at %.2f s", at, want)
	}
	var strag []string
	b.Eval(`[...document.querySelectorAll('#chart-ranks .rank-row.straggler')].map(e => e.dataset.rank + ':' + e.textContent.includes('straggler'))`, &strag)
	var rows int
	b.Eval(`document.querySelectorAll('#chart-ranks .rank-row').length`, &rows)
	var verdictRank string
	b.Eval(`document.getElementById('verdict').dataset.stragglerRank || ''`, &verdictRank)
	if rows != 2 || len(strag) != 1 || strag[0] != "1:true" || verdictRank != "1" {
		t.Errorf("heat map: %d rows, straggler rows %v, verdict's straggler %q; want rank 1 of 2 marked", rows, strag, verdictRank)
	}

	shot, err := b.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot)
	if d := os.Getenv("PIPETOP_REPORT_SHOTS"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "report.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if pdf, err := b.PDF(); err != nil || !bytes.HasPrefix(pdf, []byte("%PDF")) {
		t.Errorf("print to PDF: %v (%d bytes)", err, len(pdf))
	}
	for _, u := range b.Requests() {
		if u != url {
			t.Errorf("the report made a request to %s", u)
		}
	}

	checkRequestsSeen(t, b)
}

// checkRequestsSeen is the control of the request check: a page that
// loads an image from a local server shows the request.
func checkRequestsSeen(t *testing.T, b *chromium.Browser) {
	t.Helper()
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	ctl := filepath.Join(t.TempDir(), "control.html")
	if err := os.WriteFile(ctl, []byte(`<!DOCTYPE html><img src="`+srv.URL+`/x.png">`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Open("file://" + ctl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(b.Requests(), " "), srv.URL) {
		t.Errorf("the request check missed the control page's request (server hits %d): %v", hits, b.Requests())
	}
}

// checkScreenshot checks that the PNG is a tall page with colour on it.
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	bd := img.Bounds()
	colours := map[[3]uint32]bool{}
	for y := bd.Min.Y; y < bd.Max.Y; y += 7 {
		for x := bd.Min.X; x < bd.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
		}
	}
	if bd.Dx() != 1280 || bd.Dy() < 2000 || len(colours) < 20 {
		t.Errorf("screenshot %dx%d with %d colours: want a rendered page", bd.Dx(), bd.Dy(), len(colours))
	}
}

// TestBisectReportInABrowser: the page of a constructed bisect --record
// directory, opened in headless Chromium, shows every phase's card, the
// verdict and the hostile strings as text (no script element), links the
// recorded phases to their own reports beside it, renders a screenshot and
// makes no request but the page itself.
func TestBisectReportInABrowser(t *testing.T) {
	t.Parallel()
	dir := bisectDir(t)
	pipetopReport(t, dir)
	rep, err := bisect.ReadReport(filepath.Join(dir, bisect.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	b := browser(t)
	url := "file://" + filepath.Join(dir, "bisect.html")
	if err := b.Open(url); err != nil {
		t.Fatal(err)
	}
	var phases []string
	if err := b.Eval(`[...document.querySelectorAll('#phases section.phase')].map(e => e.dataset.phase + ':' + e.dataset.status)`, &phases); err != nil {
		t.Fatal(err)
	}
	if strings.Join(phases, " ") != "loader:ok cached:skipped forward:failed full:ok" {
		t.Errorf("phase cards %v", phases)
	}
	var shown struct {
		Verdict, Command, Stderr string
		Scripts, Ranks           int
		Links                    []string
		Width                    float64
	}
	err = b.Eval(`({verdict: document.getElementById('verdict').innerText, command: document.getElementById('command').innerText,
		stderr: document.querySelector('#phase-forward pre').innerText, scripts: document.querySelectorAll('script').length,
		ranks: document.querySelectorAll('#phase-full tr.rank').length,
		links: [...document.querySelectorAll('a.phase-report')].map(a => a.href),
		width: document.getElementById('chart-phase-rates').getBoundingClientRect().width})`, &shown)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown.Verdict, rep.Verdict.Headline) || !strings.Contains(shown.Command, bisecttest.Hostile) ||
		!strings.Contains(shown.Stderr, bisecttest.Hostile) || shown.Scripts != 0 || shown.Ranks != 2 || shown.Width < 600 {
		t.Errorf("shown: %+v", shown)
	}
	want := []string{"file://" + filepath.Join(dir, "loader.html"), "file://" + filepath.Join(dir, "full.html")}
	if strings.Join(shown.Links, " ") != strings.Join(want, " ") {
		t.Fatalf("phase links %v, want %v", shown.Links, want)
	}
	shot, err := b.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() != 1280 {
		t.Errorf("screenshot: %v", err)
	}
	if d := os.Getenv("PIPETOP_REPORT_SHOTS"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "bisect-report.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range b.Requests() {
		if u != url {
			t.Errorf("the bisect page made a request to %s", u)
		}
	}
	if err := b.Open(shown.Links[1]); err != nil {
		t.Fatalf("open the full phase's own report: %v", err)
	}
	var charts int
	b.Eval(`document.querySelectorAll('svg.chart').length`, &charts)
	if charts < 3 {
		t.Errorf("the full phase's own report draws %d charts", charts)
	}
}
