package importer

import (
	"fmt"
	"testing"
)

// TestShardFrames checks the import's memory bound: a camera shard is at
// most 1,000 frames and 64 MiB, at least one frame.
func TestShardFrames(t *testing.T) {
	cases := []struct {
		frameBytes int64
		set, want  int
	}{
		{84 * 84 * 3, 0, 1000},
		{1920 * 1080 * 3, 0, 10},
		{8192 * 8192 * 3, 0, 1},
		{84 * 84 * 3, 50, 50},
	}
	for _, c := range cases {
		if got := shardFrames(c.frameBytes, Options{ShardFrames: c.set}); got != c.want {
			t.Errorf("frame of %d bytes, --shard-frames %d: %d frames a shard, want %d", c.frameBytes, c.set, got, c.want)
		}
	}
}

func TestParseEnds(t *testing.T) {
	for in, want := range map[string]string{
		"10 20\n30\n": "[10 20 30]", "[5, 9]": "[5 9]", "3,7": "[3 7]",
	} {
		got, err := parseEnds([]byte(in))
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a b", "[1, x]"} {
		if _, err := parseEnds([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestGroupDatasets checks robomimic's per-demonstration datasets share a
// row in the text report, their frames and chunk frames as ranges.
func TestGroupDatasets(t *testing.T) {
	ds := []DatasetReport{
		{Path: "data/demo_0/obs/cam", DType: "|u1", Shape: []int{12, 8, 8, 3}, Chunks: []int{12, 8, 8, 3}, Filters: []string{"gzip(4)"}, ReadAmp: 12, RawBytes: 10},
		{Path: "data/demo_1/obs/cam", DType: "|u1", Shape: []int{9, 8, 8, 3}, Chunks: []int{9, 8, 8, 3}, Filters: []string{"gzip(4)"}, ReadAmp: 9, RawBytes: 5},
		{Path: "data/demo_1/obs/pos", DType: "<f8", Shape: []int{9, 3}},
	}
	rows := groupDatasets(ds)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(rows), rows)
	}
	g := rows[0]
	if g.path != "data/demo_*/obs/cam (2)" || g.shape != "[9..12 8 8 3]" || g.chunks != "[9..12 8 8 3]" || g.amp() != "9.0-12.0x" || g.raw != 15 {
		t.Errorf("row %+v (amp %s)", g, g.amp())
	}
	if p := rows[1]; p.path != "data/demo_*/obs/pos" || p.shape != "[9 3]" || p.chunks != "contiguous" {
		t.Errorf("row %+v", p)
	}
}
