package stage

import (
	"reflect"
	"testing"
)

func TestMergeStacks(t *testing.T) {
	w := 1
	a := &StackSamples{Hz: 100, TimeNs: 5, Frames: []CodeFrame{{Name: "main", File: "t.py"}, {Name: "hot", File: "t.py", Line: 3}},
		Rows: []StackRow{{Role: RoleWorker, Worker: &w, Stack: []int{0, 1}, N: 2, Ns: 20}}, Dropped: 1}
	b := &StackSamples{Hz: 50, Frames: []CodeFrame{{Name: "step", File: "t.py", Line: 9}, {Name: "main", File: "t.py"}},
		Rows:    []StackRow{{Role: RoleTrain, Stage: "forward", Stack: []int{1, 0}, N: 3, Ns: 30}},
		Threads: []ThreadSamples{{TID: 7, Rows: []ThreadRow{{Stack: []int{0}, N: 1}}}}, Dropped: 2}
	got := MergeStacks(a, b)
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	wantFrames := []CodeFrame{{Name: "main", File: "t.py"}, {Name: "hot", File: "t.py", Line: 3}, {Name: "step", File: "t.py", Line: 9}}
	if !reflect.DeepEqual(got.Frames, wantFrames) {
		t.Errorf("frames %v, want %v", got.Frames, wantFrames)
	}
	if len(got.Rows) != 2 || !reflect.DeepEqual(got.Rows[1].Stack, []int{0, 2}) || got.Rows[1].Stage != "forward" {
		t.Errorf("rows %+v: want a's row then b's re-indexed (main, step)", got.Rows)
	}
	if len(got.Threads) != 1 || !reflect.DeepEqual(got.Threads[0].Rows[0].Stack, []int{2}) {
		t.Errorf("threads %+v: want b's thread re-indexed", got.Threads)
	}
	if got.Dropped != 3 {
		t.Errorf("dropped %d, want a's 1 and b's 2", got.Dropped)
	}
	if p := ProfileOf(got); p == nil || p.Dropped != 3 {
		t.Errorf("the profile of the merged samples: %+v, want 3 dropped", p)
	}
	if n, ns := got.Samples(); n != 5 || ns != 50 || got.Hz != 100 {
		t.Errorf("%d samples, %d ns at %v Hz; want 5, 50 at a's 100", n, ns, got.Hz)
	}
	if len(a.Frames) != 2 || len(a.Rows) != 1 || b.Rows[0].Stack[0] != 1 {
		t.Error("a or b changed")
	}
	for _, c := range []struct{ a, b, want *StackSamples }{{nil, b, b}, {a, nil, a}, {nil, nil, nil}} {
		if got := MergeStacks(c.a, c.b); got != c.want {
			t.Errorf("MergeStacks with a nil side = %p, want %p", got, c.want)
		}
	}
}
