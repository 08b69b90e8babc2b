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
