package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/stage"
)

// newServer starts a server in a fresh socket directory.
func newServer(t *testing.T, opts ServerOptions) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = testkit.SocketDir(t)
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	s, err := Listen("test", Hello{Stages: stage.Canonical}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func record(step int64) stage.Record {
	r := stage.Record{Step: step, StartNs: 1000 * step, EndNs: 1000*step + 900, Samples: 64, NumStages: len(stage.Canonical)}
	r.ClearGPU()
	for i := 0; i < r.NumStages; i++ {
		r.CPU[i] = int64(100 + i)
	}
	return r
}

func dial(t *testing.T, path string) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readSteps reads frames until it has seen step want, returning the steps.
func readSteps(t *testing.T, c *Conn, want int64) []stage.Record {
	t.Helper()
	var got []stage.Record
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a loaded machine is slow, a lost step is lost for good
	for {
		f, err := c.Next()
		if err != nil {
			t.Fatalf("after %d steps: %v", len(got), err)
		}
		if f.Type != TypeSteps {
			continue
		}
		got = append(got, f.Steps...)
		if got[len(got)-1].Step >= want {
			return got
		}
	}
}

func TestHelloAndSteps(t *testing.T) {
	s := newServer(t, ServerOptions{})
	c := dial(t, s.Path())
	h := c.Hello()
	if h.Name != "test" || h.PID != os.Getpid() || h.HostPID == 0 || len(h.Stages) != len(stage.Canonical) {
		t.Fatalf("hello = %+v", h)
	}
	waitViewers(t, s, 1)
	for i := int64(0); i < 10; i++ {
		r := record(i)
		if i == 9 {
			r.HasLoss, r.Loss = true, 0.25
		}
		s.Publish(&r)
	}
	steps := readSteps(t, c, 9)
	if len(steps) != 10 {
		t.Fatalf("got %d steps, want 10", len(steps))
	}
	last := steps[9]
	want := record(9)
	want.HasLoss, want.Loss = true, 0.25
	if last != want {
		t.Fatalf("round trip:\n got %+v\nwant %+v", last, want)
	}
}

func waitViewers(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Viewers != n {
		if time.Now().After(deadline) {
			t.Fatalf("viewers = %d, want %d", s.Stats().Viewers, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFanOutToManyViewers(t *testing.T) {
	s := newServer(t, ServerOptions{})
	const viewers = 8
	conns := make([]*Conn, viewers)
	for i := range conns {
		conns[i] = dial(t, s.Path())
	}
	waitViewers(t, s, viewers)
	for i := int64(0); i < 1000; i++ {
		r := record(i)
		s.Publish(&r)
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			steps := readSteps(t, c, 999)
			if len(steps) != 1000 {
				t.Errorf("viewer %d got %d steps", i, len(steps))
			}
		}()
	}
	wg.Wait()
}

func TestNeverReadingViewerDoesNotBlockPublish(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: time.Millisecond})
	raw, err := net.Dial("unix", s.Path()) // connects and never reads
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	reader := dial(t, s.Path())
	waitViewers(t, s, 2)
	const n = 100000
	lastSeen := make(chan int64, 1)
	go func() {
		var last int64 = -1
		reader.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for last < n-1 {
			f, err := reader.Next()
			if err != nil {
				break
			}
			if f.Type == TypeSteps {
				last = f.Steps[len(f.Steps)-1].Step
			}
		}
		lastSeen <- last
	}()
	start := time.Now()
	for i := int64(0); i < n; i++ {
		r := record(i)
		s.Publish(&r)
		if i%100 == 0 {
			time.Sleep(time.Millisecond) // about the pace of a fast trainer
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("publishing %d steps took %v with a stuck viewer", n, d)
	}
	// The stuck viewer's queue fills and its frames are dropped, counted.
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Dropped == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no drops counted: %+v", s.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The reading viewer still gets the newest steps.
	if last := <-lastSeen; last != n-1 {
		t.Fatalf("reading viewer's last step %d, want %d", last, n-1)
	}
}

func TestDropsAreReportedToTheViewer(t *testing.T) {
	s := newServer(t, ServerOptions{ViewerQueue: 1, Flush: time.Hour})
	c := dial(t, s.Path())
	waitViewers(t, s, 1)
	for i := 0; i < 50; i++ {
		s.PublishEvent("warning", fmt.Sprint(i)) // queue of 1: most are dropped
	}
	s.PublishEvent("last", "")
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a loaded machine is slow, a lost step is lost for good
	for {
		f, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == TypeDrops {
			if f.Dropped < 1 {
				t.Fatalf("drops frame with %d", f.Dropped)
			}
			return
		}
	}
}

func TestGarbageFromViewerClosesOnlyThatViewer(t *testing.T) {
	s := newServer(t, ServerOptions{})
	good := dial(t, s.Path())
	bad, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bad.Write([]byte("\x00\x01 this is not json\n"))
	// The bad viewer gets an error frame and EOF.
	bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	all, _ := io.ReadAll(bad)
	if !bytes.Contains(all, []byte(`"type":"error"`)) {
		t.Fatalf("bad viewer got %q, want an error frame", all)
	}
	waitViewers(t, s, 1)
	r := record(7)
	s.Publish(&r)
	if steps := readSteps(t, good, 7); steps[0].Step != 7 {
		t.Fatalf("good viewer got %+v", steps)
	}
	if s.Stats().Refused != 1 {
		t.Fatalf("refused = %d, want 1", s.Stats().Refused)
	}
}

func TestHugeLineIsRefused(t *testing.T) {
	s := newServer(t, ServerOptions{})
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		line := bytes.Repeat([]byte("x"), 10<<20)
		c.Write(append(line, '\n'))
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	all, _ := io.ReadAll(c)
	if !bytes.Contains(all, []byte("limit")) {
		t.Fatalf("got %q, want a frame-size error", clip(all))
	}
	// The server still serves others.
	dial(t, s.Path())
}

// fakeTrainer listens on a new socket and runs serve on the first
// connection, then closes it: a hand-written trainer for protocol faults.
func fakeTrainer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	path := filepath.Join(testkit.SocketDir(t), "fake.1.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return path
}

func TestUnknownFieldsAreIgnored(t *testing.T) {
	f, err := DecodeFrame([]byte(`{"type":"event","future":[1,2],"event":{"t":1,"kind":"epoch","extra":true}}`))
	if err != nil || f.Event.Kind != "epoch" {
		t.Fatalf("f=%+v err=%v", f, err)
	}
}

// TestHelloRankFields decodes the optional multi-process fields, and their
// absence as a single-process trainer (nil rank).
func TestHelloRankFields(t *testing.T) {
	f, err := DecodeFrame([]byte(`{"type":"hello","v":1,"hello":{"name":"t","rank":0,"world_size":2,"run":"r1"}}`))
	if err != nil || f.Hello.Rank == nil || *f.Hello.Rank != 0 || f.Hello.WorldSize != 2 || f.Hello.Run != "r1" {
		t.Fatalf("rank 0 of 2: f=%+v err=%v", f.Hello, err)
	}
	f, err = DecodeFrame([]byte(`{"type":"hello","v":1,"hello":{"name":"t"}}`))
	if err != nil || f.Hello.Rank != nil || f.Hello.WorldSize != 0 || f.Hello.Run != "" {
		t.Fatalf("single process: f=%+v err=%v", f.Hello, err)
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, "missing type"},
		{`{"type":"progress"}`, "without progress"},
		{`{"type":"progress","progress":{"step":-2}}`, "progress step -2"},
		{`{"type":"hello","v":1}`, "without hello"},
		{`{"type":"hello","v":1,"hello":{"rank":-1}}`, "hello rank -1"},
		{`{"type":"hello","v":1,"hello":{"tid":-3}}`, "hello tid -3"},
		{`{"type":"hello","v":1,"hello":{"rank":2,"world_size":2}}`, "not below world_size 2"},
		{`{"type":"hello","v":1,"hello":{"world_size":-3}}`, "world_size -3"},
		{`{"type":"hello","v":1,"hello":{"run":"` + strings.Repeat("r", MaxRunLen+1) + `"}}`, "run: 129 bytes"},
		{`{"type":"hello","v":1,"hello":{"stage_word":{"addr":0,"stages":["forward"]}}}`, "stage_word: address 0x0"},
		{`{"type":"hello","v":1,"hello":{"stage_word":{"addr":4097,"stages":[]}}}`, "stage_word: address 0x1001"},
		{`{"type":"hello","v":1,"hello":{"stage_word":{"addr":4096,"stages":[""]}}}`, "a stage name of 0 bytes"},
		{`{"type":"hello","v":1,"hello":{"stage_word":{"addr":4096,"stages":["` + strings.Repeat("s", 65) + `"]}}}`, "a stage name of 65 bytes"},
		{`{"type":"hello","v":1,"hello":{"stacks_inside":"` + strings.Repeat("r", 513) + `"}}`, "stacks_inside: 513 bytes"},
		{`{"type":"steps","steps":[{"step":1,"t0":5,"t1":4,"cpu":[]}]}`, "before t0"},
		{`{"type":"steps","steps":[{"step":1,"t0":1,"t1":4,"cpu":[-1]}]}`, "negative"},
		{`{"type":"stages","stages":[]}`, "stages frame with 0"},
		{`[1,2]`, "decode frame"},
	} {
		_, err := DecodeFrame([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeFrame(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReconnectAfterTrainerRestart(t *testing.T) {
	dir := testkit.SocketDir(t)
	t.Setenv(DirEnv, dir)
	s1 := newServer(t, ServerOptions{Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Message, 64)
	go Watch(ctx, ResolveSpec("test"), into(ctx, out), ViewOptions{})
	expect := func(what string, ok func(Message) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m := <-out:
				if ok(m) {
					return
				}
			case <-timeout:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	expect("first connect", func(m Message) bool { return m.Connected != nil })
	s1.Close()
	expect("disconnect", func(m Message) bool { return m.Disconnected != nil })
	// A restarted trainer: same name, new socket named after a live pid.
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	s2, err := Listen("test", Hello{Stages: stage.Canonical}, ServerOptions{Dir: dir, Path: filepath.Join(dir, SocketName("test", other.Process.Pid)), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	expect("reconnect", func(m Message) bool { return m.Connected != nil })
	r := record(42)
	s2.Publish(&r)
	expect("step 42", func(m Message) bool {
		return m.Frame != nil && m.Frame.Type == TypeSteps && m.Frame.Steps[0].Step == 42
	})
}

func TestStaleSocketsAreCleaned(t *testing.T) {
	dir := testkit.SocketDir(t)
	// A socket file whose pid does not exist.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stalePath := filepath.Join(dir, SocketName("gone", dead.Process.Pid))
	ln, err := net.Listen("unix", stalePath)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	// A socket of a live pid (ours) nobody listens on, made before that
	// process started: the pid was reused.
	refused := filepath.Join(dir, SocketName("reused", os.Getpid()))
	ln, err = net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	long := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(refused, long, long); err != nil {
		t.Fatal(err)
	}
	// A live pid's fresh socket that refuses: a trainer between bind and
	// listen. It is not listed, and its file stays.
	starting := filepath.Join(dir, SocketName("starting", os.Getpid()))
	ln, err = net.Listen("unix", starting)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	s := newServer(t, ServerOptions{Dir: dir})
	eps, err := ListDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 1 || eps[0].Path != s.Path() {
		t.Fatalf("ListDir = %+v, want only %s", eps, s.Path())
	}
	for _, p := range []string{stalePath, refused} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale socket %s not removed", p)
		}
	}
	if _, err := os.Stat(starting); err != nil {
		t.Errorf("a live process's socket was removed: %v", err)
	}
}

func TestFind(t *testing.T) {
	eps := []Endpoint{{Path: "/x/a.1.sock", Name: "a", PID: 1}, {Path: "/x/b.2.sock", Name: "b", PID: 2}}
	for _, tc := range []struct {
		spec, want, err string
	}{
		{"a", "a", ""}, {"2", "b", ""}, {"", "", "2 live trainers"}, {"zzz", "", "no live trainer named"},
	} {
		ep, err := Find(eps, tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Find(%q) err = %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || ep.Name != tc.want {
			t.Errorf("Find(%q) = %+v, %v", tc.spec, ep, err)
		}
	}
	if _, err := Find(nil, ""); err == nil || !strings.Contains(err.Error(), "no live trainer") {
		t.Errorf("Find on none: %v", err)
	}
}

func TestParseSocketName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string
		pid  int
		ok   bool
	}{
		{"pipetrain.123.sock", "pipetrain", 123, true},
		{"my.run.7.sock", "my.run", 7, true},
		{"x.sock", "", 0, false}, {"x.0.sock", "", 0, false}, {"x.12", "", 0, false}, {"x.-3.sock", "", 0, false},
	} {
		name, pid, ok := ParseSocketName(tc.in)
		if name != tc.name || pid != tc.pid || ok != tc.ok {
			t.Errorf("ParseSocketName(%q) = %q %d %v", tc.in, name, pid, ok)
		}
	}
}

func TestLooseSocketDirIsRefused(t *testing.T) {
	dir := testkit.SocketDir(t)
	os.Chmod(dir, 0o777)
	_, err := Listen("test", Hello{}, ServerOptions{Dir: dir, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "0777") {
		t.Fatalf("err = %v, want a refusal naming mode 0777", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o777 {
		t.Fatalf("mode changed to %o", fi.Mode().Perm())
	}
}

func TestPermissionBits(t *testing.T) {
	dir := filepath.Join(testkit.SocketDir(t), "sub")
	s := newServer(t, ServerOptions{Dir: dir})
	for path, want := range map[string]os.FileMode{dir: 0o700, s.Path(): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode %o, want %o", path, got, want)
		}
	}
}

func TestHostPIDFromNSpid(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   int
	}{
		{"Name:\tx\nNSpid:\t4242\t17\n", 4242},
		{"Name:\tx\nNSpid:\t99\n", 99},
		{"Name:\tx\n", 5},
		{"NSpid:\tbad\n", 5},
	} {
		if got := parseNSpid(strings.NewReader(tc.status), 5); got != tc.want {
			t.Errorf("parseNSpid(%q) = %d, want %d", tc.status, got, tc.want)
		}
	}
}

// TestPeerCredentialRefusal connects as another uid. With the socket's
// permission bits the kernel already refuses; with them opened up, the
// SO_PEERCRED check refuses and says why.
func TestPeerCredentialRefusal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid (setpriv)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed")
	}
	var logged []string
	var mu sync.Mutex
	dir := testkit.SocketDir(t)
	s := newServer(t, ServerOptions{Dir: dir, Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	// A client that prints what it receives, as uid/gid 65534 (nobody).
	client := func() (string, error) {
		script := `import socket,sys
s=socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror); sys.exit(0)
s.settimeout(5)
print(s.recv(65536).decode())`
		out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
			"/usr/bin/python3", "-c", script, s.Path()).CombinedOutput()
		return string(out), err
	}
	out, err := client()
	if err != nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("with 0700/0600: out=%q err=%v, want a permission error", out, err)
	}
	os.Chmod(dir, 0o777)
	os.Chmod(s.Path(), 0o777)
	out, err = client()
	if err != nil || !strings.Contains(out, `"type":"error"`) || !strings.Contains(out, "uid 65534") {
		t.Fatalf("with opened bits: out=%q err=%v, want a refusal naming uid 65534", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) == 0 || !strings.Contains(strings.Join(logged, "\n"), "refused viewer") {
		t.Fatalf("refusal not logged: %q", logged)
	}
	if s.Stats().Refused != 1 {
		t.Fatalf("refused = %d", s.Stats().Refused)
	}
}

func TestStepsFrameIsValidJSON(t *testing.T) {
	recs := []stage.Record{record(1), record(2)}
	recs[1].HasLoss, recs[1].Loss = true, 1.5
	recs[1].GPU[2] = 77
	b := appendSteps(nil, recs)
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	got := f.Steps[1]
	if got != recs[1] {
		t.Fatalf("got %+v want %+v", got, recs[1])
	}
}

func TestClosedErrors(t *testing.T) {
	if !isClosed(io.EOF) || !isClosed(syscall.EPIPE) || isClosed(errors.New("x")) {
		t.Fatal("isClosed")
	}
}

// TestTrainerDiesMidFrame: a trainer that writes half a frame and dies
// gives the viewer a clear error, not a hang or a half-decoded frame.
func TestTrainerDiesMidFrame(t *testing.T) {
	path := fakeTrainer(t, func(c net.Conn) {
		NewReader(c).ReadLine() // the viewer's hello: closing with it unread would reset
		c.Write([]byte(`{"type":"hello","v":1,"hello":{"name":"dying","stages":["other"]}}` + "\n"))
		c.Write([]byte(`{"type":"steps","steps":[{"step":1,"t0":1,`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f, err := conn.Next()
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Next = %+v, %v; want io.ErrUnexpectedEOF", f, err)
	}
}

// TestCloseDeliversTheLastSteps: steps published just before Close reach a
// reading viewer before the connection ends.
func TestCloseDeliversTheLastSteps(t *testing.T) {
	dir := t.TempDir()
	s, err := Listen("last", Hello{Stages: stage.Canonical}, ServerOptions{Dir: dir, Flush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s.Path())
	for s.Stats().Viewers != 1 {
		time.Sleep(time.Millisecond)
	}
	for i := range int64(300) {
		r := record(i)
		s.Publish(&r)
	}
	s.Close()
	var n int64
	for {
		f, err := c.Next()
		if err != nil {
			break
		}
		n += int64(len(f.Steps))
	}
	if n != 300 {
		t.Fatalf("viewer got %d of the 300 steps published before Close", n)
	}
}

// A recycled frame's steps are reused by the next decode, which must
// overwrite every field: no value of the old frame shows through.
func TestRecycledStepsDecodeAgain(t *testing.T) {
	frame := func(from, n int64, loss bool) []byte {
		recs := make([]stage.Record, n)
		for i := range recs {
			recs[i] = record(from + int64(i))
			recs[i].HasLoss, recs[i].Loss = loss, 0.5
			if loss {
				recs[i].GPU[1] = 7
			}
		}
		line := appendSteps(nil, recs)
		return line[:len(line)-1]
	}
	first, err := DecodeFrame(frame(0, 40, true))
	if err != nil {
		t.Fatal(err)
	}
	Recycle(first)
	if first.Steps != nil {
		t.Fatal("Recycle left the frame holding its steps")
	}
	second, err := DecodeFrame(frame(100, 30, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Steps) != 30 {
		t.Fatalf("%d steps, want 30", len(second.Steps))
	}
	for i, r := range second.Steps {
		want := record(100 + int64(i))
		if r != want {
			t.Fatalf("step %d decoded as %+v, want %+v", i, r, want)
		}
	}
	Recycle(nil)      // nothing to hand back
	Recycle(&Frame{}) // a frame without steps
	Recycle(&Frame{Steps: second.Steps[:0:0]})
}
