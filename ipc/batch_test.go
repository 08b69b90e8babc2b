package ipc

import (
	"context"
	"testing"
	"time"
)

// viewerWrites is how many writes the server made to each viewer, keyed by
// the batch its hello asked for.
func viewerWrites(s *Server) map[time.Duration]int64 {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	out := map[time.Duration]int64{}
	for v := range s.viewers {
		out[time.Duration(v.batch.Load())] = v.writes.Load()
	}
	return out
}

func dialView(t *testing.T, path string, o ViewOptions) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := DialView(ctx, path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A viewer that asks for batches gets every step, in order, in a few
// writes; one that does not gets a write per flush.
func TestBatchedViewerGetsEveryStepInFewWrites(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 10 * time.Millisecond})
	batched := dialView(t, s.Path(), ViewOptions{Batch: 250 * time.Millisecond})
	plain := dial(t, s.Path())
	waitViewers(t, s, 2)
	for s.viewerBatchesSet() < 1 {
		time.Sleep(time.Millisecond)
	}
	const steps = 240
	done := make(chan []int64, 2)
	for _, c := range []*Conn{batched, plain} {
		go func() {
			var got []int64
			// Sent however readSteps ends: its t.Fatalf ends this
			// goroutine, and the test must not wait for it forever.
			defer func() { done <- got }()
			for _, r := range readSteps(t, c, steps-1) {
				got = append(got, r.Step)
			}
		}()
	}
	for i := range int64(steps) {
		r := record(i)
		s.Publish(&r)
		time.Sleep(5 * time.Millisecond)
	}
	for range 2 {
		got := <-done
		if len(got) != steps {
			t.Fatalf("a viewer got %d of %d steps", len(got), steps)
		}
		for i, step := range got {
			if step != int64(i) {
				t.Fatalf("step %d arrived as #%d", step, i)
			}
		}
	}
	w := viewerWrites(s)
	nb, np := w[250*time.Millisecond], w[0]
	t.Logf("writes over %d steps at 5 ms: batched %d, plain %d", steps, nb, np)
	// 1.2 s or more of publishing at one write per 250 ms, plus the
	// hello: about 6; a plain viewer gets one per 10 ms flush.
	if nb > 12 || np < 3*nb {
		t.Fatalf("batched viewer got %d writes, plain %d: want at most 12 and a third of plain", nb, np)
	}
}

// viewerBatchesSet counts viewers whose hello asked for a batch.
func (s *Server) viewerBatchesSet() int {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	n := 0
	for v := range s.viewers {
		if v.batch.Load() > 0 {
			n++
		}
	}
	return n
}

// Closing the server sends a batched viewer its held frames at once.
func TestCloseDoesNotWaitOutTheBatch(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: time.Millisecond})
	c := dialView(t, s.Path(), ViewOptions{Batch: MaxBatchMs * time.Millisecond})
	waitViewers(t, s, 1)
	for s.viewerBatchesSet() < 1 {
		time.Sleep(time.Millisecond)
	}
	r := record(0)
	s.Publish(&r)
	time.Sleep(20 * time.Millisecond) // the first frame goes out at once
	r = record(1)
	s.Publish(&r)
	time.Sleep(20 * time.Millisecond) // held: the last write was just now
	start := time.Now()
	s.Close()
	got := readSteps(t, c, 1)
	if len(got) != 2 {
		t.Fatalf("got %d steps, want 2", len(got))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the held step took %v after Close; the batch is %d ms", d, MaxBatchMs)
	}
}

func TestBatchIsCapped(t *testing.T) {
	for _, c := range []struct {
		ms   int
		want time.Duration
	}{{-5, 0}, {0, 0}, {300, 300 * time.Millisecond}, {MaxBatchMs * 10, MaxBatchMs * time.Millisecond}} {
		if got := batchOf(&Hello{BatchMs: c.ms}); got != c.want {
			t.Errorf("batch_ms %d: held %v, want %v", c.ms, got, c.want)
		}
	}
}
