package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// netHost is one network namespace of the two-host test: its name, veth
// end, address and host name (set in a UTS namespace of its own for each
// process started in it).
type netHost struct {
	ns, dev, addr, hostname string
}

// in prefixes a command so it runs on h: in its network namespace, under
// its host name.
func (h netHost) in(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", h.ns, "unshare", "--uts", "sh", "-c",
		`hostname "$0" && exec "$@"`, h.hostname}, argv...)
}

// makeHosts makes two network namespaces joined by a veth pair, with
// addresses chosen here and present only inside them, and removes them
// (and so the pair) at the end of the test. It skips where namespaces
// cannot be made.
func makeHosts(t *testing.T) [2]netHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("two-host test: needs root to make network namespaces (ip netns); skipping")
	}
	for _, tool := range []string{"ip", "unshare", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("two-host test: %s not found; skipping", tool)
		}
	}
	id := os.Getpid() % 100000
	subnet := fmt.Sprintf("10.%d.%d", 200+id%50, id%250)
	hosts := [2]netHost{
		{fmt.Sprintf("pipetop-%d-a", id), fmt.Sprintf("pt%da", id), subnet + ".1", "pipetop-host-a"},
		{fmt.Sprintf("pipetop-%d-b", id), fmt.Sprintf("pt%db", id), subnet + ".2", "pipetop-host-b"},
	}
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", hosts[0].ns); err != nil {
		t.Skipf("two-host test: cannot make a network namespace here (%v); skipping", err)
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			exec.Command("ip", "netns", "del", h.ns).Run()
		}
	})
	steps := [][]string{
		{"netns", "add", hosts[1].ns},
		{"link", "add", hosts[0].dev, "type", "veth", "peer", "name", hosts[1].dev},
	}
	for _, h := range hosts {
		steps = append(steps, []string{"link", "set", h.dev, "netns", h.ns},
			[]string{"-n", h.ns, "addr", "add", h.addr + "/24", "dev", h.dev},
			[]string{"-n", h.ns, "link", "set", "lo", "up"},
			[]string{"-n", h.ns, "link", "set", h.dev, "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Fatal(err)
		}
	}
	return hosts
}

// shimPath is the built libpipetorch.so, or a skip.
func shimPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("PIPETOP_SHIM"), filepath.Join(testkit.Root(t), "build", "torch", "libpipetorch.so")} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	t.Skip("libpipetorch.so not built (make build builds it)")
	return ""
}

// TestTwoHosts: two network namespaces joined by a veth pair stand for
// two hosts. Each runs one rank of a real 2-rank pipetrain job (c10d
// Gloo across the pair; rank 1 planted slow in forward with 8x the batch)
// and one pipetop export; a real Prometheus in the first namespace
// scrapes both exporters every second. pipetop --prometheus --json shows
// both ranks with their host names and names rank 1 and forward; the
// screen (in tmux) shows the same.
func TestTwoHosts(t *testing.T) {
	t.Parallel()
	promBin := requirePrometheus(t)
	hosts := makeHosts(t)
	shim := shimPath(t)
	bin := pipetopBin(t)
	dir := t.TempDir()
	train := testkit.Bin(t, "pipetrain")
	data := filepath.Join(dir, "d.zarr")
	if out, err := exec.Command(train, "data", "gen", "--out", data, "--episodes", "4", "--frames", "40").CombinedOutput(); err != nil {
		t.Fatalf("data gen: %v\n%s", err, out)
	}
	logs := make([]*bytes.Buffer, 4)
	var targets []string
	sockets := make([]string, 2)
	for i, h := range hosts {
		sockets[i] = filepath.Join(dir, fmt.Sprintf("sockets-%d", i))
		env := []string{"PIPETOP_SOCKET_DIR=" + sockets[i], fmt.Sprintf("RANK=%d", i), "WORLD_SIZE=2", "MASTER_ADDR=" + hosts[0].addr,
			"MASTER_PORT=29528", "GLOO_SOCKET_IFNAME=" + h.dev, "TORCHELASTIC_RUN_ID=two-hosts"}
		batch := map[int]string{0: "2", 1: "16"}[i] // rank 1: 8x the forward and backward work
		logs[i] = &bytes.Buffer{}
		startCmd(t, logs[i], env, h.in(train, "train", "--data", data, "--preset", "tiny", "--batch", batch, "--threads", "1",
			"--workers", "1", "--shim", shim, "--log-every", "5", "--dist-timeout", "60s", "--max-steps", "2000", "--name", "twohost")...)
	}
	for i, h := range hosts {
		awaitRankSocket(t, sockets[i], logs[i])
		logs[2+i] = &bytes.Buffer{}
		listen := h.addr + ":9464"
		startCmd(t, logs[2+i], []string{"PIPETOP_SOCKET_DIR=" + sockets[i]},
			h.in(bin, "export", "--listen", listen, "--interval", "1s", "--no-gpu", "twohost")...)
		targets = append(targets, listen)
	}
	defer func() {
		if t.Failed() {
			for i, l := range logs {
				t.Logf("process %d:\n%s", i, l.String())
			}
		}
	}()
	a := []string{"ip", "netns", "exec", hosts[0].ns}
	prom := hosts[0].addr + ":9090"
	startProm(t, promBin, prom, targets, a...)
	url := "http://" + prom

	var lastErr string
	s := awaitStraggler(t, 120*time.Second, 1, func() snapshot.Snapshot {
		s, stderr, _ := remoteJSON(t, a, bin, url, "two-hosts", "--window", "30s")
		lastErr = stderr
		return s
	}, &lastErr)
	want := map[int]netHost{0: hosts[0], 1: hosts[1]}
	if len(s.Ranks) != 2 {
		t.Fatalf("ranks %+v, want 2", s.Ranks)
	}
	for _, r := range s.Ranks {
		h := want[r.Rank]
		if r.Host != h.hostname || r.Instance != h.addr+":9464" || r.Link != snapshot.LinkConnected {
			t.Errorf("rank %d: host %q instance %q link %s; want %s, %s:9464, connected", r.Rank, r.Host, r.Instance, r.Link, h.hostname, h.addr)
		}
	}
	if v := s.Verdict; v.Stage != "forward" || !strings.Contains(v.Headline, "rank 1 (pid ") || !strings.Contains(v.Headline, "on "+want[1].hostname+")") {
		t.Errorf("straggler verdict %+v, want rank 1's forward (its batch is 8x) on host %s", v, want[1].hostname)
	}
	if s.Remote == nil || s.Remote.Host != hosts[0].hostname {
		t.Errorf("remote %+v, want rank 0's host %s shown", s.Remote, hosts[0].hostname)
	}
	t.Logf("--json: %s; ranks on %s and %s", s.Verdict.Headline, s.Ranks[0].Host, s.Ranks[1].Host)
	checkTwoHostScreen(t, a, bin, url)
}

// awaitRankSocket waits until a trainer socket appears in dir, for at most a
// minute (a rank opens it once the ranks have met).
func awaitRankSocket(t *testing.T, dir string, log *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.sock")); len(m) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trainer socket in %s within a minute:\n%s", dir, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkTwoHostScreen runs the full-screen remote view in tmux (in the
// first namespace) and waits for the straggler and both hosts on it.
func checkTwoHostScreen(t *testing.T, prefix []string, bin, url string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Log("tmux not installed: the screen is not checked")
		return
	}
	e := &tmuxEnv{t: t, server: fmt.Sprintf("pipetop-twohost-%d", os.Getpid())}
	defer e.kill()
	args := append([]string{"new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40"}, prefix...)
	e.tmux(append(args, "env", "TERM=xterm-256color", bin, "--prometheus", url, "--window", "30s", "--interval", "500ms", "two-hosts")...)
	screen := awaitTmux(e, "the straggler, rank 1's host, the server and what is not available remotely", func(s string) bool {
		return strings.Contains(s, "straggler: rank 1") && strings.Contains(s, "pipetop-host-b") &&
			strings.Contains(s, "prometheus "+url) && strings.Contains(s, "not available remotely")
	})
	t.Logf("screen:\n%s", screen)
	// r shows the next rank: rank 1, its host's readings; R goes back.
	e.tmux("send-keys", "-t", "e2e", "r")
	awaitTmux(e, "rank 1 and its host after r", func(s string) bool {
		return strings.Contains(s, "rank 1 on pipetop-host-b") && strings.Contains(s, "from pipetop-host-b's exporter")
	})
	e.tmux("send-keys", "-t", "e2e", "R")
	awaitTmux(e, "rank 0 again after R", func(s string) bool { return strings.Contains(s, "rank 0 on pipetop-host-a") })
}

// awaitTmux polls the tmux pane until ok accepts it, for at most 30 s.
func awaitTmux(e *tmuxEnv, what string, ok func(string) bool) string {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var screen string
	for time.Now().Before(deadline) {
		screen = e.tmux("capture-pane", "-p", "-t", "e2e")
		if ok(screen) {
			return screen
		}
		time.Sleep(250 * time.Millisecond)
	}
	e.t.Fatalf("the screen did not show %s within 30 s:\n%s", what, screen)
	return ""
}
