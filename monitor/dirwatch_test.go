package monitor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A watched directory signals each socket that comes or goes, and closes
// its channel when the directory itself goes.
func TestWatchDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sockets")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := watchDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string, open bool) {
		t.Helper()
		select {
		case _, ok := <-ch:
			if ok != open {
				t.Fatalf("%s: channel open %v, want %v", what, ok, open)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing within 5 s", what)
		}
	}
	select {
	case <-ch:
		t.Fatal("a signal before any change")
	case <-time.After(100 * time.Millisecond):
	}
	path := filepath.Join(dir, "t-rank1.42.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expect("a socket came", true)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect("a socket went", true)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the channel stayed open after the directory was removed")
		}
	}
}

// A watched group waits for no clock but a socket that did not answer;
// an unwatched one looks every ScanInterval.
func TestGroupNextScan(t *testing.T) {
	g := newGroup(t.TempDir(), "x", "run")
	if d := g.nextScan(false); d != ScanInterval {
		t.Errorf("unwatched: %v, want %v", d, ScanInterval)
	}
	if d := g.nextScan(true); d < time.Hour {
		t.Errorf("watched, nothing to ask again: %v", d)
	}
	g.seen["p"] = probe{at: time.Now(), wait: 4 * time.Second} // did not answer
	if d := g.nextScan(true); d < 3*time.Second || d > 4*time.Second {
		t.Errorf("watched, a socket to ask again in 4 s: %v", d)
	}
}

// A socket that does not answer is asked again soon (it may have been seen
// between its bind and its listen), then less and less often.
func TestGroupAsksASilentSocketAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t-rank3.42.sock") // a file, not a listening socket
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGroup(dir, "t-rank0", "job")
	now := time.Now()
	var waits []time.Duration
	for range 8 {
		g.read(context.Background(), now)
		p := g.seen[path]
		if p.hello != nil || p.due(now) || !p.due(now.Add(p.wait)) {
			t.Fatalf("probe %+v at %v", p, now)
		}
		waits = append(waits, p.wait)
		now = now.Add(p.wait)
	}
	want := []time.Duration{firstReprobe, 2 * firstReprobe, 4 * firstReprobe, 8 * firstReprobe, 16 * firstReprobe, 32 * firstReprobe, reprobe, reprobe}
	if !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
}
