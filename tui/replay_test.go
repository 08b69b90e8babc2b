package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
)

var record = flag.Bool("record", false, "re-record testdata/*.jsonl from the synthetic publisher (examples/synthetic)")

// recording is one capture of the synthetic publisher.
type recording struct {
	name string
	args []string
}

// recordings are the frame captures the golden tests replay.
var recordings = []recording{
	{"input_bound", []string{"-rate", "200", "-stages", "data_wait=6ms,h2d=0.5ms,forward=2ms,backward=1ms,optim=0.4ms,sync=0.1ms,other=0s", "-gpu", "forward=1ms,backward=1.5ms,optim=0.2ms"}},
	{"cpu_only", []string{"-rate", "200", "-stages", "data_wait=0.4ms,forward=5ms,backward=3ms,optim=1ms,augment=0.8ms,other=0s"}},
}

// TestRecord captures frames from a real synthetic publisher over a real
// socket into testdata/NAME.jsonl; it runs only with -record.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record testdata/*.jsonl")
	}
	bin := testkit.Bin(t, "synthetic")
	for _, r := range recordings {
		recordOne(t, bin, r)
	}
}

func recordOne(t *testing.T, bin string, r recording) {
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"-name", r.name, "-quiet"}, r.args...)...)
	cmd.Env = append(os.Environ(), ipc.DirEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var ep ipc.Endpoint
	for i := 0; ; i++ {
		eps, _ := ipc.ListDir(dir)
		if len(eps) == 1 {
			ep = eps[0]
			break
		}
		if i > 100 {
			t.Fatalf("synthetic publisher %s did not come up", r.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := ipc.Dial(ctx, ep.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := conn.Hello()
	lines := []any{ipc.Frame{Type: ipc.TypeHello, V: ipc.Version, Hello: &h}}
	stop := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(stop) {
		f, err := conn.Next()
		if err != nil {
			t.Fatalf("read %s: %v", r.name, err)
		}
		lines = append(lines, f)
	}
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join("testdata", r.name+".jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadFrames reads a recording: a hello frame, then the frames as received.
func loadFrames(t testing.TB, name string) (ipc.Hello, []*ipc.Frame) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatalf("open recording (re-record with -record): %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, ipc.MaxFrame)
	var hello *ipc.Hello
	var frames []*ipc.Frame
	for n := 1; sc.Scan(); n++ {
		fr, err := ipc.DecodeFrame(sc.Bytes())
		if err != nil {
			t.Fatalf("%s.jsonl line %d: %v", name, n, err)
		}
		if fr.Type == ipc.TypeHello {
			hello = fr.Hello
			continue
		}
		frames = append(frames, fr)
	}
	if hello == nil {
		t.Fatalf("%s.jsonl: no hello frame", name)
	}
	return *hello, frames
}

// lastEnd is the end time of the newest step in frames.
func lastEnd(frames []*ipc.Frame) time.Time {
	var t1 int64
	for _, f := range frames {
		for _, s := range f.Steps {
			t1 = max(t1, s.EndNs)
		}
	}
	return time.Unix(0, t1)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// firstStart is the start time of the oldest step in frames.
func firstStart(frames []*ipc.Frame) time.Time {
	t0 := int64(1<<63 - 1)
	for _, f := range frames {
		for _, s := range f.Steps {
			t0 = min(t0, s.StartNs)
		}
	}
	return time.Unix(0, t0)
}
