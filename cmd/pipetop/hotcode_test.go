package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/export/flame/flametest"
	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/stacks"
	"github.com/pipetop/pipetop/monitor/summary"
)

// requireZarr fails unless Debian's Python imports zarr-python.
func requireZarr(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(debPython, "-c", "import zarr, numpy").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import zarr (apt-get install python3-zarr): %v\n%s", debPython, err, out)
	}
}

// computedAmp is the read amplification of reading one frame of the v2
// array at dir from its chunk shape alone: every chunk the frame touches
// is decoded whole.
func computedAmp(t *testing.T, dir string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".zarray"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Shape, Chunks []int }
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	amp := float64(meta.Chunks[0])
	for i := 1; i < len(meta.Shape); i++ {
		n := (meta.Shape[i] + meta.Chunks[i] - 1) / meta.Chunks[i]
		amp *= float64(n*meta.Chunks[i]) / float64(meta.Shape[i])
	}
	return amp
}

// checkAmp compares each camera's measured read amplification with want.
func checkAmp(t *testing.T, l *stage.LoaderStats, want float64) {
	t.Helper()
	if l == nil || len(l.Zarr) != 4 {
		t.Fatalf("loader statistics %+v: want the 4 cameras' Zarr reads", l)
	}
	for _, a := range l.Zarr {
		if math.Abs(a.ReadAmp-want) > 0.2*want {
			t.Errorf("%s: read amplification %.1f, computed from the chunk shape %.1f (want within ±20 %%)", a.Path, a.ReadAmp, want)
		}
		if f := a.FramesPerCall(); f < 0.99 || f > 1.01 {
			t.Errorf("%s: %.2f frames per read, the Dataset reads 1", a.Path, f)
		}
	}
	t.Logf("read amplification %.2f measured, %.2f computed from the chunks", l.Zarr[0].ReadAmp, want)
}

// TestRunZarrDefaultChunks runs a plain PyTorch loop over data zarr-python
// wrote with its default chunks: the verdict names the decoding and gives
// the rechunk commands, which this test then runs; on the copy, read
// amplification is 1 and the advice no longer says to rechunk.
func TestRunZarrDefaultChunks(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	requireZarr(t)
	bins := testkit.BinDir(t)
	data := filepath.Join(t.TempDir(), "run.zarr")
	if out, err := exec.Command(debPython, example("make_zarr.py"), data).CombinedOutput(); err != nil {
		t.Fatalf("make_zarr.py: %v\n%s", err, out)
	}
	docs, stderr, status := e.run(t, nil, debPython, example("zarr_loop.py"), data, "--seconds", "5")
	if status != 0 || len(docs) != 1 {
		t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
	}
	v := docs[0].Verdict
	// On a loaded machine the workers' decoding may take the network's
	// cores before the loop waits on them (one CI run: the workers took
	// 0.7 of the 0.7 cores the run got): loader-takes-cores names the same
	// chunking, with the same commands.
	heads := []string{"workers spend", "under zarr `Array.__getitem__`", "called from `Frames.__getitem__` at"}
	switch v.Kind {
	case verdict.InputBound, verdict.ModerateInput:
	case verdict.LoaderTakesCores:
		heads = []string{"the DataLoader workers take", "decoding 1333x the bytes they return"}
	default:
		t.Fatalf("verdict %s, want input-bound (or moderately, or loader-takes-cores, on a loaded machine)", v)
	}
	inspect := "`pipetrain data inspect " + data + "`"
	rechunked := strings.TrimSuffix(data, ".zarr") + "-rechunked.zarr"
	rechunk := "`pipetrain data rechunk " + data + " " + rechunked + " --chunk-frames 1`"
	for _, want := range heads {
		if !strings.Contains(v.Headline, want) {
			t.Errorf("headline %q lacks %q", v.Headline, want)
		}
	}
	for _, want := range []string{"decodes", "1 frame per read", inspect, rechunk} {
		if !strings.Contains(v.Next, want) {
			t.Errorf("next step %q lacks %q", v.Next, want)
		}
	}
	checkAmp(t, docs[0].Loader, computedAmp(t, filepath.Join(data, "data", "camera0")))
	checkSampledShares(t, &docs[0])
	t.Logf("%s", v)

	// The advice, followed as written.
	for _, cmd := range []string{inspect, rechunk} {
		args := strings.Fields(strings.Trim(cmd, "`"))
		if out, err := exec.Command(filepath.Join(bins, "pipetrain"), args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	docs, stderr, status = e.run(t, nil, debPython, example("zarr_loop.py"), rechunked, "--seconds", "4")
	if status != 0 || len(docs) != 1 {
		t.Fatalf("rechunked: status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
	}
	checkAmp(t, docs[0].Loader, 1)
	if v := docs[0].Verdict; strings.Contains(v.String(), "rechunk") {
		t.Errorf("1-frame chunks still get rechunk advice: %s", v)
	}
	t.Logf("rechunked: %s", docs[0].Verdict)
}

// checkSampledShares compares the training thread's sampled time per
// stage with the timed shares: the stack samples' bias, measured.
func checkSampledShares(t *testing.T, s *summary.Script) {
	t.Helper()
	if s.Stacks == nil {
		t.Fatal("no stack samples in the run summary")
	}
	sampled := map[string]float64{}
	var total float64
	for _, r := range s.Stacks.Rows {
		if r.Role == stage.RoleTrain {
			sampled[r.Stage] += float64(r.Ns)
			total += float64(r.Ns)
		}
	}
	for _, st := range s.Stages {
		got := sampled[st.Name] / total
		if math.Abs(got-st.Share) > 0.1 {
			t.Errorf("stage %s: %.1f %% of the sampled time, %.1f %% timed (want within 10 points)", st.Name, 100*got, 100*st.Share)
		}
	}
}

// TestRunNamesHotCode runs loops whose time goes to a pure-Python function
// of their own, in the Dataset and in the loop's untimed rest: the
// verdict names each.
func TestRunNamesHotCode(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	for _, tc := range []struct {
		script   string
		kind     verdict.Kind
		headline []string
		next     string
	}{
		{"slow_getitem.py", verdict.InputBound, []string{"workers spend", "in `augment` at "}, "workers"},
		{"slow_logging.py", verdict.Untimed, []string{"of it", "`log_metrics` at "}, "make `log_metrics` at "},
	} {
		t.Run(strings.TrimSuffix(tc.script, ".py"), func(t *testing.T) {
			docs, stderr, status := e.run(t, nil, debPython, example(tc.script), "--seconds", "4")
			if status != 0 || len(docs) != 1 {
				t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
			}
			v := docs[0].Verdict
			if v.Kind != tc.kind {
				t.Fatalf("verdict %s, want %s", v, tc.kind)
			}
			for _, want := range tc.headline {
				if !strings.Contains(v.Headline, want) {
					t.Errorf("headline %q lacks %q", v.Headline, want)
				}
			}
			if !strings.Contains(v.Next, tc.next) {
				t.Errorf("next step %q lacks %q", v.Next, tc.next)
			}
			t.Logf("%s", v)
		})
	}
}

// TestFlameOfARun takes a run recorded with its stack samples
// (recordSlowGetitem: go test ./cmd/pipetop -run TestFlameOfARun -update;
// the live path of stack samples is TestRunNamesHotCode's), writes its
// samples with pipetop flame as speedscope JSON (checked against the
// format's schema) and as folded stacks, and checks that both add up to
// the recording's.
func TestFlameOfARun(t *testing.T) {
	t.Parallel()
	rec := recorded(t, "slow-getitem.pipetop", recordSlowGetitem)
	_, es, err := recording.ReadAll(rec)
	if err != nil {
		t.Fatal(err)
	}
	var n, ns int64
	for _, en := range es {
		if en.Frame != nil && en.Frame.Type == ipc.TypeStacks {
			a, b := en.Frame.Stacks.Samples()
			n, ns = n+a, ns+b
		}
	}
	if n < 100 {
		t.Fatalf("the recording holds %d stack samples, want a few hundred", n)
	}
	out := filepath.Join(t.TempDir(), "run.speedscope.json")
	bin := pipetopBin(t)
	if b, err := exec.Command(bin, "flame", rec, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("pipetop flame: %v\n%s", err, b)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := flametest.Check(doc)
	if err != nil {
		t.Fatalf("pipetop flame wrote an invalid speedscope file: %v", err)
	}
	var weights float64
	for _, p := range f.Profiles {
		weights += p.EndValue - p.StartValue
	}
	if int64(weights) != ns {
		t.Errorf("speedscope weights add up to %.0f ns, the recording's samples to %d ns", weights, ns)
	}
	folded, err := exec.Command(bin, "flame", rec, "--folded").Output()
	if err != nil {
		t.Fatalf("pipetop flame --folded: %v", err)
	}
	var count int64
	sc := bufio.NewScanner(bytes.NewReader(folded))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		c, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		if err != nil {
			t.Fatalf("not a folded line: %q", line)
		}
		count += c
	}
	if count != n {
		t.Errorf("folded counts add up to %d, the recording's samples to %d", count, n)
	}
	t.Logf("%d samples (%d profiles) in the recording, the speedscope file and the folded stacks", n, len(f.Profiles))

	// Replay and summary read the samples back through the feed.
	js, err := exec.Command(bin, "replay", rec, "--json", "--at", "1h", "--window", "all").Output()
	if err != nil {
		t.Fatalf("pipetop replay --json: %v", err)
	}
	var snap struct {
		Code    *stage.CodeProfile `json:"code"`
		Verdict *verdict.Verdict   `json:"verdict"`
	}
	if err := json.Unmarshal(js, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Code == nil || snap.Code.Group(stage.RoleWorker, "") == nil || snap.Code.Samples == 0 {
		t.Errorf("the replayed snapshot has no workers' profile: %+v", snap.Code)
	}
	if snap.Verdict == nil || !strings.Contains(snap.Verdict.Headline, "`augment` at") {
		t.Errorf("the replayed verdict does not name augment: %+v", snap.Verdict)
	}
	text, err := exec.Command(bin, "summary", rec).Output()
	if err != nil {
		t.Fatalf("pipetop summary: %v", err)
	}
	if !strings.Contains(string(text), "stack samples: ") || !strings.Contains(string(text), "`augment` at") {
		t.Errorf("pipetop summary does not name the hot code:\n%s", text)
	}
}

// recordSlowGetitem records 3 s of examples/auto/slow_getitem.py under
// pipetop run (PIPETOP_RECORD) to path: TestFlameOfARun's fixture.
func recordSlowGetitem(t *testing.T, path string) {
	t.Helper()
	e := newRunEnv(t)
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, status := e.run(t, []string{"PIPETOP_RECORD=" + abs}, debPython, example("slow_getitem.py"), "--seconds", "3")
	if status != 0 {
		t.Fatalf("status %d; stderr:\n%s", status, stderr)
	}
}

// TestRunStacksFromOutside runs a loop that imports PyAV and spins in a
// pure-Python function under pipetop run, which reads its stacks from
// outside (live: the point is reading a running process): the run's stack
// samples name the function, and nothing says the samples are off. With
// the read refused (the test fake, stacks.RefuseEnv) the trainer samples
// its own stacks and says so once; on CPython 3.11 with av imported those
// are then off, as before.
func TestRunStacksFromOutside(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	for _, tc := range []struct {
		name   string
		env    []string
		inside bool
	}{
		{"outside", nil, false},
		{"refused", []string{stacks.RefuseEnv + "=a test refusal"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, stderr, status := e.run(t, tc.env, debPython, filepath.Join("testdata", "hot_av.py"), "2")
			if status != 0 || len(docs) != 1 {
				t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
			}
			said := strings.Count(stderr, "stack samples from inside the process: ")
			if off := strings.Contains(stderr, "stack samples off"); tc.inside != off || (said == 1) != tc.inside || said > 1 {
				t.Fatalf("refused %v: said inside %d times, off %v; stderr:\n%s", tc.inside, said, off, stderr)
			}
			if tc.inside {
				return
			}
			s := docs[0].Stacks
			if s == nil {
				t.Fatalf("no stack samples in the summary; stderr:\n%s", stderr)
			}
			var all, busy int64
			for _, r := range s.Rows {
				if r.Role != stage.RoleTrain {
					continue
				}
				all += r.N
				if s.Frames[r.Stack[len(r.Stack)-1]].Name == "busy_python" {
					busy += r.N
				}
			}
			if all < 50 || float64(busy) < 0.5*float64(all) {
				t.Errorf("%d of the training thread's %d samples in busy_python; want half or more", busy, all)
			}
		})
	}
}

// TestRunWorkersFromOutside runs the PyAV and h5py loaders with 2 workers
// under pipetop run (live: the workers' stacks are read from outside while
// they decode, where the in-process stack sampler crashed them on CPython
// 3.11): the workers' stack samples are there, and nothing says they are
// off.
func TestRunWorkersFromOutside(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	requireVideo(t)
	cam := filepath.Join(t.TempDir(), "cam.mp4")
	encodeVideo(t, cam, 30)
	for _, tc := range []struct {
		name string
		args func() []string
	}{
		{"video", func() []string { return []string{example("video_loop.py"), cam, "--epochs", "1", "--workers", "2"} }},
		{"hdf5", func() []string {
			data := makeHDF5(t, "robomimic.hdf5", "--compression", "gzip") // trajectory chunks: the workers are busy
			return []string{example("hdf5_loop.py"), data, "--seconds", "3", "--workers", "2"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, stderr, status := e.run(t, nil, append([]string{debPython}, tc.args()...)...)
			if status != 0 || len(docs) != 1 {
				t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
			}
			if strings.Contains(stderr, "stack samples") {
				t.Errorf("stderr speaks of the stack samples:\n%s", stderr)
			}
			workers := map[int]int64{}
			if s := docs[0].Stacks; s != nil {
				for _, r := range s.Rows {
					if r.Role == stage.RoleWorker && r.Worker != nil {
						workers[*r.Worker] += r.N
					}
				}
			}
			if len(workers) != 2 || workers[0] < 10 || workers[1] < 10 {
				t.Errorf("workers' samples %v: want both workers sampled", workers)
			}
		})
	}
}

// TestRunStacksRefusedByKernel has the kernel refuse the read from
// outside: pipetop run as root without CAP_SYS_PTRACE, the trainer as
// user nobody (live: the refusal is the kernel's). The trainer is told,
// says once that it samples its own stacks, and its samples name the hot
// function.
func TestRunStacksRefusedByKernel(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	if _, err := exec.LookPath("setpriv"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and setpriv to run the trainer as another user")
	}
	dir, err := os.MkdirTemp("/tmp", "ptrefused")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	script := filepath.Join(dir, "hot_av.py")
	cp, err := os.ReadFile(filepath.Join("testdata", "hot_av.py"))
	if err == nil {
		err = os.WriteFile(script, cp, 0o644)
	}
	for _, sub := range []string{"sockets", "summaries"} {
		if err == nil {
			err = os.Mkdir(filepath.Join(dir, sub), 0o700)
		}
		if err == nil {
			err = os.Chown(filepath.Join(dir, sub), 65534, 65534)
		}
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	env := append(os.Environ(), "PIPETOP_SOCKET_DIR="+filepath.Join(dir, "sockets"), "PIPETOP_CACHE_DIR="+cache,
		"PIPETOP_SUMMARY_DIR="+filepath.Join(dir, "summaries"))
	// The publisher unpacked first, where user nobody can read it.
	unpack := exec.Command(e.bin, "run", "--no-tui", "--", "true")
	unpack.Env = env
	if out, err := unpack.CombinedOutput(); err != nil {
		t.Fatalf("pipetop run true: %v\n%s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "a+rX", cache).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	cmd := exec.Command("setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", e.bin, "run", "--no-tui", "--json", "--",
		"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", debPython, script, "2", "--no-av")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipetop run: %v\n%s", err, stderr.String())
	}
	if n := strings.Count(stderr.String(), "stack samples from inside the process: "); n != 1 || !strings.Contains(stderr.String(), "CAP_SYS_PTRACE") {
		t.Fatalf("said inside %d times; want once, naming CAP_SYS_PTRACE:\n%s", n, stderr.String())
	}
	var docs []summary.Script
	if err := json.Unmarshal(stdout.Bytes(), &docs); err != nil || len(docs) != 1 || docs[0].Stacks == nil {
		t.Fatalf("summaries %s: %v; stderr:\n%s", stdout.String(), err, stderr.String())
	}
	for _, r := range docs[0].Stacks.Rows {
		if r.Role == stage.RoleTrain && docs[0].Stacks.Frames[r.Stack[len(r.Stack)-1]].Name == "busy_python" {
			return
		}
	}
	t.Errorf("no sample of the training thread in busy_python: %+v", docs[0].Stacks.Rows)
}
