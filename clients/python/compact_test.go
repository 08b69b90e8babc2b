package pypublish_test

import (
	"bufio"
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
)

// compactScript steps for four seconds with the DataLoader statistics
// sampler publishing every 0.2 s, as pipetop run's does (its iterator and
// workers stood in for: two workers a quarter and half busy).
const compactScript = `
import sys, time, types
sys.path.insert(0, sys.argv[1])
from pipetop_publish import Publisher, workers
pub = Publisher("py-compact", stages=["data_wait", "forward"])
info = workers.IterInfo(types.SimpleNamespace(num_workers=2, batch_size=64, prefetch_factor=2, pin_memory=True))
info.busy = lambda now: [(now - info.created) // 4, (now - info.created) // 2]
sampler = workers.Sampler(pub, lambda: (object(), info), interval=0.2)
sampler.start()
end = time.time() + 4
i = 0
while time.time() < end:
    with pub.stage("data_wait"):
        time.sleep(0.002)
    with pub.stage("forward"):
        time.sleep(0.003)
    info.batches += 1
    pub.step(samples=64)
    i += 1
sampler.stop()
pub.close()
`

// TestPythonFramesDecodeFast: the loader and progress frames the Python
// publisher sends are in the form viewers decode without encoding/json
// (ipc.Compact), as the Go server's are (ipc's TestFastFlatFrames). A
// viewer of a rank shown in brief (agg-brief) is sent no loader frame: it
// keeps no loader statistics.
func TestPythonFramesDecodeFast(t *testing.T) {
	dir := testkit.SocketDir(t)
	l := startScript(t, dir, compactScript)
	ep := l.endpoint(t, dir, "py-compact")
	full, brief := make(chan map[string]int, 1), make(chan map[string]int, 1)
	go func() { full <- readFrames(t, ep.Path, `"progress","agg"`) }()
	go func() { brief <- readFrames(t, ep.Path, `"agg","agg-brief"`) }()
	if seen := <-full; seen[ipc.TypeLoader] == 0 || seen[ipc.TypeProgress] == 0 {
		t.Errorf("frames by type %v: want loader and progress frames\n%s", seen, &l.stderr)
	}
	if seen := <-brief; seen[ipc.TypeLoader] > 1 || seen[ipc.TypeAgg] == 0 {
		// One loader frame may come before the hello is read: the latest, sent on connecting.
		t.Errorf("frames to a viewer in brief by type %v: want agg frames and no loader frame after the first", seen)
	}
}

// readFrames reads the frames a viewer whose hello accepts accepts (JSON
// strings, comma-separated) is sent until the trainer closes, checks that
// each is in the compact form, and counts them by type.
func readFrames(t *testing.T, path, accepts string) map[string]int {
	seen := map[string]int{}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Error(err)
		return seen
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"type":"hello","v":1,"hello":{"role":"viewer","accepts":[` + accepts + `]}}` + "\n")); err != nil {
		t.Error(err)
		return seen
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, ipc.MaxFrame)
	for sc.Scan() {
		line := sc.Bytes()
		f, err := ipc.DecodeFrame(line)
		if err != nil {
			t.Errorf("frame %q: %v", line, err)
			return seen
		}
		seen[f.Type]++
		if (f.Type == ipc.TypeLoader || f.Type == ipc.TypeProgress || f.Type == ipc.TypeAgg) && !ipc.Compact(line) {
			t.Errorf("the Python %s frame is not in the compact form:\n%s", f.Type, line)
		}
		if f.Type == ipc.TypeLoader && !bytes.Contains(line, []byte(`"worker_busy_each":[0.`)) {
			t.Errorf("a loader frame without the workers' busy shares: %s", line)
		}
	}
	return seen
}
