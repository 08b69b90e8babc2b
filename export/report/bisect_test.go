package report

import (
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect/bisecttest"
)

// constructedPage is the page of the constructed bisect report, the full phase
// linked to its own report.
func constructedPage(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	b := Bisect{File: "constructed/bisect.json", Report: bisecttest.Constructed(600), Links: map[string]string{verdict.PhaseFull: "full.html"}}
	if err := WriteBisect(&sb, b); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// phaseSection is the card of phase name on page.
func phaseSection(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<section class="phase[^"]*" id="phase-` + name + `".*?</section>`).FindString(page)
	if m == "" {
		t.Fatalf("no card of phase %s", name)
	}
	return m
}

// TestBisectPage: the constructed report's page has a card per phase with
// its figures, the failed phase's exit status and stderr in a <pre>, the
// skipped phase's reason, the full phase's two ranks and its link, the
// verdict on top and the samples/s chart.
func TestBisectPage(t *testing.T) {
	page := constructedPage(t)
	r := bisecttest.Constructed(600)
	if !strings.Contains(page, template.HTMLEscapeString(r.Verdict.Headline)) || !strings.Contains(page, `id="verdict"`) {
		t.Errorf("page lacks the verdict %q", r.Verdict.Headline)
	}
	if i, j := strings.Index(page, `id="verdict"`), strings.Index(page, `id="phases"`); i < 0 || j < i {
		t.Error("the verdict is not above the phases")
	}
	for _, want := range []string{bisecttest.Host, "2026-12-06 04:00:00 UTC", "20 s", "python3 train.py", `id="chart-phase-rates"`, "Content-Security-Policy"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	loader := phaseSection(t, page, verdict.PhaseLoader)
	for _, want := range []string{"1,280", "90 % of 4", "3.2×", "2.5", `class="share st-data_wait"`, "zarr", "data/camera0 chunks [4 32 32 3], 1000 reads (1.0 frames each), read amplification 3.2x"} {
		if !strings.Contains(loader, want) {
			t.Errorf("loader card lacks %q", want)
		}
	}
	if cached := phaseSection(t, page, verdict.PhaseCached); !strings.Contains(cached, `data-status="skipped"`) || !strings.Contains(cached, "no DataLoader was seen") {
		t.Errorf("skipped card:\n%s", cached)
	}
	forward := phaseSection(t, page, verdict.PhaseForward)
	if !strings.Contains(forward, "exit status 1") || !regexp.MustCompile(`(?s)<pre>Traceback.*CUDA out of memory.*</pre>`).MatchString(forward) {
		t.Errorf("failed card lacks its exit status or stderr:\n%s", forward)
	}
	full := phaseSection(t, page, verdict.PhaseFull)
	if n := strings.Count(full, `<tr class="rank"`); n != 2 || !strings.Contains(full, `href="full.html"`) || !strings.Contains(full, "60 %") {
		t.Errorf("full card: %d rank rows, want 2, a link to full.html and GPU busy 60 %%:\n%s", n, full)
	}
	if n := strings.Count(page, `class="phase-rate"`); n != 4 {
		t.Errorf("%d bars in the samples/s chart, want 4", n)
	}
}

// TestBisectPageEscapes: the hostile strings of the command, notes, stderr
// and a rank's verdict are text on the page, and the page loads nothing.
func TestBisectPageEscapes(t *testing.T) {
	page := constructedPage(t)
	for _, bad := range []string{"<script", "http://", "https://", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	if n := strings.Count(page, "&lt;script&gt;"); n < 5 {
		t.Errorf("the hostile string shows %d times escaped, want in the command, title, notes, stderr and the rank's verdict", n)
	}
}

// TestStageColoursShared: a stage has the same colour class on the bisect
// page and in the run report's stage chart, whatever its place in the
// stage list; custom stages take the palette.
func TestStageColoursShared(t *testing.T) {
	a := stageClasses([]string{"forward", "data_wait", "mine", "other"})
	b := stageClasses([]string{"data_wait", "h2d", "forward", "theirs", "mine"})
	if a["forward"] != b["forward"] || a["data_wait"] != "st-data_wait" || a["mine"] != "c0" || b["mine"] != "c1" {
		t.Errorf("colour classes %v and %v", a, b)
	}
	if css := string(stageCSS()); !strings.Contains(css, ".st-data_wait { fill: #E5734B;") {
		t.Errorf("stage CSS lacks data_wait's flame colour:\n%s", css)
	}
}
