package ring

import (
	"math"
	"slices"
	"testing"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name    string
		cap     int
		push    []float64
		want    []float64
		wantMax float64
		maxOK   bool
	}{
		{"empty", 3, nil, []float64{}, 0, false},
		{"partial", 4, []float64{1, 5, 2}, []float64{1, 5, 2}, 5, true},
		{"exactly full", 3, []float64{1, 2, 3}, []float64{1, 2, 3}, 3, true},
		{"wrapped", 3, []float64{9, 1, 2, 3, 4}, []float64{2, 3, 4}, 4, true},
		{"wrapped twice", 2, []float64{1, 2, 3, 4, 5}, []float64{4, 5}, 5, true},
		{"capacity one", 1, []float64{7, 8}, []float64{8}, 8, true},
		{"negative values", 3, []float64{-3, -1, -2}, []float64{-3, -1, -2}, -1, true},
		{"nan gaps skipped by max", 3, []float64{math.NaN(), 2, math.NaN()}, []float64{math.NaN(), 2, math.NaN()}, 2, true},
		{"only nan", 2, []float64{math.NaN()}, []float64{math.NaN()}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.cap)
			for _, v := range tt.push {
				r.Push(v)
			}
			got := r.Values(nil)
			if !slices.EqualFunc(got, tt.want, sameFloat) {
				t.Fatalf("Values = %v, want %v", got, tt.want)
			}
			if r.Len() != len(tt.want) {
				t.Fatalf("Len = %d, want %d", r.Len(), len(tt.want))
			}
			m, ok := r.Max()
			if ok != tt.maxOK || (ok && m != tt.wantMax) {
				t.Fatalf("Max = %v,%v want %v,%v", m, ok, tt.wantMax, tt.maxOK)
			}
			last, ok := r.Last()
			if ok != (len(tt.want) > 0) {
				t.Fatalf("Last ok = %v with %d values", ok, len(tt.want))
			}
			if ok && !sameFloat(last, tt.want[len(tt.want)-1]) {
				t.Fatalf("Last = %v, want %v", last, tt.want[len(tt.want)-1])
			}
		})
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func TestResetKeepsCapacity(t *testing.T) {
	r := New(2)
	r.Push(1)
	r.Push(2)
	r.Reset()
	if r.Len() != 0 || r.Cap() != 2 {
		t.Fatalf("after Reset Len=%d Cap=%d", r.Len(), r.Cap())
	}
	if _, ok := r.Last(); ok {
		t.Fatal("Last ok on empty ring")
	}
	r.Push(3)
	if got := r.Values(nil); !slices.Equal(got, []float64{3}) {
		t.Fatalf("Values = %v", got)
	}
}

func TestNewPanicsOnZeroCapacity(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New(0) did not panic")
		}
	}()
	New(0)
}

func TestNoAllocations(t *testing.T) {
	r := New(120)
	dst := make([]float64, 0, 120)
	allocs := testing.AllocsPerRun(100, func() {
		r.Push(1.5)
		r.Last()
		r.Max()
		dst = r.Values(dst)
	})
	if allocs != 0 {
		t.Fatalf("allocs per push+read = %v, want 0", allocs)
	}
}

func BenchmarkPush(b *testing.B) {
	r := New(300)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Push(float64(i))
	}
}

func BenchmarkValues300(b *testing.B) {
	r := New(300)
	for i := range 450 {
		r.Push(float64(i))
	}
	dst := make([]float64, 0, 300)
	b.ReportAllocs()
	for b.Loop() {
		dst = r.Values(dst)
	}
}
