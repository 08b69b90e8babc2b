package episodes

import (
	"slices"
	"testing"
)

func TestShard(t *testing.T) {
	for _, tc := range []struct{ n, world int }{{10, 2}, {11, 2}, {7, 3}, {2, 5}, {64, 4}} {
		inner := Uniform{N: tc.n, Seed: 3}
		for epoch := int64(0); epoch < 2; epoch++ {
			seen := map[int32]int{}
			total := 0
			for r := 0; r < tc.world; r++ {
				s, err := NewShard(inner, r, tc.world)
				if err != nil {
					t.Fatal(err)
				}
				o := s.Order(epoch)
				if len(o) != s.Len() || s.Len() != (tc.n+tc.world-1)/tc.world {
					t.Fatalf("n=%d world=%d rank %d: %d windows, Len %d", tc.n, tc.world, r, len(o), s.Len())
				}
				if !slices.Equal(o, s.Order(epoch)) {
					t.Fatalf("rank %d: order of epoch %d is not deterministic", r, epoch)
				}
				for _, w := range o {
					seen[w]++
				}
				total += len(o)
			}
			if len(seen) != tc.n {
				t.Fatalf("n=%d world=%d epoch %d: ranks cover %d windows, want all %d", tc.n, tc.world, epoch, len(seen), tc.n)
			}
			if pad := total - tc.n; pad >= tc.world && tc.n >= tc.world {
				t.Fatalf("n=%d world=%d: %d padded windows, want < world", tc.n, tc.world, pad)
			}
		}
	}
	a, _ := NewShard(Uniform{N: 100, Seed: 1}, 0, 2)
	if slices.Equal(a.Order(0), a.Order(1)) {
		t.Fatal("shard order does not change with the epoch")
	}
	for _, bad := range [][2]int{{2, 2}, {-1, 2}, {0, 0}} {
		if _, err := NewShard(Uniform{N: 4}, bad[0], bad[1]); err == nil {
			t.Fatalf("NewShard(rank %d, world %d) accepted", bad[0], bad[1])
		}
	}
}
