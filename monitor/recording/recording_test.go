package recording_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
)

func planted() rectest.Run {
	ms := time.Millisecond
	return rectest.Run{Name: "rec", PID: 42, Start: time.Unix(1_800_000_000, 0), Steps: 300,
		Stages: []string{stage.DataWait, stage.Forward, stage.Other}, Means: []time.Duration{2 * ms, 6 * ms, 1 * ms},
		GPU: []time.Duration{0, 5 * ms, 0}, Jitter: 0.2, Seed: 1}
}

func TestRoundTrip(t *testing.T) {
	es := planted().Entries()
	lost := "trainer /tmp/x: EOF"
	es = append(es, recording.Entry{T: es[len(es)-1].T.Add(time.Second), Lost: &lost})
	path := filepath.Join(t.TempDir(), "run.pipetop")
	if err := rectest.Write(path, es); err != nil {
		t.Fatal(err)
	}
	h, got, err := recording.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.Recording != recording.Version || h.StartNs != es[0].T.UnixNano() {
		t.Errorf("header %+v", h)
	}
	if len(got) != len(es) {
		t.Fatalf("read %d entries, wrote %d", len(got), len(es))
	}
	for i := range es {
		if !reflect.DeepEqual(got[i], es[i]) {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], es[i])
		}
	}
}

// TestRanksRoundTrip: the entries of a run's ranks keep their rank; an
// entry that names a negative rank, or a rank on host readings, is damage.
func TestRanksRoundTrip(t *testing.T) {
	var es []recording.Entry
	for r := range 2 {
		rank := r
		for _, e := range planted().Entries() {
			if e.Host == nil {
				e.Rank = &rank
			}
			es = append(es, e)
		}
	}
	path := filepath.Join(t.TempDir(), "ranks.pipetop")
	if err := rectest.Write(path, es); err != nil {
		t.Fatal(err)
	}
	_, got, err := recording.ReadAll(path)
	if err != nil || !reflect.DeepEqual(got, es) {
		t.Fatalf("read %d entries (%v), wrote %d; first ranked: %+v", len(got), err, len(es), got[0].Rank)
	}
	for _, bad := range []string{`{"t":1,"rank":-1,"lost":"x"}`, `{"t":1,"rank":0,"host":{}}`} {
		path := filepath.Join(t.TempDir(), "bad.pipetop")
		os.WriteFile(path, []byte("{\"pipetop_recording\":1}\n"+bad+"\n"), 0o644)
		if _, _, err := recording.ReadAll(path); !errors.Is(err, recording.ErrDamaged) {
			t.Errorf("%s: %v, want damage", bad, err)
		}
	}
}

// TestMergeRanks merges two ranks' recordings: every trainer entry of
// both in time order, host readings from the first only; a missing part is
// left out and a damaged one merged up to its damage, both named.
func TestMergeRanks(t *testing.T) {
	dir := t.TempDir()
	parts := []string{filepath.Join(dir, "run-rank0.pipetop"), filepath.Join(dir, "run-rank1.pipetop")}
	var want []recording.Entry
	for r, part := range parts {
		rank := r
		es := planted().Entries()
		for i := range es {
			es[i].T = es[i].T.Add(time.Duration(r) * time.Millisecond) // interleaved, never equal
			if es[i].Host == nil {
				es[i].Rank = &rank
			}
			if es[i].Host == nil || r == 0 {
				want = append(want, es[i])
			}
		}
		if err := rectest.Write(part, es); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortStableFunc(want, func(a, b recording.Entry) int { return a.T.Compare(b.T) })
	if recording.RankPath(filepath.Join(dir, "run.pipetop"), 1) != parts[1] {
		t.Fatalf("RankPath: %s", recording.RankPath(filepath.Join(dir, "run.pipetop"), 1))
	}
	merged := filepath.Join(dir, "run.pipetop")
	if err := recording.Merge(merged, parts); err != nil {
		t.Fatal(err)
	}
	if _, got, err := recording.ReadAll(merged); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("merged %d entries (%v), want %d", len(got), err, len(want))
	}

	missing := filepath.Join(dir, "run-rank2.pipetop")
	err := recording.Merge(merged, []string{parts[0], missing})
	_, got, rerr := recording.ReadAll(merged)
	if err == nil || !strings.Contains(err.Error(), missing) || rerr != nil || len(got) != len(planted().Entries()) {
		t.Fatalf("merge with a missing part: %v; read %d entries (%v), want rank 0's %d", err, len(got), rerr, len(planted().Entries()))
	}

	whole, _ := os.ReadFile(parts[1])
	os.WriteFile(parts[1], whole[:len(whole)/2], 0o644)
	err = recording.Merge(merged, parts)
	_, got, rerr = recording.ReadAll(merged)
	if !errors.Is(err, recording.ErrDamaged) || !strings.Contains(err.Error(), parts[1]) || rerr != nil || len(got) <= len(want)/2 || len(got) >= len(want) {
		t.Fatalf("merge with a damaged part: %v; read %d of %d entries (%v)", err, len(got), len(want), rerr)
	}
}

// TestTruncatedReplaysToTheDamage cuts a recording at many points: every
// cut reads a prefix of the entries and then says where the damage is.
func TestTruncatedReplaysToTheDamage(t *testing.T) {
	es := planted().Entries()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.pipetop")
	if err := rectest.Write(path, es); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.pipetop")
	for _, n := range []int{len(whole) - 1, len(whole) * 3 / 4, len(whole) / 2, len(whole) / 5, 40} {
		if err := os.WriteFile(cut, whole[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, got, err := recording.ReadAll(cut)
		if err == nil {
			t.Fatalf("cut at %d of %d bytes: no error", n, len(whole))
		}
		if !errors.Is(err, recording.ErrDamaged) && got != nil {
			t.Fatalf("cut at %d: %v, want ErrDamaged", n, err)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], es[i]) {
				t.Fatalf("cut at %d: entry %d differs", n, i)
			}
		}
		t.Logf("cut at %d/%d bytes: %d of %d entries: %v", n, len(whole), len(got), len(es), err)
	}
}

// TestPlainAndGzip: recordings made by other writers (plain NDJSON, gzip)
// read the same.
func TestPlainAndGzip(t *testing.T) {
	plain := []byte(`{"pipetop_recording":1,"start_ns":5}
{"t":10,"hello":{"name":"py","pid":7,"stages":["forward","other"]},"socket":"/s"}
{"t":20,"frame":{"type":"steps","steps":[{"step":0,"t0":1,"t1":9,"n":4,"cpu":[5,3]}]}}
`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	for name, b := range map[string][]byte{"plain": plain, "gzip": gz.Bytes()} {
		path := filepath.Join(t.TempDir(), name)
		os.WriteFile(path, b, 0o644)
		_, es, err := recording.ReadAll(path)
		if err != nil || len(es) != 2 || es[1].Frame.Steps[0].CPU[0] != 5 || es[0].Hello.Name != "py" {
			t.Errorf("%s: %v %+v", name, err, es)
		}
	}
}

func TestNotARecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(path, []byte(`{"hello":1}`+"\n"), 0o644)
	if _, _, err := recording.ReadAll(path); err == nil {
		t.Fatal("accepted a file that is not a recording")
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"pipetop_recording\":1}\n{\"t\":1,\"lost\":\"x\"}\n"))
	f.Add([]byte("{\"pipetop_recording\":1}\n{\"t\":1,\"frame\":{\"type\":\"steps\",\"steps\":[]}}\n"))
	f.Add([]byte("{\"pipetop_recording\":1}\n{\"t\":1,\"rank\":3,\"frame\":{\"type\":\"steps\",\"steps\":[]}}\n"))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0})
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, es, err := recording.ReadAll(path)
		if err != nil && es != nil && !errors.Is(err, recording.ErrDamaged) {
			t.Fatalf("entries with an error that is not damage: %v", err)
		}
		for _, e := range es {
			n := 0
			for _, set := range []bool{e.Hello != nil, e.Frame != nil, e.Lost != nil, e.Host != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("entry with %d kinds", n)
			}
			if e.Rank != nil && (*e.Rank < 0 || e.Host != nil) {
				t.Fatalf("entry with rank %d (host %v)", *e.Rank, e.Host != nil)
			}
		}
	})
}

// TestDaySize: a day at 10 steps/s (7 stages with GPU times, steps as a
// trainer batches them) stays under 200 MB, extrapolated from 20,000 steps.
func TestDaySize(t *testing.T) {
	ms := time.Millisecond
	r := rectest.Run{Name: "day", PID: 1, Start: time.Unix(1_800_000_000, 0), Steps: 20000,
		Stages: stage.Canonical, Means: []time.Duration{30 * ms, ms, 25 * ms, 30 * ms, 5 * ms, ms, ms},
		GPU: []time.Duration{0, ms, 20 * ms, 28 * ms, 4 * ms, 0, 0}, Jitter: 0.3, Seed: 2, Batch: 1}
	path := filepath.Join(t.TempDir(), "day.pipetop")
	if err := rectest.Write(path, r.Entries()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	perStep := float64(fi.Size()) / 20000
	day := perStep * 10 * 86400
	t.Logf("%.1f bytes/step: %.0f MB for 24 h at 10 steps/s", perStep, day/1e6)
	if day > 200e6 {
		t.Errorf("%.0f MB a day, want < 200 MB", day/1e6)
	}
}
