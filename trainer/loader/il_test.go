package loader

import (
	"bytes"
	"testing"
)

func TestInterleave3(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 32, 45} {
		r, g, b := make([]byte, n), make([]byte, n), make([]byte, n)
		want := make([]byte, 3*n)
		for i := range n {
			r[i], g[i], b[i] = byte(i), byte(100+i), byte(200+i)
			want[3*i], want[3*i+1], want[3*i+2] = r[i], g[i], b[i]
		}
		got := make([]byte, 3*n)
		interleave3(got, r, g, b)
		if !bytes.Equal(got, want) {
			t.Errorf("n=%d: got %v want %v", n, got, want)
		}
	}
}
