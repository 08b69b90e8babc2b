package ipc

import (
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TypeBackfill carries the steps a trainer finished before a viewer
// attached (its recent window), sent once, right after the hello, to a
// viewer whose hello lists it in Accepts. The steps are in the form of a
// steps frame's, oldest first, indexed by the current stage list.
const TypeBackfill = "backfill"

// BackfillSteps is the most steps a trainer keeps for viewers that attach
// later, and BackfillWindow the span they cover at most: the last minute of
// a run of slow steps, the last BackfillSteps of a fast one (whose live
// steps fill a viewer's window within a second anyway).
const (
	BackfillSteps  = 2048
	BackfillWindow = time.Minute
)

// history is the ring of the steps the publisher goroutine sent, for
// viewers that attach later: written by that goroutine alone, after it
// took them off the training thread's ring, so the step path pays
// nothing for it. Its memory, BackfillSteps records (about 600 KB), is
// taken at once, at the first step.
type history struct {
	recs  []stage.Record
	next  int   // slot of the next write once recs is full
	total int64 // records ever added
	base  int64 // total at the last reset: older records are of another stage list
}

// add copies recs into the ring, overwriting the oldest once it is full.
func (h *history) add(recs []stage.Record) {
	if h.recs == nil && len(recs) > 0 {
		h.recs = make([]stage.Record, 0, BackfillSteps) // once: no garbage from growing
	}
	for i := range recs {
		if len(h.recs) < BackfillSteps {
			h.recs = append(h.recs, recs[i])
		} else {
			h.recs[h.next] = recs[i]
			h.next = (h.next + 1) % BackfillSteps
		}
		h.total++
	}
}

// reset forgets what the ring holds: a new stage list indexes the next
// records differently.
func (h *history) reset() {
	h.recs, h.next, h.base = h.recs[:0], 0, h.total
}

// before returns, oldest first, the records the ring holds that were added
// before the mark-th record (a count of total) and ended within
// BackfillWindow of the newest of them.
func (h *history) before(mark int64) []stage.Record {
	oldest := max(h.total-int64(len(h.recs)), h.base)
	if mark <= oldest {
		return nil
	}
	mark = min(mark, h.total)
	out := make([]stage.Record, 0, mark-oldest)
	for i := oldest; i < mark; i++ {
		out = append(out, *h.at(i))
	}
	cut := out[len(out)-1].EndNs - int64(BackfillWindow)
	first := 0
	for first < len(out) && out[first].EndNs < cut {
		first++
	}
	return out[first:]
}

// at returns the i-th record ever added; it must still be held.
func (h *history) at(i int64) *stage.Record {
	held := int64(len(h.recs))
	k := int(i - (h.total - held)) // 0 = the oldest held
	if held < BackfillSteps {
		return &h.recs[k]
	}
	return &h.recs[(h.next+k)%BackfillSteps]
}

// appendBackfill appends the backfill frames of recs (at most
// maxStepsPerFrame steps each) to frames.
func appendBackfill(frames [][]byte, recs []stage.Record) [][]byte {
	for len(recs) > 0 {
		k := min(len(recs), maxStepsPerFrame)
		frames = append(frames, appendStepFrame(nil, TypeBackfill, recs[:k]))
		recs = recs[k:]
	}
	return frames
}
