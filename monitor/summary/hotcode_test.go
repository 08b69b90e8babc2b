package summary

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestHotCodeCountsDrops: the end-of-run text says how many stacks the
// reader dropped, and nothing of drops where there were none.
func TestHotCodeCountsDrops(t *testing.T) {
	p := &stage.CodeProfile{Hz: 100, Samples: 40}
	var b strings.Builder
	writeHotCode(&b, p)
	if strings.Contains(b.String(), "dropped") {
		t.Errorf("no drops, yet the text says:\n%s", b.String())
	}
	p.Dropped = 4
	b.Reset()
	writeHotCode(&b, p)
	if !strings.Contains(b.String(), "stack samples: 40 at 100 Hz, 4 stacks dropped (their reads raced the interpreter)") {
		t.Errorf("the text does not count the 4 drops:\n%s", b.String())
	}
}
