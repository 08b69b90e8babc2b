package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/export/scrapetest"
	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
)

func TestParseExport(t *testing.T) {
	tests := []struct {
		args     []string
		spec     string
		listen   string
		interval time.Duration
		window   string
	}{
		{[]string{"export"}, "", "127.0.0.1:9464", 5 * time.Second, "30s"},
		{[]string{"export", "demo", "--listen", ":9100", "--interval", "1s", "--window", "2m"}, "demo", ":9100", time.Second, "2m"},
		{[]string{"export", "--no-gpu", "4242"}, "4242", "127.0.0.1:9464", 5 * time.Second, "30s"},
	}
	for _, tt := range tests {
		c, err := parse(tt.args, io.Discard)
		if err != nil {
			t.Errorf("parse(%q): %v", tt.args, err)
			continue
		}
		if c.cmd != "export" || c.Spec != tt.spec || c.listen != tt.listen || c.Interval != tt.interval ||
			monitor.Windows[c.Window].Label != tt.window {
			t.Errorf("parse(%q) = %+v, want spec %q listen %q interval %v window %s", tt.args, c, tt.spec, tt.listen, tt.interval, tt.window)
		}
	}
}

func TestParseExportErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"export", "a", "b"}, "export takes at most one trainer"},
		{[]string{"export", "--once"}, "--once is not for pipetop export"},
		{[]string{"export", "--json"}, "--json is not for pipetop export"},
		{[]string{"export", "--listen", "127.0.0.1"}, `--listen "127.0.0.1": want host:port`},
		{[]string{"export", "--listen", ""}, `--listen "": want host:port`},
		{[]string{"--listen", ":9464"}, "--listen is for pipetop export"},
		{[]string{"export", "--interval", "10ms"}, "--interval 10ms"},
	}
	for _, tt := range tests {
		_, err := parse(tt.args, io.Discard)
		var ue cli.UsageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%q) = %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestExportBadListen: an address that cannot be listened on is an error
// naming the flag and the address, before anything is served.
func TestExportBadListen(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct{ listen, want string }{
		{"127.0.0.1:99999", "invalid port"},
		{busy.Addr().String(), "address already in use"},
	}
	for _, tt := range tests {
		err := run(context.Background(), []string{"export", "--no-gpu", "--listen", tt.listen}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--listen "+tt.listen) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("export --listen %s: %v, want an error naming the address and %q", tt.listen, err, tt.want)
		}
	}
}

// TestExportSynthetic runs pipetop export (its real wiring, in-process)
// against the synthetic publisher in its own process, scrapes /metrics
// over HTTP, then kills the publisher and starts it again.
func TestExportSynthetic(t *testing.T) {
	bin := testkit.BinDir(t)
	sockets := t.TempDir()
	t.Setenv(ipc.DirEnv, sockets)
	pub := startSynthetic(t, bin, sockets)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"export", "--no-gpu", "--listen", "127.0.0.1:0", "--interval", "100ms", "--window", "5s"}, io.Discard, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no serving line on stderr: %v (run: %v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "pipetop: serving ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("stderr line %q, want pipetop: serving http://127.0.0.1:PORT/metrics", line)
	}

	id := map[string]string{"trainer": "exp", "rank": "1", "run": "r"}
	m := scrapetest.Until(t, url, "an input-bound verdict, loader statistics and 150 steps", func(m scrapetest.Families) bool {
		v, _ := m.Value("pipetop_trainer_steps_total", id)
		return m.Is("pipetop_verdict", with(id, "kind", string(verdict.InputBound), "stage", stage.DataWait), 1) &&
			m.Has("pipetop_loader_worker_busy_ratio", id) && v >= 150
	})
	if !m.Is("pipetop_trainer_info", with(id, "pid", strconv.Itoa(pub.Process.Pid), "world_size", "2"), 1) {
		t.Errorf("pipetop_trainer_info{pid=%d, world_size=2} missing", pub.Process.Pid)
	}
	steps, _ := m.Value("pipetop_trainer_steps_total", id)
	for _, st := range []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Optim, stage.Other} {
		if !m.Has("pipetop_trainer_stage_seconds_total", with(id, "stage", st, "clock", "cpu")) {
			t.Errorf("pipetop_trainer_stage_seconds_total{stage=%q,clock=cpu} missing", st)
		}
	}
	if v, ok := m.Value("pipetop_trainer_stage_seconds_total", with(id, "stage", stage.DataWait, "clock", "cpu")); !ok || v/steps < 0.0054 || v/steps > 0.0066 {
		t.Errorf("data_wait %v s over %v steps, want about 6 ms each", v, steps)
	}
	if v, ok := m.Value("pipetop_trainer_stage_seconds_total", with(id, "stage", stage.Forward, "clock", "gpu")); !ok || v/steps < 0.00135 || v/steps > 0.00165 {
		t.Errorf("forward GPU %v s over %v steps, want about 1.5 ms each", v, steps)
	}
	if !m.Has("pipetop_host_cpu_busy_ratio", map[string]string{"cpu": "0", "source": "proc_stat"}) {
		t.Error("pipetop_host_cpu_busy_ratio{cpu=0} missing")
	}

	testkit.Stop(pub)
	scrapetest.Until(t, url, "connected 0 after the publisher died", func(m scrapetest.Families) bool {
		return m.Is("pipetop_trainer_connected", id, 0) && !m.Has("pipetop_verdict", nil)
	})
	pub = startSynthetic(t, bin, sockets)
	// The same series go on for the new process, from zero: a counter
	// reset (below the 150 steps of the first process), with a new pid.
	scrapetest.Until(t, url, "the restarted publisher", func(m scrapetest.Families) bool {
		v, ok := m.Value("pipetop_trainer_steps_total", id)
		return m.Is("pipetop_trainer_connected", id, 1) && ok && v > 0 && v < steps &&
			m.Has("pipetop_trainer_info", with(id, "pid", strconv.Itoa(pub.Process.Pid)))
	})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("export after cancel: %v", err)
	}
}

func startSynthetic(t *testing.T, bin, sockets string) *exec.Cmd {
	t.Helper()
	return testkit.Start(t, sockets, filepath.Join(bin, "synthetic"), "-name", "exp", "-rate", "150", "-quiet", "-rank", "1", "-world-size", "2", "-run", "r",
		"-stages", "data_wait=6ms,h2d=0.5ms,forward=2ms,backward=1ms,optim=0.4ms,other=0s", "-gpu", "forward=1.5ms,backward=0.8ms")
}

// with returns labels plus the given name/value pairs.
func with(labels map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestExportWaitsForNamedRun: pipetop export NAME started before the run
// says it is waiting and goes on looking; once the run appears it serves
// the run's metrics, and a stop while waiting is a clean exit.
func TestExportWaitsForNamedRun(t *testing.T) {
	bin := testkit.BinDir(t)
	sockets := t.TempDir()
	t.Setenv(ipc.DirEnv, sockets)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"export", "--no-gpu", "--listen", "127.0.0.1:0", "--interval", "100ms", "r"}, io.Discard, pw)
		pw.Close()
	}()
	lines := bufio.NewReader(pr)
	waiting, err := lines.ReadString('\n')
	if err != nil || !strings.Contains(waiting, `pipetop export: waiting: no live trainer named or with pid "r" in `+sockets) {
		t.Fatalf("first stderr line %q (%v), want the waiting line naming r and %s", waiting, err, sockets)
	}
	time.Sleep(3 * monitor.AwaitEvery) // still waiting, not exited
	select {
	case err := <-done:
		t.Fatalf("export returned while waiting: %v", err)
	default:
	}
	startSynthetic(t, bin, sockets)
	serving, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("no serving line after the run appeared: %v", err)
	}
	go io.Copy(io.Discard, pr)
	url, _ := strings.CutPrefix(strings.TrimSpace(serving), "pipetop: serving ")
	scrapetest.Until(t, url, "the run that appeared", func(m scrapetest.Families) bool {
		return m.Is("pipetop_trainer_connected", map[string]string{"trainer": "exp", "rank": "1", "run": "r"}, 1)
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("export after cancel: %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 2*monitor.AwaitEvery)
	defer cancel()
	if err := run(ctx, []string{"export", "--no-gpu", "--listen", "127.0.0.1:0", "nosuch"}, io.Discard, io.Discard); err != nil {
		t.Errorf("export stopped while waiting: %v, want a clean exit", err)
	}
}
