package tui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// scenario is a recorded trainer next to fake host readings.
type scenario struct {
	name       string
	recording  string
	cores      int
	gpus       int // fake devices; 0: no driver
	disconnect bool
	table      bool
	color      bool
}

// replay feeds a recording into a model the way the live monitor does:
// frames in five slices, one collect after each, on a fixed clock that
// follows the recorded step times and ends 100 ms after the last step.
func replay(t testing.TB, sc scenario) *Model {
	t.Helper()
	hello, frames := loadFrames(t, sc.recording)
	f := feed.New(0)
	ep := ipc.Endpoint{Path: "/run/user/1000/pipetop/" + ipc.SocketName(hello.Name, hello.PID), Name: hello.Name, PID: hello.PID}
	end := lastEnd(frames).Add(100 * time.Millisecond)
	const slices = 5
	step := end.Sub(firstStart(frames)) / slices
	col := monitor.NewSnapshotter(f, fakeSources(sc.cores, sc.gpus)...)
	w := monitor.Windows[1]
	var snap snapshot.Snapshot
	f.Apply(ipc.Message{Connected: &hello, Endpoint: ep}, end.Add(-slices*step))
	for i := range slices {
		lo, hi := i*len(frames)/slices, (i+1)*len(frames)/slices
		for _, fr := range frames[lo:hi] {
			f.Apply(ipc.Message{Frame: fr, Endpoint: ep}, end)
		}
		snap = col.Snapshot(end.Add(time.Duration(i+1-slices)*step), w)
	}
	if sc.disconnect {
		f.Apply(ipc.Message{Endpoint: ep, Disconnected: fmt.Errorf("trainer %s: EOF", ep.Path)}, end.Add(-2*time.Second))
		snap = col.Snapshot(end, w)
	}
	m := New(Options{Snapshotter: col, Styles: styles.New(sc.color), Interval: time.Second, Window: 1, Signaler: &fakeSignals{}})
	m.showTab = sc.table
	m.SetSnapshot(&snap)
	return m
}

var scenarios = []scenario{
	{name: "input_bound_h100", recording: "input_bound", cores: 8, gpus: 1},
	{name: "cpu_only_nodriver", recording: "cpu_only", cores: 2},
	{name: "many_cores_table", recording: "input_bound", cores: 128, gpus: 1, table: true},
	{name: "disconnected", recording: "input_bound", cores: 4, disconnect: true},
	{name: "eight_gpus_mig", recording: "input_bound", cores: 32, gpus: 8},
}

var sizes = [][2]int{{80, 24}, {120, 40}, {40, 12}}

func TestGoldenViews(t *testing.T) {
	for _, sc := range scenarios {
		for _, sz := range sizes {
			name := fmt.Sprintf("%s_%dx%d", sc.name, sz[0], sz[1])
			t.Run(name, func(t *testing.T) {
				m := replay(t, sc)
				got := m.Render(sz[0], sz[1])
				checkSize(t, got, sz[0], sz[1])
				golden(t, name+".txt", got)
			})
		}
	}
}

// TestGoldenColor pins the coloured rendering at one size.
func TestGoldenColor(t *testing.T) {
	sc := scenarios[0]
	sc.color = true
	m := replay(t, sc)
	got := m.Render(120, 40)
	if !strings.Contains(got, "\x1b[") {
		t.Fatal("colour rendering has no escape sequences")
	}
	checkSize(t, got, 120, 40)
	golden(t, "input_bound_h100_120x40.ansi", got)
}

// TestGoldenOnce pins the --once text: every pane at its preferred height.
func TestGoldenOnce(t *testing.T) {
	m := replay(t, scenarios[0])
	got := m.Render(100, -1)
	for _, want := range []string{"data_wait", "GPU idle", "input-bound", "SM 63 % (GPM)", "busy 100 % (kernel-active)", "c7"} {
		if !strings.Contains(got, want) {
			t.Errorf("--once text lacks %q", want)
		}
	}
	golden(t, "input_bound_h100_once.txt", got)
}

// checkSize asserts exactly h lines of exactly w cells.
func checkSize(t *testing.T, got string, w, h int) {
	t.Helper()
	lines := strings.Split(got, "\n")
	if len(lines) != h {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := draw.Width(l); n != w {
			t.Errorf("line %d is %d cells wide, want %d: %q", i, n, w, l)
		}
	}
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (regenerate with -update): %v", err)
	}
	if string(want) != got {
		t.Errorf("view differs from %s (regenerate with -update if intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
