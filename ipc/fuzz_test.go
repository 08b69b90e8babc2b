package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

func FuzzDecodeFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","v":1,"hello":{"name":"x","pid":1,"stages":["data_wait","other"]}}`,
		`{"type":"hello","v":1,"hello":{"name":"x","pid":1,"tid":1,"stage_word":{"addr":140219872,"stages":["data_wait","forward"]}}}`,
		`{"type":"hello","v":1,"hello":{"role":"viewer","accepts":["stacks"],"stacks_inside":"ptrace_scope 3"}}`,
		`{"type":"steps","steps":[{"step":1,"t0":1,"t1":2,"n":3,"loss":0.5,"cpu":[1,2],"gpu":[-1,4]}]}`,
		`{"type":"loader","loader":{"samples_per_sec":3.5,"read_amp":1.2}}`,
		`{"type":"event","event":{"t":1,"kind":"checkpoint","msg":"ok"}}`,
		`{"type":"stages","stages":["a"]}`,
		`{"type":"drops","dropped":3}`,
		`{"type":"progress","progress":{"t":5,"step":2,"step_t0":3,"stage":"data_wait","since":4,"done":2}}`,
		`{"type":"later","later":{"x":1}}`,
		`{"type":"stacks","stacks":{"t":9,"interval_ns":1000000000,"hz":100,"frames":[{"name":"f","file":"a.py","line":3},{"name":"g","file":"zarr/core.py","line":9,"lib":"zarr"}],"rows":[{"role":"train","stage":"other","stack":[0,1],"n":4,"ns":40000000},{"role":"worker","worker":1,"stack":[1],"n":1,"ns":1}]}}`,
		`{"type":"stacks","stacks":{"frames":[],"rows":[{"role":"train","stack":[0],"n":1,"ns":1}]}}`,
		`{"type":"error","error":"no"}`,
		`{"type":"agg","agg":{"steps":3,"first":1,"last":3,"t0":10,"t1":90,"n":24,"loss":{"step":3,"value":0.5},"wall":{"n":3,"sum":80,"bins":[20,1,30,2]},"busy":{"n":0,"sum":0},"cpu":[{"n":3,"sum":7000000,"bins":[1439,1,1500,2]},{"n":2,"sum":9,"bins":[4,1,5,1]}],"gpu":[{"n":0,"sum":0},{"n":1,"sum":5,"bins":[5,1]}],"waits":[2,3000000,3,3500000]}}`,
		`{"type":"hello","v":2}`,
		`not json`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeFrame(data)
		if err != nil {
			return
		}
		if fr.Type == "" {
			t.Fatalf("decoded a frame without a type from %q", data)
		}
		if p := fr.Progress; fr.Type == TypeProgress && (p == nil || p.Step < -1 || len(p.Stage) > MaxStageName) {
			t.Fatalf("accepted a bad progress frame %q", data)
		}
		if fr.Type == TypeStacks {
			if fr.Stacks == nil || fr.Stacks.Validate() != nil {
				t.Fatalf("accepted a bad stacks frame %q", data)
			}
			for _, r := range fr.Stacks.Rows {
				for _, j := range r.Stack {
					_ = fr.Stacks.Frames[j] // every index is in range
				}
			}
		}
		if fr.Type == TypeAgg {
			// An accepted aggregate summarizes without a panic, alone and
			// as the stage list it names.
			names := make([]string, len(fr.Agg.CPU))
			for k := range names {
				names[k] = fmt.Sprintf("s%d", k)
			}
			if len(names) > 0 {
				names[0] = stage.DataWait
			}
			ring := stage.NewAggRing(names, 2)
			ring.Add(*fr.Agg)
			if s := ring.Summarize(0); s.Steps != int(fr.Agg.Steps) || s.WallP99 < s.WallP50 {
				t.Fatalf("aggregate %q summarized as %+v", data, s)
			}
			tot := stage.NewTotals(names)
			tot.AddAggregate(fr.Agg)
		}
		for i := range fr.Steps {
			r := &fr.Steps[i]
			if r.NumStages > len(r.CPU) {
				t.Fatalf("record with %d stages", r.NumStages)
			}
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"type\":\"drops\"}\n{\"type\":\"error\"}\n"), 3)
	f.Add([]byte("no newline"), 1)
	f.Fuzz(func(t *testing.T, data []byte, chunk int) {
		r := NewReader(bytes.NewReader(data))
		for i := 0; i < 1000; i++ {
			line, err := r.ReadLine()
			if err != nil {
				return
			}
			if bytes.IndexByte(line, '\n') >= 0 || len(line) > MaxFrame {
				t.Fatalf("bad line %q", line)
			}
		}
	})
}

// FuzzFastAgg checks the compact agg decoder against encoding/json:
// whenever the fast path accepts a line, the general decoder must agree.
func FuzzFastAgg(f *testing.F) {
	f.Add([]byte(`{"type":"agg","agg":{"steps":3,"first":1,"last":3,"t0":10,"t1":90,"n":24,"loss":{"step":3,"value":0.5},"wall":{"n":3,"sum":80,"bins":[20,1,30,2]},"busy":{"n":0,"sum":0},"cpu":[{"n":3,"sum":7000000,"bins":[1439,1,1500,2]}],"gpu":[{"n":1,"sum":5,"bins":[5,1]}],"waits":[2,3000000]}}`))
	f.Add([]byte(`{"type":"agg","agg":{"steps":1,"first":1,"last":1,"t0":1,"t1":2,"n":0,"wall":{"n":1,"sum":1,"bins":[1,1]},"busy":{"n":0,"sum":0},"cpu":[]}}`))
	f.Add([]byte(`{"type":"agg","agg":{"steps":1,"first":1,"last":1,"t0":1,"t1":2,"n":0,"wall":{"n":1,"sum":1,"bins":[1,1]},"busy":{"n":0,"sum":0},"cpu":[{"n":1,"sum":3000000,"bins":[1051,1]}],"pauses":[0,1,3000000]}}`))
	f.Fuzz(func(t *testing.T, data []byte) { agreeWithJSON(t, data, decodeAggFast) })
}

// FuzzFastSteps checks the compact steps decoder against encoding/json:
// whenever the fast path accepts a line, the general decoder must agree.
func FuzzFastSteps(f *testing.F) {
	f.Add([]byte(`{"type":"steps","steps":[{"step":1,"t0":1,"t1":2,"n":3,"loss":0.5,"cpu":[1,2],"gpu":[-1,4]}]}`))
	f.Add([]byte(`{"type":"steps","steps":[]}`))
	f.Add([]byte(`{"type":"steps","steps":[{"step":1,"t0":1,"t1":2,"n":3,"cpu":[]},{"step":2,"t0":1,"t1":2,"n":3,"cpu":[9]}]}`))
	f.Add([]byte(`{"type":"backfill","steps":[{"step":1,"t0":1,"t1":2,"n":3,"cpu":[7]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { agreeWithJSON(t, data, decodeStepsFast) })
}

// agreeWithJSON fails t when dec, a fast decoder, accepts data and
// encoding/json refuses it or decodes it to another frame.
func agreeWithJSON(t *testing.T, data []byte, dec func([]byte) (*Frame, error)) {
	t.Helper()
	fast, err := dec(data)
	if err != nil {
		return
	}
	var slow Frame
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", data, err)
	}
	a, _ := json.Marshal(fast)
	b, _ := json.Marshal(&slow)
	if string(a) != string(b) {
		t.Fatalf("decoders disagree on %q:\nfast %s\nslow %s", data, a, b)
	}
}
