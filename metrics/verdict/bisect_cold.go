package verdict

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the cold-phase rule; docs/verdicts.md.
const (
	// ColdShort: the loader alone from a cold page cache below this share
	// of itself warm: reading the files costs it that much, storage-bound.
	ColdShort = 0.7
	// SmallFile: files smaller than this on average (bytes) make a read's
	// latency outweigh its bytes: fewer, larger files come first.
	SmallFile = 1e6
)

// Cold is what pipetop bisect's cold phase says of the loader: the loader
// alone from a cold page cache (Cold) against itself warm (Warm).
type Cold struct {
	Cold, Warm *PhaseResult
	// Storage: from a cold cache the loader delivers under ColdShort of
	// what it delivers warm.
	Storage bool
}

// ColdFinding compares the cold phase with the warm loader phase; ok is
// false unless both were measured.
func ColdFinding(phases []PhaseResult) (Cold, bool) {
	c := Cold{Cold: measured(phases, PhaseCold), Warm: measured(phases, PhaseLoader)}
	if c.Cold == nil || c.Warm == nil || c.Warm.Rate() <= 0 {
		return Cold{}, false
	}
	c.Storage = c.Cold.Rate() < ColdShort*c.Warm.Rate()
	return c, true
}

// measured is the first measured phase called name, at any batch.
func measured(phases []PhaseResult, name string) *PhaseResult {
	for i := range phases {
		if phases[i].Name == name && phases[i].Measured() {
			return &phases[i]
		}
	}
	return nil
}

// Words is the finding in a sentence: "the loader alone delivers 40
// samples/s from a cold cache, 400 warm: storage-bound — the files are
// read at 12 MB/s (1200 files of 80 KiB on average)".
func (c Cold) Words() string {
	unit := c.Warm.RateUnit()
	s := fmt.Sprintf("the loader alone delivers %s %s from a cold cache, %s warm", num(c.Cold.Rate()), unit, num(c.Warm.Rate()))
	if !c.Storage {
		return s + ": not storage-bound — its time is decoding and transforming, not reading the files"
	}
	s += ": storage-bound"
	var facts []string
	if r := c.Cold.DiskReadPerSec; r > 0 {
		facts = append(facts, "the files are read at "+units.Bytes(r)+"/s")
	}
	if f := c.files(); f != "" {
		facts = append(facts, f)
	}
	if len(facts) > 0 {
		s += " — " + strings.Join(facts, ", ")
	}
	return s
}

// files says how many files were evicted and their mean size, "" when
// unknown.
func (c Cold) files() string {
	e := c.Cold.Eviction
	if e == nil || e.Files == 0 {
		return ""
	}
	return fmt.Sprintf("%d files of %s on average", e.Files, units.Bytes(float64(e.Bytes)/float64(e.Files)))
}

// small is whether the evicted files are small on average (SmallFile).
func (c Cold) small() bool {
	e := c.Cold.Eviction
	return e != nil && e.Files > 0 && float64(e.Bytes)/float64(e.Files) < SmallFile
}

// Advice is the fix of a storage-bound loader: for latency more workers
// or a deeper prefetch, for bandwidth a local copy or a cache, and fewer,
// larger files (first when the files are small).
func (c Cold) Advice() string {
	latency := "for the reads' latency, more workers than cores or a larger prefetch_factor (workers waiting on reads take no CPU)"
	bandwidth := "for its bandwidth, a local copy (a local disk, /dev/shm) or a cache of the data"
	if r := c.Cold.DiskReadPerSec; r > 0 {
		bandwidth += fmt.Sprintf(" (%s/s may be all the storage gives)", units.Bytes(r))
	}
	parts := []string{latency, bandwidth}
	if c.small() {
		parts = append([]string{"fewer, larger files (" + c.files() + ": pack them into shards or a chunked array)"}, parts...)
	}
	return "the storage holds the loader back: " + strings.Join(parts, "; ")
}

// withCold adds the cold phase's finding to v, the verdict of the other
// phases: a storage-bound loader that keeps up warm but not from a cold
// cache (the network, on cached batches, takes more) makes the run
// storage-bound; otherwise the finding is said after v's own.
func withCold(v Verdict, phases []PhaseResult, cached *PhaseResult) Verdict {
	c, ok := ColdFinding(phases)
	if !ok || v.Kind == ScriptFailed {
		return v
	}
	net := 0.0
	if cached != nil {
		net = cached.Rate()
	}
	switch {
	case c.Storage && !inputKind(v.Kind) && (net == 0 || c.Cold.Rate() < net):
		out := Verdict{Kind: StorageBound, Stage: stage.DataWait, Headline: "storage-bound: " + strings.Replace(c.Words(), ": storage-bound", "", 1)}
		if net > 0 {
			out.Headline += fmt.Sprintf("; the network takes %s on cached batches, so from storage the steps wait on the disk; with the files in the page cache: %s",
				num(net), v.Headline)
		}
		out.Next = c.Advice()
		return out
	case c.Storage && inputKind(v.Kind):
		v.Headline += "; from a cold cache it is slower still: " + c.Words()
		v.Next += "; then " + c.Advice()
	case c.Storage:
		v.Headline += "; " + c.Words() + ", but the network on cached batches is slower still"
	default:
		v.Headline += "; " + c.Words()
	}
	return v
}

// inputKind is whether k says the input holds the steps back, warm.
func inputKind(k Kind) bool {
	return k == InputBound || k == InputStalls || k == ModerateInput || k == Balanced
}
