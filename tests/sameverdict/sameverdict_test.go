// Package sameverdict checks that a run gets the same verdict whichever
// way pipetop judges it: live (the recording played back through the feed
// and snapshotter, as the screen and --json judge a window), a
// recording's summary over time (its last window) and over the whole run
// (pipetop summary), and the end-of-run summary pipetop run printed
// (the run summary file with what pipetop run kept). Every path builds
// its inputs through monitor/judge; this test holds them to it on real
// runs.
//
// The runs in testdata were recorded once from the plants of
// examples/auto by `go test ./tests/sameverdict -update` (under
// flock /tmp/pipetop-timing.lock: it runs each plant under pipetop run
// --record, as tests/diagnosis's TestCPUVerdictsAtTheEnd,
// TestPeriodicPauses and TestDriftAtTheEnd run them live).
package sameverdict

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/replay"
	"github.com/pipetop/pipetop/monitor/summary"
)

var update = flag.Bool("update", false, "record the runs of testdata again from their plants (pipetop run --record; run under the timing lock)")

// python is Debian's Python, with torch.
const python = "/usr/bin/python3"

// plant is a run of a script of examples/auto with one bottleneck, and
// the verdict every path must give it.
type plant struct {
	name   string
	cpus   float64 // the run's CPU quota; 0: none
	env    []string
	script string
	args   []string
	want   verdict.Kind
	stage  string
}

var plants = []plant{
	{name: "throttled", cpus: 0.3, script: "threads.py", args: []string{"--threads", "4", "--seconds", "14"}, want: verdict.Throttled},
	{name: "oversubscribed", script: "threads.py", args: []string{"--threads", "2", "--workers", "2", "--worker-threads", "1", "--seconds", "12"},
		want: verdict.Oversubscribed},
	{name: "pause", script: "metrics_push.py", args: []string{"--steps", "1400"}, want: verdict.Untimed, stage: "other"},
	// Storage that slows down 9 s into a 26 s run (data_wait from 0.4 ms
	// to 12 ms a step): drift in data_wait live and at the end, where the
	// run's newest steps are judged against its first minutes from the
	// summary's timeline (the whole run's means once read input-bound).
	// The live drift plant is tests/diagnosis's go/drift in data_wait.
	{name: "drift", script: "slowing_loader.py", want: verdict.Drift, stage: "data_wait"},
}

// TestSameVerdict judges each recorded run live, over time, over the
// whole recording and from its end-of-run summary, and wants one verdict.
func TestSameVerdict(t *testing.T) {
	if *update {
		record(t)
	}
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			rec, sum := filepath.Join("testdata", p.name+".pipetop"), filepath.Join("testdata", p.name+".summary.json")
			got := map[string]verdict.Verdict{"live": live(t, rec)}
			r, err := summary.FromFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			got["recording, whole run"] = r.Verdict
			if n := len(r.Verdicts); n > 0 {
				last := r.Verdicts[n-1]
				got["recording, over time"] = verdict.Verdict{Kind: last.Kind, Stage: last.Stage, Headline: last.Headline}
			}
			s, err := summary.ReadScript(sum)
			if err != nil {
				t.Fatal(err)
			}
			got["end of pipetop run"] = s.Judge()
			for path, v := range got {
				t.Logf("%s: %s", path, v.Headline)
				if v.Kind != p.want || v.Stage != p.stage {
					t.Errorf("%s: %s (%s), want %s (%s)", path, v.Kind, v.Headline, p.want, p.stage)
				}
			}
			if len(got) != 4 {
				t.Errorf("judged by %d paths, want 4: %v", len(got), got)
			}
		})
	}
}

// live is the verdict the live view showed at the end of the recorded
// run: the recording played back through the feed and the snapshotter to
// its last steps (the host readings of the last refresh while the trainer
// trained), over the view's default window.
func live(t *testing.T, path string) verdict.Verdict {
	t.Helper()
	_, es, err := recording.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, e := range es {
		if e.Frame != nil && e.Frame.Type == ipc.TypeSteps {
			last = e.T
		}
	}
	p, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.SetPaused(true)
	p.SeekTo(last)
	s := p.Snapshot(monitor.Windows[0])
	if s.Verdict == nil {
		t.Fatalf("%s: no live verdict at %v", path, last)
	}
	return *s.Verdict
}

// record runs every plant under pipetop run --record and keeps the
// recording and the end-of-run summary pipetop run wrote in testdata.
func record(t *testing.T) {
	pipetop := testkit.Bin(t, "pipetop")
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range plants {
		rec := filepath.Join("testdata", p.name+".pipetop")
		dir := t.TempDir()
		script, err := filepath.Abs(filepath.Join("../../examples/auto", p.script))
		if err != nil {
			t.Fatal(err)
		}
		argv := append([]string{pipetop, "run", "--no-tui", "--json", "--record", rec, "--", python, script}, p.args...)
		if p.cpus > 0 {
			cg, _ := testkit.CPUQuotaCgroup(t, p.cpus)
			argv = append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+dir, "PIPETOP_SUMMARY_DIR="+dir, "PYTHONDONTWRITEBYTECODE=1")
		cmd.Env = append(cmd.Env, p.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", p.name, err, out)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "pipetop-summary-*.json"))
		if len(files) != 1 {
			t.Fatalf("%s: summaries %v, want one", p.name, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", p.name+".summary.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "recorded %s: %s\n", p.name, strings.Join(argv, " "))
	}
}
