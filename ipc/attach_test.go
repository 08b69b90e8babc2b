package ipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
)

// hostileWants is what the AttachError must say for each of
// testkit.Hostiles.
var hostileWants = map[string][]string{
	"random":   {"sent a malformed frame at byte 0:", notATrainerStart},
	"silent":   {"accepted but sent no hello within 200ms", HelloTimeoutEnv},
	"huge":     {"sent a frame over the 1 MiB cap at byte 0"},
	"badhello": {"sent a malformed frame at byte 0:", "cannot unmarshal number"},
	"nohello":  {"sent a malformed frame at byte 0:", "hello frame without hello"},
	"steps":    {`sent a "steps" frame before its hello`},
	"future":   {"trainer future (pid 4242, socket ", "speaks protocol 99; this pipetop speaks 1 — upgrade pipetop"},
	"past":     {"trainer past (pid 7, ", "speaks protocol 0; this pipetop speaks 1 — upgrade the trainer's publisher"},
	"hangup":   {"closed the connection before its hello"},
}

const notATrainerStart = "is something other than a pipetop trainer listening there?"

// TestAttachErrorsFromHostilePeers dials each hostile socket and checks that
// the error names the socket, the problem and what to do.
func TestAttachErrorsFromHostilePeers(t *testing.T) {
	dir := testkit.SocketDir(t)
	for _, h := range testkit.Hostiles {
		t.Run(h.Name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, SocketName(h.Name, 1))
			testkit.ServeHostile(t, path, h.Serve)
			timeout := DefaultHelloTimeout
			if h.Name == "silent" { // the only case that waits for the timeout
				timeout = 200 * time.Millisecond
			}
			_, err := dialAs(context.Background(), path, Version, timeout)
			var ae *AttachError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want an *AttachError", err, err)
			}
			msg := err.Error()
			wants, ok := hostileWants[h.Name]
			if !ok {
				t.Fatalf("no expected error for hostile peer %s", h.Name)
			}
			for _, want := range append([]string{"socket " + path + ")"}, wants...) {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
			if len(msg) > 600 {
				t.Errorf("error of %d bytes: the peer's bytes should be clipped:\n%s", len(msg), msg)
			}
		})
	}
}

// TestVersionNegotiation runs the real server and the real client with one
// side a version ahead or behind: the viewer explains from the trainer's
// hello, the trainer refuses the viewer with an error naming both versions
// and logs it once.
func TestVersionNegotiation(t *testing.T) {
	for _, tc := range []struct {
		viewer           int
		viewerSays       string
		trainerRefusal   string
		trainerRefusalKW string
	}{
		{2, "speaks protocol 1; this pipetop speaks 2 — upgrade the trainer's publisher",
			"this viewer speaks protocol 2, the trainer speaks 1 — upgrade the trainer's publisher", "v2 viewer"},
		{0, "speaks protocol 1; this pipetop speaks 0 — upgrade pipetop",
			"this viewer speaks protocol 0, the trainer speaks 1 — upgrade pipetop", "v0 viewer"},
	} {
		t.Run(tc.trainerRefusalKW, func(t *testing.T) {
			var mu sync.Mutex
			var logged []string
			s := newServer(t, ServerOptions{Logf: func(f string, a ...any) {
				mu.Lock()
				logged = append(logged, fmt.Sprintf(f, a...))
				mu.Unlock()
			}})
			// The viewer side: our client at another version.
			_, err := dialAs(context.Background(), s.Path(), tc.viewer, time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.viewerSays) || !strings.Contains(err.Error(), "trainer test (pid ") {
				t.Fatalf("viewer v%d: err = %v, want %q", tc.viewer, err, tc.viewerSays)
			}
			// The trainer side: a raw viewer of that version, three times.
			for range 3 {
				c, err := net.Dial("unix", s.Path())
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(c, `{"type":"hello","v":%d,"hello":{"role":"viewer"}}`+"\n", tc.viewer)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				all, _ := io.ReadAll(c)
				c.Close()
				if !bytes.Contains(all, []byte(`"type":"hello","v":1`)) || !bytes.Contains(all, []byte(tc.trainerRefusal)) {
					t.Fatalf("raw viewer v%d got %q, want the trainer's hello, then %q", tc.viewer, all, tc.trainerRefusal)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for s.Stats().Refused < 4 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if n := s.Stats().Refused; n != 4 || len(logged) != 1 || !strings.Contains(logged[0], tc.trainerRefusal) {
				t.Fatalf("refused %d, logged %q; want 4 refusals logged once", n, logged)
			}
		})
	}
}

// TestRefusalsLoggedOncePerKind: malformed lines with different bytes are
// one kind; a bounded number of kinds is remembered.
func TestRefusalsLoggedOncePerKind(t *testing.T) {
	var l refusalLog
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	l.log(logf, "p", fmt.Errorf("%w at byte 0: x", ErrMalformed))
	l.log(logf, "p", fmt.Errorf("%w at byte 0: y", ErrMalformed))
	l.log(logf, "p", &uidError{pid: 1, uid: 7, own: 0})
	l.log(logf, "p", &uidError{pid: 2, uid: 7, own: 0})
	if len(lines) != 2 {
		t.Fatalf("logged %q, want one line per kind", lines)
	}
	for i := range 2 * maxLoggedReasons {
		l.log(logf, "p", fmt.Errorf("reason %d", i))
	}
	if len(lines) != maxLoggedReasons+1 || !strings.Contains(lines[len(lines)-1], "only counted") {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

// TestWatchReportsFailureAndBacksOff: a failed attempt arrives as a Failed
// message with the next try RetryMin later; the delays double to RetryMax.
func TestWatchReportsFailureAndBacksOff(t *testing.T) {
	path := filepath.Join(testkit.SocketDir(t), SocketName("future", 1))
	testkit.ServeHostile(t, path, testkit.HostileNamed(t, "future").Serve)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Message, 4)
	start := time.Now()
	go Watch(ctx, func() (Endpoint, error) { return Endpoint{Path: path, Name: "future", PID: 1}, nil }, into(ctx, out), ViewOptions{})
	m := <-out
	if m.Failed == nil || !errors.Is(m.Failed, ErrVersion) || m.Endpoint.Path != path {
		t.Fatalf("first message %+v, want a version failure", m)
	}
	if wait := m.RetryAt.Sub(start); wait < RetryMin || wait > RetryMin+time.Second {
		t.Fatalf("next try in %v, want about %v", wait, RetryMin)
	}
	b := backoff{lo: RetryMin, hi: RetryMax}
	var got []time.Duration
	for range 7 {
		got = append(got, b.take())
	}
	if fmt.Sprint(got) != "[1s 2s 4s 8s 16s 30s 30s]" {
		t.Fatalf("delays %v", got)
	}
}

// TestMidStreamBadFrameNamesOffset: after a good hello, a malformed frame
// names the byte offset at which it started.
func TestMidStreamBadFrameNamesOffset(t *testing.T) {
	hello := `{"type":"hello","v":1,"hello":{"name":"midway","stages":["other"]}}` + "\n"
	path := filepath.Join(testkit.SocketDir(t), SocketName("midway", 1))
	testkit.ServeHostile(t, path, func(c net.Conn) {
		c.Write([]byte(hello + "{oops}\n"))
		io.Copy(io.Discard, c)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Message, 4)
	go Watch(ctx, func() (Endpoint, error) { return Endpoint{Path: path, Name: "midway"}, nil }, into(ctx, out), ViewOptions{})
	if m := <-out; m.Connected == nil {
		t.Fatalf("first message %+v, want connected", m)
	}
	m := <-out
	var ae *AttachError
	want := fmt.Sprintf("sent a malformed frame at byte %d", len(hello))
	if !errors.As(m.Disconnected, &ae) || !strings.Contains(ae.Error(), want) || !strings.Contains(ae.Error(), "trainer midway") {
		t.Fatalf("disconnected with %v, want %q", m.Disconnected, want)
	}
}

// TestWatchLooksAgainQuicklyForAGoneSocket: a socket nobody listens on (a
// trainer that exited or is starting) is not a failure to show: no message,
// and the next look comes within lookupMin, not RetryMin.
func TestWatchLooksAgainQuicklyForAGoneSocket(t *testing.T) {
	path := filepath.Join(testkit.SocketDir(t), SocketName("gone", 1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	looks := 0
	out := make(chan Message, 4)
	go Watch(ctx, func() (Endpoint, error) {
		mu.Lock()
		looks++
		mu.Unlock()
		return Endpoint{Path: path, Name: "gone", PID: 1}, nil
	}, into(ctx, out), ViewOptions{})
	select {
	case m := <-out:
		t.Fatalf("got %+v for a socket that does not exist", m)
	case <-time.After(RetryMin / 2):
	}
	mu.Lock()
	defer mu.Unlock()
	if looks < 2 {
		t.Fatalf("%d looks in %v, want quick retries", looks, RetryMin/2)
	}
	_, err := Dial(ctx, path)
	var ae *AttachError
	if !errors.As(err, &ae) || !ae.Gone || !strings.Contains(err.Error(), "is gone: its trainer has exited") {
		t.Fatalf("Dial: %v", err)
	}
}
