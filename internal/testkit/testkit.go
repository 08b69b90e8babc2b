// Package testkit holds the helpers the project's tests share: short
// socket directories, the hostile socket peers the attach tests meet, the
// project's binaries (built once per make test, bins.go) and starting the
// synthetic publisher (examples/synthetic, a SYNTHETIC trainer that trains
// nothing). It imports nothing of ours, so any package's tests may use it.
package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SocketDir is a fresh directory for sockets under /tmp, removed when the
// test ends: short, because sun_path holds 108 bytes.
func SocketDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "ptk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Hostile is a misbehaving trainer: what it does with each connection.
type Hostile struct {
	Name  string
	Serve func(c net.Conn)
}

// Hostiles are the ways a socket in the trainer directory can misbehave.
// Each test says what the viewer must report for the ones it uses.
var Hostiles = []Hostile{
	{"random", func(c net.Conn) { // a megabyte of noise
		b := make([]byte, 1<<20-1000)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		c.Write(b)
	}},
	{"silent", func(c net.Conn) { io.Copy(io.Discard, c) }}, // accepts, never says hello
	{"huge", func(c net.Conn) { // a 64 MiB line
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 64 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		c.Write([]byte("\n"))
	}},
	{"badhello", func(c net.Conn) { c.Write([]byte(`{"type":"hello","v":1,"hello":{"name":42}}` + "\n")) }},
	{"nohello", func(c net.Conn) { c.Write([]byte(`{"type":"hello","v":1}` + "\n")) }},
	{"steps", func(c net.Conn) { c.Write([]byte(`{"type":"steps","steps":[]}` + "\n")) }},
	{"future", func(c net.Conn) {
		c.Write([]byte(`{"type":"hello","v":99,"hello":{"name":"future","pid":4242,"whatever":[1]}}` + "\n"))
	}},
	{"past", func(c net.Conn) { c.Write([]byte(`{"type":"hello","hello":{"name":"past","pid":7}}` + "\n")) }},
	{"hangup", func(c net.Conn) {}},
}

// HostileNamed is the behaviour of Hostiles called name; it fails the test
// when there is none.
func HostileNamed(t testing.TB, name string) Hostile {
	t.Helper()
	for _, h := range Hostiles {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no hostile peer %q", name)
	return Hostile{}
}

// ServeHostile serves fn on a Unix socket at path, for every connection,
// until the test ends.
func ServeHostile(t testing.TB, path string, fn func(c net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fn(c)
			}()
		}
	}()
}

// Root is the module's root directory, found from the working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ModuleRoot is Root for TestMain, where there is no test yet.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// BuildErr builds the Go packages pkgs (paths such as "./cmd/pipetop") of
// the module at root into dir, one binary each, named after the package's
// folder.
func BuildErr(root, dir string, pkgs ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", pkgs, err, out)
	}
	return nil
}

// Start starts bin with args, its trainer socket in sockets (empty: the
// environment's), and stops it when the test ends.
func Start(t testing.TB, sockets, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	if sockets != "" {
		cmd.Env = append(cmd.Env, "PIPETOP_SOCKET_DIR="+sockets)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Stop(cmd) })
	return cmd
}

// Stop kills cmd unless it has ended, and waits for it.
func Stop(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	cmd.Wait()
}

// FreePort is a TCP port on 127.0.0.1 that nobody listened on a moment
// ago, for a test's rendezvous.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Within says whether got is within frac of want (|got-want| <= frac*want).
func Within(got, want, frac float64) bool {
	return math.Abs(got-want) <= frac*want
}

// OnlyEnv selects which tests of the live suites (tests/diagnosis,
// tests/bisect, tests/tune) a run runs: "serial", the tests that read the
// machine's CPU and must run alone, or "concurrent", those that do not and
// may run beside other packages' tests; unset, both (the serial ones
// first). make test runs the concurrent ones beside the other packages and
// the serial ones after everything else.
const OnlyEnv = "PIPETOP_TEST_ONLY"

// Concurrent marks a test of a live suite that is judged only on what it
// plants itself (a stop, a hang, processes, files, exit statuses): it
// runs in parallel with the package's other concurrent tests, and not at
// all when $PIPETOP_TEST_ONLY is "serial".
func Concurrent(t *testing.T) {
	t.Helper()
	if os.Getenv(OnlyEnv) == "serial" {
		t.Skip(OnlyEnv + "=serial: a test that does not read the CPU, run beside the other packages")
	}
	t.Parallel()
}

// Serial marks a test of a live suite that reads the machine's CPU (CPU
// shares, threads waiting for a CPU, samples/s against a script's own):
// it runs alone, and not at all when $PIPETOP_TEST_ONLY is "concurrent".
func Serial(t *testing.T) {
	t.Helper()
	if os.Getenv(OnlyEnv) == "concurrent" {
		t.Skip(OnlyEnv + "=concurrent: a test that reads the CPU, run alone after the other packages")
	}
}
