package ipc

import (
	"bytes"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// stepNumbers returns the step numbers of recs.
func stepNumbers(recs []stage.Record) []int64 {
	out := make([]int64, len(recs))
	for i := range recs {
		out[i] = recs[i].Step
	}
	return out
}

// slowRecord is step i of a run of 2 s steps.
func slowRecord(i int64) stage.Record {
	r := record(i)
	r.StartNs, r.EndNs = i*2e9, (i+1)*2e9
	return r
}

// The history keeps the last BackfillSteps steps, gives those before a
// mark that ended within BackfillWindow of the newest of them, and forgets
// everything at a stage change.
func TestHistoryRing(t *testing.T) {
	var h history
	for i := range int64(BackfillSteps + 100) {
		r := record(i)
		h.add([]stage.Record{r})
	}
	got := stepNumbers(h.before(h.total))
	if len(got) != BackfillSteps || got[0] != 100 || got[len(got)-1] != BackfillSteps+99 {
		t.Fatalf("full ring: %d steps %d..%d, want %d steps 100..%d", len(got), got[0], got[len(got)-1], BackfillSteps, BackfillSteps+99)
	}
	if got := stepNumbers(h.before(500)); len(got) != 400 || got[0] != 100 || got[399] != 499 {
		t.Errorf("before mark 500: %d steps, want 400 (100..499)", len(got))
	}
	if got := h.before(50); got != nil {
		t.Errorf("before a mark older than the ring: %v, want none", stepNumbers(got))
	}
	h.reset()
	if got := h.before(h.total); got != nil {
		t.Errorf("after a reset: %v, want none", stepNumbers(got))
	}
	r := record(9999)
	h.add([]stage.Record{r})
	if got := stepNumbers(h.before(h.total)); len(got) != 1 || got[0] != 9999 {
		t.Errorf("after a reset and one step: %v, want [9999]", got)
	}

	var slow history
	for i := range int64(100) { // 200 s of 2 s steps
		r := slowRecord(i)
		slow.add([]stage.Record{r})
	}
	got = stepNumbers(slow.before(slow.total))
	if len(got) != 31 || got[0] != 69 || got[30] != 99 {
		t.Errorf("2 s steps: %d steps (%v), want the last minute's 31 (69..99)", len(got), got)
	}
}

// Keeping a step costs the publisher goroutine a copy and no allocation
// once the ring has grown; the training thread's Publish is not touched.
func TestHistoryAddAllocatesNothing(t *testing.T) {
	var h history
	recs := make([]stage.Record, 64)
	for range BackfillSteps / 64 {
		h.add(recs)
	}
	if n := testing.AllocsPerRun(100, func() { h.add(recs) }); n != 0 {
		t.Errorf("history.add: %v allocations, want 0", n)
	}
}

// nextOf reads frames until one of typ arrives, skipping others.
func nextOf(t *testing.T, c *Conn, typ ...string) *Frame {
	t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := c.Next()
		if err != nil {
			t.Fatalf("waiting for %v: %v", typ, err)
		}
		for _, want := range typ {
			if f.Type == want {
				return f
			}
		}
	}
}

// A viewer that asks for the backfill gets the steps before its attach
// once, right after the hello, then the live steps, each step once; a
// viewer that does not ask (an older pipetop, socat) gets no backfill.
func TestBackfillOnAttach(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 10 * time.Millisecond})
	for i := range int64(30) {
		r := slowRecord(i)
		s.Publish(&r)
	}
	time.Sleep(100 * time.Millisecond) // flushes after the last step
	fill := dialView(t, s.Path(), ViewOptions{Backfill: true})
	old := dial(t, s.Path())
	waitViewers(t, s, 2)
	time.Sleep(30 * time.Millisecond)
	for i := int64(30); i < 35; i++ {
		r := slowRecord(i)
		s.Publish(&r)
	}
	f := nextOf(t, fill, TypeBackfill, TypeSteps)
	if f.Type != TypeBackfill {
		t.Fatalf("first frame with steps: %s, want backfill", f.Type)
	}
	got := stepNumbers(f.Steps)
	if len(got) != 30 || got[0] != 0 || got[29] != 29 {
		t.Fatalf("backfill: steps %v, want 0..29", got)
	}
	var live []int64
	for len(live) < 5 {
		live = append(live, stepNumbers(nextOf(t, fill, TypeSteps, TypeBackfill).Steps)...)
	}
	if live[0] != 30 || live[len(live)-1] != 34 || len(live) != 5 {
		t.Errorf("live steps after the backfill: %v, want 30..34", live)
	}
	f = nextOf(t, old, TypeBackfill, TypeSteps)
	if f.Type != TypeSteps || f.Steps[0].Step != 30 {
		t.Errorf("viewer without backfill: first %s frame from step %d, want steps from 30", f.Type, f.Steps[0].Step)
	}
}

// A viewer of agg frames that asks for the backfill gets the steps sent
// before it attached, and no step twice.
func TestBackfillBeforeAggregates(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 10 * time.Millisecond})
	for i := range int64(20) {
		r := record(i)
		s.Publish(&r)
	}
	time.Sleep(50 * time.Millisecond)
	c := dialView(t, s.Path(), ViewOptions{Backfill: true, Aggregates: true})
	waitViewers(t, s, 1)
	for i := int64(20); i < 1020; i++ {
		r := record(i)
		s.Publish(&r)
		if i%10 == 9 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	s.Close()
	seen := map[int64]int{}
	aggSteps := int64(0)
	first := ""
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := c.Next()
		if err != nil {
			break
		}
		switch f.Type {
		case TypeBackfill, TypeSteps:
			if first == "" {
				first = f.Type
			}
			for _, n := range stepNumbers(f.Steps) {
				seen[n]++
			}
		case TypeAgg:
			if first == "" {
				first = f.Type
			}
			aggSteps += f.Agg.Steps
		}
	}
	// Steps published between the viewer's attach and its hello come
	// before the backfill (docs/protocol.md: the viewer puts them in
	// order); on a loaded machine the hello is read after a flush or two.
	if first != TypeBackfill && first != TypeSteps {
		t.Errorf("first frame with steps: %q, want backfill (or steps sent before the hello was read)", first)
	}
	if len(seen) == 0 || seen[0] != 1 {
		t.Errorf("the backfill's first step came %d times, want once", seen[0])
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("step %d came %d times as a record", n, k)
		}
	}
	if int64(len(seen))+aggSteps != 1020 {
		t.Errorf("%d steps as records + %d aggregated, want 1,020 in all", len(seen), aggSteps)
	}
}

// A backfill frame is the steps frame's compact form under another type:
// the fast path reads it, as encoding/json does.
func TestBackfillDecodesFast(t *testing.T) {
	recs := []stage.Record{record(1), record(2)}
	line := bytes.TrimSuffix(appendStepFrame(nil, TypeBackfill, recs), []byte("\n"))
	if !Compact(line) {
		t.Fatalf("a backfill frame is not read by the fast path: %s", line)
	}
	f, err := DecodeFrame(line)
	if err != nil || f.Type != TypeBackfill || len(f.Steps) != 2 || f.Steps[1].Step != recs[1].Step {
		t.Fatalf("decoded %+v, %v", f, err)
	}
	agreeWithJSON(t, line, decodeStepsFast)
}
