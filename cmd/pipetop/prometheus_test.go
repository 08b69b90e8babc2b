package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// requirePrometheus returns the prometheus binary, or skips.
func requirePrometheus(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test with a real Prometheus server")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (Debian package prometheus, see scripts/install-deps.sh)")
	}
	return bin
}

// startProm starts a real Prometheus listening on addr, scraping targets
// every second with a temporary TSDB; prefix runs it (e.g. in a network
// namespace). It waits until the server is ready, asking through ready.
func startProm(t *testing.T, bin, addr string, targets []string, prefix ...string) {
	t.Helper()
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pipetop\n    static_configs:\n      - targets: [" +
		strings.Join(quoted, ", ") + "]\n"
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, prefix...), bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr, "--log.level=warn")
	var log bytes.Buffer
	startCmd(t, &log, nil, args...)
	ready := append(append([]string{}, prefix...), "curl", "-sf", "http://"+addr+"/-/ready")
	deadline := time.Now().Add(20 * time.Second)
	for exec.Command(ready[0], ready[1:]...).Run() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready within 20 s:\n%s", addr, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startCmd starts argv with env added, its output to out, killed and
// waited for at the end of the test.
func startCmd(t *testing.T, out *bytes.Buffer, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", strings.Join(argv, " "), err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// remoteJSON runs pipetop --prometheus URL RUN --json (after prefix) and
// decodes the snapshot; code is its exit status.
func remoteJSON(t *testing.T, prefix []string, bin, url, run string, flags ...string) (s snapshot.Snapshot, stderr string, code int) {
	t.Helper()
	args := append([]string{"--prometheus", url, "--json", "--interval", "1s"}, flags...)
	if run != "" {
		args = append(args, run)
	}
	out, stderr, code := runBin(t, nil, append(append([]string{}, prefix...), bin), args...)
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("--json: %v\n%s", err, out)
		}
	}
	return s, stderr, code
}

// awaitStraggler polls the remote view until its verdict names a
// straggler, for at most d, and fails on a straggler other than want: a
// wrong culprit is worse than none. Its failure quotes *why, get's last error.
func awaitStraggler(t *testing.T, d time.Duration, want int, get func() snapshot.Snapshot, why *string) snapshot.Snapshot {
	t.Helper()
	deadline := time.Now().Add(d)
	var s snapshot.Snapshot
	for time.Now().Before(deadline) {
		s = get()
		if v := s.Verdict; v != nil && v.Kind == verdict.Straggler {
			if v.Rank == nil || *v.Rank != want {
				t.Fatalf("straggler verdict names the wrong rank: %+v (planted: rank %d)", v, want)
			}
			return s
		}
		time.Sleep(time.Second)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	t.Fatalf("no straggler verdict within %s; last error: %s\nlast snapshot:\n%s", d, *why, b)
	return s
}

// TestPrometheusView: two SYNTHETIC ranks of one run (rank 1 planted slow
// in data_wait, the others waiting for it in comm), one real pipetop
// export serving both, a real Prometheus scraping it every second: pipetop
// --prometheus --json reads both ranks back with their host and instance
// and names rank 1 and data_wait. Then the errors: no such run, a server
// that is not there, a URL that is not Prometheus' API.
func TestPrometheusView(t *testing.T) {
	t.Parallel()
	promBin := requirePrometheus(t)
	bin := pipetopBin(t)
	syn := testkit.Bin(t, "synthetic")
	sockets := testkit.SocketDir(t)
	env := []string{ipc.DirEnv + "=" + sockets}
	exporter := freeAddr(t)
	var exportLog bytes.Buffer
	startCmd(t, &exportLog, env, bin, "export", "--listen", exporter, "--interval", "1s", "--no-gpu", "promview")
	// The exporter was started first, as a daemon often is: it waits for the run.
	startCmd(t, nil, env, syn, "-ranks", "2", "-straggler", "1", "-rate", "50", "-run", "promview", "-quiet")
	prom := freeAddr(t)
	startProm(t, promBin, prom, []string{exporter})
	url := "http://" + prom

	var lastErr string
	s := awaitStraggler(t, 40*time.Second, 1, func() snapshot.Snapshot {
		s, stderr, code := remoteJSON(t, nil, bin, url, "promview")
		if code != 0 && !strings.Contains(stderr, "has no run") {
			t.Fatalf("pipetop --prometheus exited %d: %s", code, stderr)
		}
		if lastErr = stderr; lastErr != "" {
			lastErr += "\npipetop export printed:\n" + exportLog.String()
		}
		return s
	}, &lastErr)
	host, _ := os.Hostname()
	if len(s.Ranks) != 2 {
		t.Fatalf("ranks %+v, want 2", s.Ranks)
	}
	for _, r := range s.Ranks {
		if r.Host != host || r.Instance != exporter || r.Link != snapshot.LinkConnected || r.Summary == nil {
			t.Errorf("rank %d: host %q instance %q link %s summary %v; want %s, %s, connected, steps", r.Rank, r.Host, r.Instance, r.Link, r.Summary != nil, host, exporter)
		}
	}
	if v := s.Verdict; v.Stage != "data_wait" {
		t.Errorf("straggler verdict %+v, want rank 1's data_wait", v)
	}
	if s.Remote == nil || s.Remote.URL != url || s.Remote.Run != "promview" || s.Remote.Rank != 0 || len(s.Remote.Unavailable) == 0 {
		t.Errorf("remote %+v", s.Remote)
	}
	if s.Trainer == nil || s.Trainer.Rank == nil || *s.Trainer.Rank != 0 || s.Summary == nil || s.Summary.Stage("comm") == nil {
		t.Errorf("the shown rank: trainer %+v, summary %+v; want rank 0 with a comm stage", s.Trainer, s.Summary)
	}
	t.Logf("%s", s.Verdict.Headline)

	if s1, _, code := remoteJSON(t, nil, bin, url, "promview", "--rank", "1"); code != 0 || s1.Trainer == nil || *s1.Trainer.Rank != 1 {
		t.Errorf("--rank 1: exit %d, trainer %+v; want rank 1 shown", code, s1.Trainer)
	}
	for _, tc := range []struct{ url, run, want string }{
		{url, "nosuch", `has no run "nosuch" (it has: promview)`},
		{"http://" + freeAddr(t), "promview", "unreachable"},
		{"http://" + exporter, "promview", "not a Prometheus API"},
	} {
		_, stderr, code := remoteJSON(t, nil, bin, tc.url, tc.run)
		if code != exitNotAttached || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, tc.url) {
			t.Errorf("--prometheus %s %s: exit %d, %q; want %d and an error naming the URL with %q", tc.url, tc.run, code, stderr, exitNotAttached, tc.want)
		}
	}
}
