package main

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// TestReplayOfARecordingMadeBefore: testdata/before-sources.pipetop was
// recorded by pipetop before sources owned their readings (host entries
// then held typed cpu, gpu and process fields); testdata/before-sources.json
// is what that pipetop's `replay --json --at 3.5s` printed. This pipetop
// must print the same, but for one field whose meaning changed since on
// purpose: summary.waits.typical_ns is the wait pattern's 40 % quantile
// (stage.TypicalRank), no longer the median.
func TestReplayOfARecordingMadeBefore(t *testing.T) {
	want, err := os.ReadFile("testdata/before-sources.json")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"replay", "--json", "testdata/before-sources.pipetop", "--at", "3.5s"}, &out, &errb); err != nil {
		t.Fatalf("replay: %v\n%s", err, errb.String())
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("the replay of an old recording changed:\n--- now\n%s\n--- then\n%s", out.Bytes(), want)
	}
}
