package ipc

import (
	"context"
	"testing"
	"time"
)

// gatedWatch watches the server's socket through g; every message goes to
// the returned channel.
func gatedWatch(t *testing.T, s *Server, g *Gate) <-chan Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := make(chan Message, 4096)
	go Watch(ctx, func() (Endpoint, error) { return Endpoint{Path: s.Path()}, nil }, into(ctx, out), ViewOptions{Gate: g})
	return out
}

// into delivers a Watch's messages to ch until ctx ends.
func into(ctx context.Context, ch chan<- Message) func(Message) {
	return func(m Message) {
		select {
		case ch <- m:
		case <-ctx.Done():
		}
	}
}

// stepsIn counts the steps of the messages waiting in ch now.
func stepsIn(ch <-chan Message) (steps int) {
	for {
		select {
		case m := <-ch:
			if m.Frame != nil && m.Frame.Type == TypeSteps {
				steps += len(m.Frame.Steps)
			}
		default:
			return steps
		}
	}
}

// A gated connection reads nothing between Opens; an Open reads every
// step the trainer sent meanwhile and returns once they are applied,
// well before its wait.
func TestGateReadsOnlyWhenOpened(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 5 * time.Millisecond})
	g := NewGate()
	msgs := gatedWatch(t, s, g)
	waitViewers(t, s, 1)
	if m := <-msgs; m.Connected == nil {
		t.Fatalf("first message %+v, want the hello", m)
	}
	for round := range 3 {
		for i := range 20 {
			r := record(int64(20*round + i))
			s.Publish(&r)
		}
		time.Sleep(200 * time.Millisecond) // flushed and in the socket by now
		if n := stepsIn(msgs); n != 0 {
			t.Fatalf("round %d: %d steps read before the gate opened", round, n)
		}
		start := time.Now()
		g.Open(5 * time.Second)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("round %d: Open took %v: it waited for its timeout instead of the reads", round, d)
		}
		if n := stepsIn(msgs); n != 20 {
			t.Fatalf("round %d: %d steps after Open, want 20", round, n)
		}
	}
}

// A gate that is never opened still lets its connections read every
// HoldMax, so a paused viewer does not stall the trainer's writes.
func TestGateHoldsAtMostHoldMax(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 5 * time.Millisecond})
	g := NewGate()
	msgs := gatedWatch(t, s, g)
	waitViewers(t, s, 1)
	<-msgs // hello
	r := record(1)
	s.Publish(&r)
	deadline := time.After(HoldMax + 3*time.Second)
	for {
		select {
		case m := <-msgs:
			if m.Frame != nil && m.Frame.Type == TypeSteps {
				return
			}
		case <-deadline:
			t.Fatalf("no step read within %v of a gate never opened", HoldMax+3*time.Second)
		}
	}
}

// A trainer that goes away is seen at the next Open, and a watch that is
// cancelled while parked at the gate ends at once.
func TestGateSeesDisconnectsAndCancels(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 5 * time.Millisecond})
	g := NewGate()
	msgs := gatedWatch(t, s, g)
	waitViewers(t, s, 1)
	<-msgs // hello
	s.Close()
	g.Open(5 * time.Second)
	select {
	case m := <-msgs:
		if m.Disconnected == nil {
			t.Fatalf("after the trainer closed: %+v, want a disconnect", m)
		}
	case <-time.After(HoldMax + 3*time.Second):
		t.Fatal("no disconnect seen after Open")
	}

	s2 := newServer(t, ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	raw := make(chan Message, 64)
	g2 := NewGate()
	ended := make(chan struct{})
	go func() {
		Watch(ctx, func() (Endpoint, error) { return Endpoint{Path: s2.Path()}, nil }, into(ctx, raw), ViewOptions{Gate: g2})
		close(ended)
	}()
	<-raw                             // hello
	time.Sleep(50 * time.Millisecond) // parked at the gate
	cancel()
	select {
	case <-ended:
	case <-time.After(time.Second):
		t.Fatal("a watch parked at the gate did not end within 1 s of its cancel")
	}
}
