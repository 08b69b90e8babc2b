package flame

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/export/flame/flametest"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording"
)

// frames is a stacks frame of the training thread in two stages and two
// workers.
func frames(t int64) *stage.StackSamples {
	w0, w1 := 0, 1
	return &stage.StackSamples{TimeNs: t, IntervalNs: 1e9, Hz: 100,
		Frames: []stage.CodeFrame{{Name: "<module>", File: "train.py", Line: 14}, {Name: "log;metrics", File: "train.py", Line: 88},
			{Name: "Array.__getitem__", File: "zarr/core.py", Line: 807, Lib: "zarr"}, {Name: "ZDS.__getitem__", File: "ds.py", Line: 9}},
		Rows: []stage.StackRow{
			{Role: stage.RoleTrain, Stage: stage.Other, Stack: []int{0, 1}, N: 30, Ns: 310e6},
			{Role: stage.RoleTrain, Stage: stage.DataWait, Stack: []int{0}, N: 60, Ns: 600e6},
			{Role: stage.RoleWorker, Worker: &w1, Stack: []int{3, 2}, N: 90, Ns: 950e6},
			{Role: stage.RoleWorker, Worker: &w0, Stack: []int{3, 2}, N: 95, Ns: 990e6},
			{Role: stage.RoleWorker, Worker: &w0, Stack: []int{3}, N: 5, Ns: 10e6},
		}}
}

// record writes a recording of a single trainer that sent n stacks frames
// between its steps, and one of rank 1 of a run.
func record(t *testing.T, n int) string {
	path := filepath.Join(t.TempDir(), "run.pipetop")
	w, err := recording.Create(path, recording.Header{StartNs: 1, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(0, 1e18)
	w.Hello(at, nil, &ipc.Hello{Name: "train", PID: 7, Stages: stage.Canonical}, "/tmp/x.sock")
	for i := range n {
		w.Frame(at.Add(time.Duration(i)*time.Second), nil, &ipc.Frame{Type: ipc.TypeStacks, Stacks: frames(1e18 + int64(i)*1e9)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// fromRecording reads the stacks frames of a recording as pipetop flame does.
func fromRecording(t *testing.T, path string) ([]Samples, int64, int64) {
	_, es, err := recording.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	var s Samples
	var n, ns int64
	for _, e := range es {
		if e.Frame != nil && e.Frame.Type == ipc.TypeStacks {
			s.Frames = append(s.Frames, e.Frame.Stacks)
			a, b := e.Frame.Stacks.Samples()
			n, ns = n+a, ns+b
		}
	}
	return []Samples{s}, n, ns
}

func TestSpeedscopeValidatesAndAddsUp(t *testing.T) {
	all, n, ns := fromRecording(t, record(t, 3))
	if n != 3*280 {
		t.Fatalf("the recording holds %d samples, want %d", n, 3*280)
	}
	var buf bytes.Buffer
	if err := WriteSpeedscope(&buf, "run.pipetop", all); err != nil {
		t.Fatal(err)
	}
	f, err := flametest.Check(buf.Bytes())
	if err != nil {
		t.Fatalf("not a valid speedscope file: %v\n%s", err, buf.String())
	}
	var names []string
	var total float64
	for _, p := range f.Profiles {
		names = append(names, p.Name)
		total += p.EndValue
	}
	if strings.Join(names, ", ") != "training thread, worker 0, worker 1" {
		t.Errorf("profiles %v", names)
	}
	if int64(total) != ns {
		t.Errorf("the profiles' weights add up to %v ns, the recording's samples to %d ns", total, ns)
	}
	if f.Shared.Frames[0].Name != "[other]" || f.Shared.Frames[5].Name != "zarr Array.__getitem__" {
		t.Errorf("frames %+v: want the stage first and libraries named", f.Shared.Frames)
	}
}

func TestFoldedAddsUp(t *testing.T) {
	all, n, _ := fromRecording(t, record(t, 2))
	rank := 1
	all = append(all, Samples{Rank: &rank, Frames: []*stage.StackSamples{frames(5)}})
	n += 280
	var buf bytes.Buffer
	if err := WriteFolded(&buf, all); err != nil {
		t.Fatal(err)
	}
	var sum int64
	sc := bufio.NewScanner(&buf)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		i := strings.LastIndexByte(line, ' ')
		c, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil || strings.Count(line[:i], ";") < 1 {
			t.Fatalf("not a folded line: %q", line)
		}
		sum += c
	}
	if sum != n {
		t.Errorf("folded counts add up to %d, the samples to %d", sum, n)
	}
	want := []string{
		"training thread;[other];<module> (train.py:14);log,metrics (train.py:88) 60",
		"worker 0;ZDS.__getitem__ (ds.py:9);Array.__getitem__ (zarr/core.py:807) 190",
		"rank 1 · training thread;[other];<module> (train.py:14);log,metrics (train.py:88) 30",
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || l == w
		}
		if !found {
			t.Errorf("no line %q in\n%s", w, strings.Join(lines, "\n"))
		}
	}
}

// TestCheckerRejects shows the schema check can fail: each file breaks one
// rule of the format.
func TestCheckerRejects(t *testing.T) {
	good := `{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"}]},` +
		`"profiles":[{"type":"sampled","name":"p","unit":"nanoseconds","startValue":0,"endValue":5,"samples":[[0]],"weights":[5]}],"activeProfileIndex":0}`
	if _, err := flametest.Check([]byte(good)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for _, bad := range []struct{ from, to string }{
		{`"$schema":"https://www.speedscope.app/file-format-schema.json",`, ``},
		{`"unit":"nanoseconds"`, `"unit":"ns"`},
		{`"type":"sampled"`, `"type":"sampledd"`},
		{`"samples":[[0]]`, `"samples":[[0.5]]`},
		{`"samples":[[0]]`, `"samples":[[1]]`},
		{`"weights":[5]`, `"weights":[5,1]`},
		{`"endValue":5`, `"endValue":6`},
		{`{"name":"a"}`, `{"file":"a"}`},
		{`"activeProfileIndex":0`, `"activeProfileIndex":1`},
	} {
		doc := strings.Replace(good, bad.from, bad.to, 1)
		if _, err := flametest.Check([]byte(doc)); err == nil {
			t.Errorf("accepted %s -> %s", bad.from, bad.to)
		}
	}
}

// FuzzFlame writes whatever a recording file holds: no panic, and valid
// output whenever the recording reads.
func FuzzFlame(f *testing.F) {
	dir := f.TempDir()
	var seeds [][]byte
	for _, n := range []int{0, 2} {
		p := filepath.Join(dir, "seed"+strconv.Itoa(n))
		w, err := recording.Create(p, recording.Header{StartNs: 1})
		if err != nil {
			f.Fatal(err)
		}
		for i := range n {
			w.Frame(time.Unix(0, int64(i)), nil, &ipc.Frame{Type: ipc.TypeStacks, Stacks: frames(int64(i))})
		}
		w.Close()
		seeds = append(seeds, mustRead(f, p))
	}
	seeds = append(seeds, []byte("{\"pipetop_recording\":1}\n{\"t\":1,\"rank\":2,\"frame\":{\"type\":\"stacks\",\"stacks\":{\"frames\":[{\"name\":\"f\",\"file\":\"a\",\"line\":1}],\"rows\":[{\"role\":\"worker\",\"worker\":3,\"stack\":[0,0],\"n\":2,\"ns\":9}]}}}\n"))
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "r")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, es, _ := recording.ReadAll(p)
		byRank := map[int]*Samples{}
		var all []Samples
		for _, e := range es {
			if e.Frame == nil || e.Frame.Type != ipc.TypeStacks {
				continue
			}
			r := -1
			if e.Rank != nil {
				r = *e.Rank
			}
			if byRank[r] == nil {
				all = append(all, Samples{Rank: e.Rank})
				byRank[r] = &all[len(all)-1]
			}
			byRank[r].Frames = append(byRank[r].Frames, e.Frame.Stacks)
		}
		var buf bytes.Buffer
		if err := WriteSpeedscope(&buf, "f", all); err != nil {
			t.Fatal(err)
		}
		if _, err := flametest.Check(buf.Bytes()); err != nil {
			t.Fatalf("invalid speedscope output: %v", err)
		}
		if err := WriteFolded(&bytes.Buffer{}, all); err != nil {
			t.Fatal(err)
		}
	})
}

func mustRead(f *testing.F, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
