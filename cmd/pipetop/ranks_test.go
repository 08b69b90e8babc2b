package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestStragglerNamedByJSON runs the synthetic publisher as a simulated run
// of two ranks (two processes, two sockets) with rank 1 planted as the
// straggler, and checks that pipetop ls groups them and that pipetop
// attach NAME --json attaches both and names rank 1 and its stage.
func TestStragglerNamedByJSON(t *testing.T) {
	bin := testkit.BinDir(t)
	sockets := t.TempDir()
	t.Setenv(ipc.DirEnv, sockets)
	pub := exec.Command(filepath.Join(bin, "synthetic"), "-name", "dp", "-rate", "100", "-quiet", "-ranks", "2", "-run", "r2",
		"-straggler", "1", "-straggle", "8ms", "-stages", "data_wait=1ms,h2d=0.5ms,forward=2ms,backward=1ms,optim=0.4ms,other=0s")
	pub.Env = append(os.Environ(), ipc.DirEnv+"="+sockets)
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { pub.Process.Signal(os.Interrupt); pub.Wait() }()
	ls := waitRanks(t, 2)
	for i, l := range ls {
		if l.Run != "r2" || l.Rank == nil || *l.Rank != i || l.WorldSize != 2 || l.Name != fmt.Sprintf("dp-rank%d", i) {
			t.Fatalf("ls entry %d: %+v", i, l)
		}
	}

	var out bytes.Buffer
	if err := run(context.Background(), []string{"attach", "dp", "--json", "--interval", "700ms", "--no-gpu"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Ranks) != 2 {
		t.Fatalf("ranks %+v, want 2", s.Ranks)
	}
	host, _ := os.Hostname()
	for i, r := range s.Ranks {
		if r.Rank != i || r.PID != ls[i].PID || r.Host != host || r.Link != snapshot.LinkConnected || r.Summary == nil || r.Verdict == nil {
			t.Errorf("rank %d: %+v", i, r)
		}
	}
	v := s.Verdict
	if v == nil || v.Kind != verdict.Straggler || v.Rank == nil || *v.Rank != 1 || v.Stage != stage.DataWait {
		t.Fatalf("verdict %+v, want straggler rank 1 in data_wait", v)
	}
	if !strings.Contains(v.Headline, "straggler: rank 1 (pid ") || !strings.Contains(v.Headline, "its data_wait is") || !strings.Contains(v.Headline, "wait for it in comm") {
		t.Errorf("headline %q", v.Headline)
	}
	if !strings.Contains(out.String(), `"rank": 1,`) {
		t.Error("--json lacks the verdict's rank")
	}

	// Text listing: one run, both ranks.
	out.Reset()
	if err := run(context.Background(), []string{"ls"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RUN", "r2", "0/2", "1/2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ls lacks %q:\n%s", want, out.String())
		}
	}
}

// waitRanks waits until n ranks are listed, for at most 10 s.
func waitRanks(t *testing.T, n int) []monitor.Listed {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls, err := monitor.List(context.Background(), time.Second)
		if err == nil && len(ls) == n && ls[n-1].Run != "" {
			return ls
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %d ranks: listed %+v (%v)", n, ls, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
