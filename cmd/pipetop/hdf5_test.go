package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/summary"
)

// The robomimic-style files make_hdf5.py writes for these tests: 6
// demonstrations of 60 frames of 84x84x3, each trajectory in one chunk
// of 1.27 MB (more than h5py's 1 MiB chunk cache, so every frame read
// decompresses it again: 60x the bytes the read returns).
const (
	h5Frames   = 60
	h5Datasets = 6
)

// makeHDF5 writes a robomimic-style file with make_hdf5.py (extra its
// options) at name in a temporary directory.
func makeHDF5(t *testing.T, name string, extra ...string) string {
	t.Helper()
	if out, err := exec.Command(debPython, "-c", "import h5py").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import h5py (apt-get install python3-h5py): %v\n%s", debPython, err, out)
	}
	data := filepath.Join(t.TempDir(), name)
	args := append([]string{example("make_hdf5.py"), data, "--frames", "60", "--demos", "6"}, extra...)
	if out, err := exec.Command(debPython, args...).CombinedOutput(); err != nil {
		t.Fatalf("make_hdf5.py: %v\n%s", err, out)
	}
	return data
}

// tolerance is how far a ratio of counts may be from the layout's: 1 %
// when every read was counted (share 0), 4 % when counted in a share of
// the time and scaled.
func tolerance(share float64) float64 {
	if share == 0 {
		return 0.01
	}
	return 0.04
}

// checkHDF5 compares each image dataset's measured read amplification
// with want (within 5 %) and checks one frame per read and the fork flag.
func checkHDF5(t *testing.T, s *summary.Script, want float64, forked bool) {
	t.Helper()
	l := s.Loader
	if l == nil || len(l.HDF5) == 0 {
		t.Fatalf("loader statistics %+v: want the HDF5 reads", l)
	}
	var images int
	for _, d := range l.HDF5 {
		if !strings.HasSuffix(d.Path, "/obs/agentview_image") {
			continue
		}
		images++
		if math.Abs(d.ReadAmp-want) > 0.05*want {
			t.Errorf("%s: read amplification %.2f, computed from the layout %.1f (want within ±5 %%)", d.Path, d.ReadAmp, want)
		}
		// Reads counted in a share of the time are scaled estimates: a
		// dataset's few reads a take round to whole counts.
		if f, tol := d.FramesPerCall(), tolerance(l.CountedShare); f < 1-tol || f > 1+tol {
			t.Errorf("%s: %.2f frames per read, the Dataset reads 1 (counted %.2f of the time)", d.Path, f, l.CountedShare)
		}
		if d.OpenedBeforeFork != forked {
			t.Errorf("%s: opened before the fork %v (%d forked reads), want %v", d.Path, d.OpenedBeforeFork, d.ForkedReads, forked)
		}
	}
	if images < h5Datasets/2 {
		t.Errorf("%d image datasets read, want most of the %d", images, h5Datasets)
	}
	t.Logf("read amplification %.2f measured (%s), %.1f computed from the layout; %.0f samples/s", stage.HDF5ReadAmp(l), l.HDF5[0].FilterText(), want, s.SamplesPerSec)
}

// between is the text of s from the first prefix up to the next backquote.
func between(s, prefix string) string {
	i := strings.Index(s, prefix)
	if i < 0 {
		return ""
	}
	rest := s[i+len(prefix):]
	if j := strings.IndexByte(rest, '`'); j >= 0 {
		rest = rest[:j]
	}
	return prefix + rest
}

// TestRunHDF5TrajectoryChunks runs a plain PyTorch loop over an HDF5 file
// chunked one trajectory per chunk (gzip): the measured amplification is
// the layout's, the verdict names the dataset and gives the h5repack
// command, which this test runs as printed; on the copy (1-frame chunks)
// the same loop reads 1x, runs faster, and the advice is gone.
func TestRunHDF5TrajectoryChunks(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	data := makeHDF5(t, "robomimic.hdf5", "--compression", "gzip")
	docs, stderr, status := e.run(t, nil, debPython, example("hdf5_loop.py"), data, "--seconds", "4")
	if status != 0 || len(docs) != 1 {
		t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
	}
	v := docs[0].Verdict
	if v.Kind != verdict.InputBound && v.Kind != verdict.ModerateInput {
		t.Fatalf("verdict %s, want input-bound (or moderately on a loaded machine)", v)
	}
	rechunked := strings.TrimSuffix(data, ".hdf5") + "-rechunked.hdf5"
	for _, want := range []string{"the chunking of /data/demo_", "/obs/agentview_image in robomimic.hdf5 (one chunk of 60x84x84x3 holds all 60 frames, gzip 4) decompresses 60x",
		":CHUNK=1x84x84x3 " + data + " " + rechunked + "`", "`pipetrain data import " + data + " "} {
		if !strings.Contains(v.Next, want) {
			t.Errorf("next step %q lacks %q", v.Next, want)
		}
	}
	if strings.Contains(v.Next, "fork") {
		t.Errorf("a file each worker opens is flagged as opened before the fork: %s", v.Next)
	}
	checkHDF5(t, &docs[0], h5Frames, false)
	t.Logf("%s", v)
	before := docs[0].SamplesPerSec

	// The advice, followed as written.
	repack := between(v.Next, "h5repack -l ")
	if args := strings.Fields(repack); len(args) != 5 {
		t.Fatalf("no h5repack command in %q", v.Next)
	} else if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", repack, err, out)
	}
	docs, stderr, status = e.run(t, nil, debPython, example("hdf5_loop.py"), rechunked, "--seconds", "4")
	if status != 0 || len(docs) != 1 {
		t.Fatalf("rechunked: status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
	}
	checkHDF5(t, &docs[0], 1, false)
	if v := docs[0].Verdict.String(); strings.Contains(v, "h5repack") || strings.Contains(v, "chunking of") {
		t.Errorf("1-frame chunks still get rechunk advice: %s", v)
	}
	if after := docs[0].SamplesPerSec; after < 2*before {
		t.Errorf("rechunked: %.0f samples/s, before %.0f: want at least twice as fast", after, before)
	}
	t.Logf("rechunked: %s", docs[0].Verdict)
}

// TestRunHDF5OpenedBeforeFork reads lzf trajectory chunks through a file
// the Dataset opened in __init__, before the workers fork: amplified and
// flagged, with both pieces of advice; lzf 1-frame chunks opened in each
// worker are healthy: neither.
func TestRunHDF5OpenedBeforeFork(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	for _, tc := range []struct {
		name   string
		chunk  string
		open   string
		amp    float64
		forked bool
	}{
		{"trajectory chunks opened before the fork", "0", "init", h5Frames, true},
		{"1-frame chunks opened in each worker", "1", "lazy", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := makeHDF5(t, "demos.hdf5", "--compression", "lzf", "--chunk-frames", tc.chunk)
			docs, stderr, status := e.run(t, nil, debPython, example("hdf5_loop.py"), data, "--seconds", "3", "--open", tc.open)
			if status != 0 || len(docs) != 1 {
				t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
			}
			checkHDF5(t, &docs[0], tc.amp, tc.forked)
			v := docs[0].Verdict
			// A loaded machine may make each epoch's restart of the
			// workers the stall that recurs: input stalls, with the same
			// advice after persistent_workers.
			if k := v.Kind; tc.amp > 1 && k != verdict.InputBound && k != verdict.ModerateInput && k != verdict.InputStalls {
				t.Fatalf("verdict %s, want input-bound (or moderately, or stalls at each epoch, on a loaded machine)", v)
			}
			for want, present := range map[string]bool{
				"demos.hdf5 is opened before the DataLoader's workers fork": tc.forked,
				"h5repack -l ":  tc.amp > 1,
				"chunking of /": tc.amp > 1,
			} {
				if strings.Contains(v.String(), want) != present {
					t.Errorf("verdict %q: %q present %v, want %v", v, want, !present, present)
				}
			}
			t.Logf("%s", v)
		})
	}
}

// TestRunHDF5BadInput reads a truncated HDF5 file and a dataset whose
// filter h5py cannot decode under pipetop run: the script fails with the
// exception it raises without pipetop, word for word (its traceback has
// the counting wrapper's frame too).
func TestRunHDF5BadInput(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	good := makeHDF5(t, "good.hdf5", "--compression", "gzip", "--chunk-frames", "10")
	dir := t.TempDir()
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.hdf5")
	if err := os.WriteFile(truncated, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown-filter.hdf5")
	const writeUnknown = `
import sys, h5py
with h5py.File(sys.argv[1], "w") as f:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((4, 2))
    dcpl.set_filter(32001, h5py.h5z.FLAG_OPTIONAL, (0,))
    f.create_group("data/demo_0/obs")
    sid = h5py.h5d.create(f.id, b"data/demo_0/obs/agentview_image", h5py.h5t.NATIVE_UINT8, h5py.h5s.create_simple((8, 2)), dcpl=dcpl)
    sid.write_direct_chunk((0, 0), b"12345678", 0)
`
	if out, err := exec.Command(debPython, "-c", writeUnknown, unknown).CombinedOutput(); err != nil {
		t.Fatalf("writing the unknown filter: %v\n%s", err, out)
	}
	read := filepath.Join(dir, "read.py")
	const readFrame = `
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    d = f["data/demo_0/obs/agentview_image"]
    d[1]
    d[3]
`
	if err := os.WriteFile(read, []byte(readFrame), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{truncated, unknown} {
		plain, err := exec.Command(debPython, read, file).CombinedOutput()
		if err == nil {
			t.Fatalf("%s reads without an error", file)
		}
		cmd := e.command(t, nil, "--no-tui", "--", debPython, read, file)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Fatalf("%s: pipetop run exited 0; stderr:\n%s", file, stderr.String())
		}
		want := lastLine(string(plain))
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("%s under pipetop run: stderr lacks the plain run's %q:\n%s", filepath.Base(file), want, stderr.String())
		}
		t.Logf("%s: %s", filepath.Base(file), want)
	}
}
