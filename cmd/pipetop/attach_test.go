package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// pipetopBin is the pipetop binary under test (testkit.Bin).
func pipetopBin(t *testing.T) string {
	t.Helper()
	return testkit.Bin(t, "pipetop")
}

// worldBin is a copy of the pipetop binary in a directory every user can
// reach, for the test that runs it as nobody (the checkout may be under a
// directory only its owner can enter).
func worldBin(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pipetop-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, err := os.ReadFile(pipetopBin(t))
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "pipetop"), data, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "pipetop")
}

// hostileTrainers are the hostile peers (testkit.Hostiles) a user may meet
// in the trainer directory, with what the link detail must say.
var hostileTrainers = []struct {
	name string
	want []string
}{
	{"random", []string{"sent a malformed frame at byte 0", "is something other than a pipetop trainer listening there?"}},
	{"silent", []string{"accepted but sent no hello within 300ms", "PIPETOP_HELLO_TIMEOUT"}},
	{"huge", []string{"sent a frame over the 1 MiB cap at byte 0"}},
	{"badhello", []string{"sent a malformed frame at byte 0", "hello"}},
	{"future", []string{"trainer future (pid 4242, socket ", "speaks protocol 99; this pipetop speaks 1 — upgrade pipetop"}},
}

// nextTry ends the detail of a failed link that will be tried again.
var nextTry = regexp.MustCompile(`; (next try in [0-9]+s|trying again now)$`)

// runBin runs the pipetop binary and returns stdout, stderr and its exit status.
func runBin(t *testing.T, env []string, prefix []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	argv := append(append([]string{}, prefix...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestAttachFailuresThroughRealSockets attaches the real binary to each
// hostile socket: --json says link state "failed" with a detail naming the
// socket, the problem and the fix (and no next try: it exits), and the exit
// status is 3;
// ls marks the hostile sockets and not a real trainer.
func TestAttachFailuresThroughRealSockets(t *testing.T) {
	bin := pipetopBin(t)
	dir := testkit.SocketDir(t)
	env := []string{ipc.DirEnv + "=" + dir}
	for _, h := range hostileTrainers {
		testkit.ServeHostile(t, filepath.Join(dir, ipc.SocketName(h.name, os.Getpid())), testkit.HostileNamed(t, h.name).Serve)
	}
	good, err := ipc.Listen("good", ipc.Hello{Stages: []string{stage.Other}}, ipc.ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()

	t.Run("attach", func(t *testing.T) {
		for _, h := range hostileTrainers {
			t.Run(h.name, func(t *testing.T) {
				t.Parallel()
				env := env
				if h.name == "silent" { // the only case that waits for the timeout
					env = append(env, ipc.HelloTimeoutEnv+"=300ms")
				}
				out, stderr, code := runBin(t, env, []string{bin}, "attach", h.name, "--json", "--interval", "100ms", "--no-gpu")
				if code != exitNotAttached || !strings.Contains(stderr, "could not attach the trainer") {
					t.Errorf("exit %d, stderr %q; want %d and why", code, stderr, exitNotAttached)
				}
				var s snapshot.Snapshot
				if err := json.Unmarshal([]byte(out), &s); err != nil {
					t.Fatalf("--json: %v\n%s", err, out)
				}
				path := filepath.Join(dir, ipc.SocketName(h.name, os.Getpid()))
				if s.Link.State != snapshot.LinkFailed || s.Link.Socket != path || !s.Link.RetryAt.IsZero() {
					t.Errorf("link %+v, want failed on %s without a retry time", s.Link, path)
				}
				if nextTry.MatchString(s.Link.Detail) {
					t.Errorf("link.detail promises a next try the one-shot will not make:\n%s", s.Link.Detail)
				}
				for _, want := range append([]string{"socket " + path + ")"}, h.want...) {
					if !strings.Contains(s.Link.Detail, want) {
						t.Errorf("link.detail lacks %q:\n%s", want, s.Link.Detail)
					}
				}
			})
		}
	})

	t.Run("attach a good trainer and a missing one", func(t *testing.T) {
		if _, _, code := runBin(t, env, []string{bin}, "attach", "good", "--json", "--interval", "100ms", "--no-gpu"); code != 0 {
			t.Errorf("attach good: exit %d", code)
		}
		if _, stderr, code := runBin(t, env, []string{bin}, "attach", "nosuch", "--json", "--no-gpu"); code != exitNotAttached || !strings.Contains(stderr, `no live trainer named or with pid "nosuch"`) {
			t.Errorf("attach nosuch: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("ls", func(t *testing.T) {
		out, _, code := runBin(t, env, []string{bin}, "ls")
		if code != 0 {
			t.Fatalf("ls: exit %d", code)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			name := strings.Fields(line)[0]
			if ok := strings.Contains(line, " ok"); ok != (name == "good") || ok == strings.Contains(line, "✗ cannot attach") {
				t.Errorf("ls line for %s: %q", name, line)
			}
		}
		out, _, _ = runBin(t, env, []string{bin}, "ls", "--json")
		var entries []monitor.Listed
		if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != len(hostileTrainers)+1 {
			t.Fatalf("ls --json: %v\n%s", err, out)
		}
		for _, e := range entries {
			if e.OK != (e.Name == "good") || e.OK != (e.Error == "") || (!e.OK && !strings.Contains(e.Error, e.Path)) {
				t.Errorf("ls --json entry %+v", e)
			}
		}
	})
}

// TestAttachRefusedForAnotherUID runs pipetop as nobody against a real
// trainer socket whose modes were opened up, so that the trainer's
// SO_PEERCRED check is what refuses: the detail names the owner's uid.
func TestAttachRefusedForAnotherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run pipetop as another uid (setpriv)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed")
	}
	bin := worldBin(t)
	dir := testkit.SocketDir(t)
	var mu sync.Mutex
	var logged []string
	srv, err := ipc.Listen("owned", ipc.Hello{Stages: []string{stage.Other}}, ipc.ServerOptions{Dir: dir,
		Logf: func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	os.Chmod(dir, 0o777)
	os.Chmod(srv.Path(), 0o777)
	out, stderr, code := runBin(t, []string{ipc.DirEnv + "=" + dir}, []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin},
		"attach", "owned", "--json", "--interval", "100ms", "--no-gpu")
	var s snapshot.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json: %v\n%s\n%s", err, out, stderr)
	}
	want := "belongs to uid 0: only the same user or root can attach (this pipetop runs as uid 65534) — run pipetop as uid 0 or as root"
	if code != exitNotAttached || s.Link.State != snapshot.LinkFailed || !strings.Contains(s.Link.Detail, want) {
		t.Fatalf("exit %d, link %+v; want %d, failed: %q", code, s.Link, exitNotAttached, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if st := srv.Stats(); len(logged) != 1 || st.Refused < 2 || !strings.Contains(logged[0], "uid 65534") {
		t.Fatalf("refused %d times, logged %q; want each refusal counted and one log line", st.Refused, logged)
	}
}
