package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/loader"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// python runs a snippet with h5py and numpy (as np), the directory as d.
func python(t *testing.T, dir, script string) {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 with h5py (scripts/install-deps.sh installs python3-h5py)")
	}
	full := "import h5py, numpy as np, sys\nd = sys.argv[1]\n" + script
	if out, err := exec.Command(py, "-c", full, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
}

// robomimicScript writes d/robo.h5 in robomimic's layout (three demos;
// agentview chunked per trajectory with gzip, eye per frame with lzf and
// shuffle; float32 and float64 low-dim; float64 actions) and the values
// the import must produce as raw little-endian .bin files.
const robomimicScript = `
rng = np.random.default_rng(0)
cams = {'agentview_image': [], 'eye_image': []}
state, action = [], []
with h5py.File(d + '/robo.h5', 'w') as f:
    for i, T in enumerate([12, 9, 15]):
        g = f.create_group(f'data/demo_{i}')
        a = rng.standard_normal((T, 7))
        g.create_dataset('actions', data=a)
        o = g.create_group('obs')
        av = rng.integers(0, 255, (T, 16, 16, 3), dtype='u1')
        ey = rng.integers(0, 255, (T, 16, 16, 3), dtype='u1')
        o.create_dataset('agentview_image', data=av, chunks=(T, 16, 16, 3), compression='gzip', compression_opts=4)
        o.create_dataset('eye_image', data=ey, chunks=(1, 16, 16, 3), compression='lzf', shuffle=True)
        pos = rng.standard_normal((T, 3)).astype('f4')
        grip = rng.standard_normal((T,))
        o.create_dataset('eef_pos', data=pos)
        o.create_dataset('gripper', data=grip)
        cams['agentview_image'].append(av); cams['eye_image'].append(ey)
        state.append(np.concatenate([pos, grip[:, None].astype('f4')], axis=1)); action.append(a.astype('f4'))
    f.create_dataset('mask/train', data=np.array([b'demo_0', b'demo_1']))
np.concatenate(cams['agentview_image']).tofile(d + '/camera0.bin')
np.concatenate(cams['eye_image']).tofile(d + '/camera1.bin')
np.concatenate(state).astype('<f4').tofile(d + '/state.bin')
np.concatenate(action).astype('<f4').tofile(d + '/action.bin')
`

// readArray reads a whole array of the store at dir.
func readArray(t *testing.T, dir, name string) []byte {
	t.Helper()
	s, err := zarr.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.OpenArray(name)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(a.DType().Size)
	for _, x := range a.Shape() {
		n *= int64(x)
	}
	buf := make([]byte, n)
	if err := a.ReadRegion(make([]int, len(a.Shape())), a.Shape(), buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

func TestImportRobomimic(t *testing.T) {
	dir := t.TempDir()
	python(t, dir, robomimicScript)
	dst := filepath.Join(dir, "store")
	var progress bytes.Buffer
	s, err := Import(filepath.Join(dir, "robo.h5"), dst, Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if s.Frames != 36 || s.Episodes != 3 || strings.Join(s.Cameras, ",") != "camera0,camera1" || s.StateDim != 4 || s.ActionDim != 7 || !s.HasLoadable {
		t.Errorf("summary %+v", s)
	}
	for _, name := range []string{"camera0", "camera1", "state", "action"} {
		want, err := os.ReadFile(filepath.Join(dir, name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if got := readArray(t, dst, "data/"+name); !bytes.Equal(got, want) {
			t.Errorf("data/%s differs from the HDF5 values (%d vs %d bytes)", name, len(got), len(want))
		}
	}
	b, err := episodes.Open(dst, episodes.Keys{Cameras: s.Cameras, LowDim: []string{"state"}, Action: "action"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(b.EpisodeEnds) != "[12 21 36]" || b.Cameras[0].ShardShape() == nil || b.Cameras[0].Chunks()[0] != 1 {
		t.Errorf("episode ends %v, camera chunks %v shards %v", b.EpisodeEnds, b.Cameras[0].Chunks(), b.Cameras[0].ShardShape())
	}
	if !strings.Contains(s.Command(), "pipetrain train --data "+dst+" --cameras camera0,camera1") {
		t.Errorf("command %q", s.Command())
	}
	// The loader reads it.
	l, err := loader.New(loader.Config{Dir: dst, Keys: episodes.Keys{Cameras: s.Cameras, LowDim: []string{"state"}, Action: "action"}, Batch: 4, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batch, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if batch.Cams != 2 || batch.H != 16 || batch.StateDim != 4 || batch.ActionDim != 7 {
		t.Errorf("batch %d cams %dx%d state %d action %d", batch.Cams, batch.H, batch.W, batch.StateDim, batch.ActionDim)
	}
	l.Release(batch)
	zarrita(t, dir, dst, []string{"data/camera0", "data/camera1", "data/state", "data/action", "meta/episode_ends"})
}

// TestImportFlat imports a flat file: cameras, an action, a state vector
// and the episode ends, with --keys leaving a dataset out.
func TestImportFlat(t *testing.T) {
	dir := t.TempDir()
	python(t, dir, `
rng = np.random.default_rng(1)
with h5py.File(d + '/flat.h5', 'w') as f:
    f.create_dataset('data/camera0', data=rng.integers(0, 255, (20, 8, 8, 3), dtype='u1'), chunks=(20, 8, 8, 3), compression='gzip')
    f.create_dataset('data/camera1', data=rng.integers(0, 255, (20, 8, 8, 3), dtype='u1'))
    f.create_dataset('data/state', data=rng.standard_normal((20, 5)).astype('f4'))
    f.create_dataset('data/action', data=rng.standard_normal((20, 2)).astype('>f4'))
    f.create_dataset('data/depth', data=rng.standard_normal((20, 8, 8)).astype('f4'))
    f.create_dataset('meta/episode_ends', data=np.array([7, 20]))
    f['data/camera1'][:].tofile(d + '/camera1.bin')
    f['data/action'][:].astype('<f4').tofile(d + '/action.bin')
`)
	dst := filepath.Join(dir, "flat.zarr")
	s, err := Import(filepath.Join(dir, "flat.h5"), dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Frames != 20 || s.Episodes != 2 || len(s.Cameras) != 2 || s.StateDim != 5 || s.ActionDim != 2 || !strings.Contains(strings.Join(s.Notes, "\n"), "skipped data/depth") {
		t.Errorf("summary %+v", s)
	}
	for _, name := range []string{"camera1", "action"} {
		want, _ := os.ReadFile(filepath.Join(dir, name+".bin"))
		if got := readArray(t, dst, "data/"+name); !bytes.Equal(got, want) {
			t.Errorf("data/%s differs from the HDF5 values", name)
		}
	}
	s, err = Import(filepath.Join(dir, "flat.h5"), filepath.Join(dir, "one.zarr"), Options{Keys: []string{"data/camera1", "data/action", "data/state"}})
	if err != nil || strings.Join(s.Sources, " ") != filepath.Join(dir, "flat.h5")+":data/camera1" {
		t.Errorf("--keys: %v, sources %v", err, s)
	}
	if _, err := Import(filepath.Join(dir, "flat.h5"), filepath.Join(dir, "d.zarr"), Options{Keys: []string{"data/depth"}}); err == nil || !strings.Contains(err.Error(), "data/depth is |f4") && !strings.Contains(err.Error(), "data/depth is <f4") {
		t.Errorf("--keys naming a dataset that does not map: %v", err)
	}
}

// frameCost is mp4.Track.DecodesPerFrame computed from the layout: frames
// from the previous keyframe, keyframes every gop.
func frameCost(frames, gop int) float64 {
	var sum float64
	for i := 0; i < frames; i++ {
		sum += float64(i%gop + 1)
	}
	return sum / float64(frames)
}

// encode writes a test video of n frames, keyframes every gop, into dir.
func encode(t *testing.T, dir, name string, n, gop int, extra ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed (scripts/install-deps.sh installs it)")
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=32x24:rate=25", "-frames:v", fmt.Sprint(n)}, extra...)
	args = append(args, "-c:v", "libx264", "-g", fmt.Sprint(gop), "-keyint_min", fmt.Sprint(gop), "-sc_threshold", "0", "-pix_fmt", "yuv420p", out)
	if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
	}
	return out
}

// decoded is ffmpeg's own decoding of a file to RGB.
func decoded(t *testing.T, file string) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", file, "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportMP4(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "cams")
	os.Mkdir(src, 0o755)
	gops := map[string]int{"a_g1.mp4": 1, "b_g10.mp4": 10, "c_g250.mp4": 250}
	for name, g := range gops {
		encode(t, src, name, 260, g)
	}
	os.WriteFile(filepath.Join(src, "episode_ends.txt"), []byte("100\n260\n"), 0o644)
	r, err := InspectMP4(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Videos {
		g := gops[filepath.Base(v.File)]
		if want := frameCost(260, g); v.GOP != g || math.Abs(v.DecodesPerFrame-want) > 1e-9 || v.Frames != 260 || v.Variable || v.Codec != "avc1" {
			t.Errorf("%s: GOP %d decodes %.3f frames %d, want %d %.3f 260", v.File, v.GOP, v.DecodesPerFrame, v.Frames, g, want)
		}
	}
	if !strings.Contains(r.Recommendation, "pipetrain data import "+src+" DST") || math.Abs(r.ReadAmp-frameCost(260, 250)) > 1e-9 {
		t.Errorf("amp %.2f, recommendation %q", r.ReadAmp, r.Recommendation)
	}
	dst := filepath.Join(dir, "store")
	s, err := Import(src, dst, Options{ShardFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	if s.Frames != 260 || s.Episodes != 2 || len(s.Cameras) != 3 || s.HasLoadable {
		t.Errorf("summary %+v", s)
	}
	if want := dst + " has no data/state and no data/action, which the loader needs"; !strings.Contains(s.Command(), want) {
		t.Errorf("command %q, want %q", s.Command(), want)
	}
	for i, name := range []string{"a_g1.mp4", "b_g10.mp4", "c_g250.mp4"} {
		if got, want := readArray(t, dst, fmt.Sprintf("data/camera%d", i)), decoded(t, filepath.Join(src, name)); !bytes.Equal(got, want) {
			t.Errorf("camera%d differs from ffmpeg's decoding of %s (%d vs %d bytes)", i, name, len(got), len(want))
		}
	}
	zarrita(t, dir, dst, []string{"data/camera0", "data/camera2", "meta/episode_ends"})
}

// zarrita checks that zarrita (Node.js) reads the named arrays of the
// store at dir/store as our reader does, with trainer/zarr's script.
func zarrita(t *testing.T, dir, store string, names []string) {
	t.Helper()
	scripts, _ := filepath.Abs(filepath.Join("..", "zarr", "testdata", "zarrita"))
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Log("SKIPPED: zarrita needs Node.js: the imported store's v3 interop is NOT tested")
		return
	}
	if _, err := os.Stat(filepath.Join(scripts, "node_modules", "zarrita")); err != nil {
		t.Fatalf("zarrita is not installed in %s: run scripts/install-deps.sh", scripts)
	}
	if store != filepath.Join(dir, "store") {
		t.Fatalf("the store must be at DIR/store for read.mjs")
	}
	s, err := zarr.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name    string `json:"name"`
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Sharded bool   `json:"sharded"`
	}
	var manifest []entry
	for _, n := range names {
		a, err := s.OpenArray(n)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, n+".bin"), readArray(t, store, n), 0o644); err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, entry{Name: n, DType: a.DType().String(), Shape: a.Shape(), Sharded: a.ShardShape() != nil})
	}
	mb, _ := json.Marshal(manifest)
	os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644)
	out, err := exec.Command(bin, filepath.Join(scripts, "read.mjs"), dir).CombinedOutput()
	if err != nil || string(out) != fmt.Sprintf("ok %d\n", len(names)) {
		t.Errorf("zarrita read.mjs: %v\n%s", err, out)
	}
}

// TestImportEpisodeFiles imports LeRobot's per-episode layout: camera
// directories of episode_N.mp4 files (videos/chunk-000), and one camera's
// directory; episodes follow N, not the file names' order.
func TestImportEpisodeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	chunk := filepath.Join(dir, "chunk-000")
	lengths := map[string]int{"episode_10.mp4": 5, "episode_3.mp4": 8}
	for _, cam := range []string{"front", "wrist"} {
		os.MkdirAll(filepath.Join(chunk, cam), 0o755)
		for name, n := range lengths {
			encode(t, filepath.Join(chunk, cam), name, n, 4)
		}
	}
	var want []byte
	for _, name := range []string{"episode_3.mp4", "episode_10.mp4"} {
		want = append(want, decoded(t, filepath.Join(chunk, "wrist", name))...)
	}
	s, err := Import(chunk, filepath.Join(dir, "all.zarr"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Frames != 13 || s.Episodes != 2 || len(s.Cameras) != 2 {
		t.Errorf("summary %+v", s)
	}
	if got := readArray(t, filepath.Join(dir, "all.zarr"), "data/camera1"); !bytes.Equal(got, want) {
		t.Errorf("wrist differs from ffmpeg's decoding of its episodes in order")
	}
	st, err := zarr.Open(filepath.Join(dir, "all.zarr"))
	if err != nil {
		t.Fatal(err)
	}
	ends, err := st.OpenArray("meta/episode_ends")
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 16)
	if err := ends.ReadRegion([]int{0}, []int{2}, raw); err != nil || fmt.Sprint(raw[0], raw[8]) != "8 13" {
		t.Errorf("episode ends %v (%v), want 8 13", raw, err)
	}
	s, err = Import(filepath.Join(chunk, "wrist"), filepath.Join(dir, "wrist.zarr"), Options{})
	if err != nil || s.Frames != 13 || s.Episodes != 2 || len(s.Cameras) != 1 {
		t.Errorf("one camera's episodes: %v %+v", err, s)
	}
	encode(t, filepath.Join(chunk, "wrist"), "episode_3.mp4", 9, 4)
	failImport(t, chunk, Options{}, "cameras of different frame counts", filepath.Join(chunk, "front", "episode_3.mp4")+" has 8 frames", filepath.Join(chunk, "wrist", "episode_3.mp4")+" has 9")
}
