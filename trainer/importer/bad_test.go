package importer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInspectHDF5 checks the predicted one-frame read cost against the
// chunk layout h5py wrote, the filters' names, and that the h5repack
// command of the advice makes every image dataset cost one frame.
func TestInspectHDF5(t *testing.T) {
	dir := t.TempDir()
	python(t, dir, `
img = np.random.default_rng(2).integers(0, 255, (12, 16, 16, 3), dtype='u1')
with h5py.File(d + '/a.h5', 'w') as f:
    f.create_dataset('traj', data=img, chunks=(12, 16, 16, 3), compression='gzip', compression_opts=4)
    f.create_dataset('tiles', data=img, chunks=(2, 5, 16, 3))
    f.create_dataset('plain', data=img)
    f.create_dataset('vec', data=np.zeros((12, 4)), chunks=(6, 4))
    f.create_dataset('small', data=img[:, :8, :8], chunks=(4, 8, 8, 3))
with h5py.File(d + '/b.h5', 'w') as f:
    f.create_dataset('frame', data=img, chunks=(1, 16, 16, 3), compression='lzf', shuffle=True)
with h5py.File(d + '/u.h5', 'w') as f:
    u = f.create_dataset('cam', shape=(4, 8, 8, 3), dtype='u1', chunks=(2, 8, 8, 3), compression=32001, allow_unknown_filter=True)
    u.id.write_direct_chunk((0, 0, 0, 0), bytes(range(192)))
`)
	r, err := InspectHDF5(filepath.Join(dir, "a.h5"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		amp     float64
		filters string
		image   bool
	}{
		"traj": {12, "gzip(4)", true}, "frame": {1, "shuffle lzf", true}, "tiles": {2 * 20.0 / 16, "", true},
		"plain": {1, "", true}, "vec": {6, "", false}, "small": {4, "", true},
	}
	b, err := InspectHDF5(filepath.Join(dir, "b.h5"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(r.Datasets, b.Datasets...) {
		w := want[d.Path]
		if math.Abs(d.ReadAmp-w.amp) > 1e-9 || strings.Join(d.Filters, " ") != w.filters || d.Image != w.image {
			t.Errorf("%s: amp %.3f filters %q image %v, want %.3f %q %v", d.Path, d.ReadAmp, d.Filters, d.Image, w.amp, w.filters, w.image)
		}
	}
	if !strings.Contains(r.Recommendation, "-l tiles,traj:CHUNK=1x16x16x3 -l small:CHUNK=1x8x8x3") && !strings.Contains(r.Recommendation, "-l small:CHUNK=1x8x8x3 -l tiles,traj:CHUNK=1x16x16x3") {
		t.Errorf("h5repack with a -l per frame shape: %q", r.Recommendation)
	}
	if r.ReadAmp != 12 {
		t.Errorf("worst image amp %.2f, want 12", r.ReadAmp)
	}
	m := regexp.MustCompile(`h5repack ((?:-l \S+ )+)(\S+) OUT\.h5`).FindStringSubmatch(r.Recommendation)
	if m == nil {
		t.Fatalf("no h5repack command in %q", r.Recommendation)
	}
	if _, err := exec.LookPath("h5repack"); err == nil {
		out := filepath.Join(dir, "fixed.h5")
		args := append(strings.Fields(m[1]), m[2], out)
		if b, err := exec.Command("h5repack", args...).CombinedOutput(); err != nil {
			t.Fatalf("h5repack %v: %v\n%s", args, err, b)
		}
		r2, err := InspectHDF5(out)
		if err != nil {
			t.Fatal(err)
		}
		if r2.ReadAmp != 1 || !strings.Contains(r2.Recommendation, "hold one frame") {
			t.Errorf("after the advice's h5repack: amp %.2f, %q", r2.ReadAmp, r2.Recommendation)
		}
	}
	u, err := InspectHDF5(filepath.Join(dir, "u.h5"))
	if err != nil {
		t.Fatal(err)
	}
	if d := u.Datasets[0]; !d.Unreadable || d.FilterIDs[0] != 32001 || !strings.Contains(u.Recommendation, "filter 32001") {
		t.Errorf("unknown filter: %+v, %q", d, u.Recommendation)
	}
}

// failImport checks that importing src fails with an error saying every
// string in want, and leaves nothing at dst or beside it.
func failImport(t *testing.T, src string, o Options, want ...string) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "out.zarr")
	_, err := Import(src, dst, o)
	if err == nil {
		t.Errorf("import %s: no error", src)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("import %s: error %q does not say %q", src, err, w)
		}
	}
	if left, _ := filepath.Glob(dst + "*"); len(left) > 0 {
		t.Errorf("import %s failed but left %v", src, left)
	}
}

func TestImportBadMP4(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(dir, name)
		os.Mkdir(d, 0o755)
		return d
	}
	ok := encode(t, dir, "ok.mp4", 40, 10, "-movflags", "+faststart")
	data, _ := os.ReadFile(ok)

	cut := mk("cut")
	os.WriteFile(filepath.Join(cut, "cam.mp4"), data[:len(data)*2/3], 0o644)
	failImport(t, cut, Options{}, filepath.Join(cut, "cam.mp4"), "box mdat", "truncated")

	// A whole index over media data cut short, the mdat box's size fixed
	// to match: ffmpeg decodes fewer frames than stts/stsz say.
	short := mk("short")
	i := strings.Index(string(data), "mdat") - 4
	s := append([]byte(nil), data[:i+(len(data)-i)/2]...)
	binary.BigEndian.PutUint32(s[i:], uint32(len(s)-i))
	os.WriteFile(filepath.Join(short, "cam.mp4"), s, 0o644)
	failImport(t, short, Options{}, filepath.Join(short, "cam.mp4"), "stream 0", "40 frames' data up to byte", "shorter than its index (truncated media data)")
	if r, err := InspectMP4(short); err != nil || !r.Videos[0].Truncated || !strings.Contains(r.Recommendation, "truncated") {
		t.Errorf("inspect of a truncated video: %v %+v", err, r)
	}
	// An index the file satisfies, decoded to fewer frames: ffmpeg (here a
	// wrapper that stops its output after 20 frames) delivers less than
	// stts/stsz say.
	fewer := filepath.Join(dir, "ffmpeg-20-frames")
	os.WriteFile(fewer, []byte("#!/bin/sh\nffmpeg \"$@\" | head -c 46080\n"), 0o755)
	whole := mk("whole")
	os.WriteFile(filepath.Join(whole, "cam.mp4"), data, 0o644)
	failImport(t, whole, Options{FFmpeg: fewer}, filepath.Join(whole, "cam.mp4"), "stream 0", "ffmpeg delivered 20 frames, the index (stts/stsz) says 40", "shorter than its index")

	corrupt := mk("corrupt")
	c := append([]byte(nil), data...)
	j := strings.Index(string(c), "stsz")
	binary.BigEndian.PutUint32(c[j+12:], 41)
	os.WriteFile(filepath.Join(corrupt, "cam.mp4"), c, 0o644)
	failImport(t, corrupt, Options{}, filepath.Join(corrupt, "cam.mp4"), "moov/trak[0]/mdia/minf/stbl/stsz", "41 sample sizes")

	vfr := mk("vfr")
	encode(t, vfr, "cam.mp4", 30, 1, "-vf", `select='not(mod(n\,3))+lt(n\,5)'`, "-fps_mode", "vfr")
	failImport(t, vfr, Options{}, filepath.Join(vfr, "cam.mp4"), "stream 0", "variable frame rate", "--fps")
	if _, err := Import(vfr, filepath.Join(dir, "vfr.zarr"), Options{FPS: 10}); err != nil {
		t.Errorf("a variable-rate video with --fps: %v", err)
	}

	// A stream cut between keyframes with -c copy: its edit list hides the
	// first frames, which ffmpeg must still deliver to match the index.
	editlist := mk("editlist")
	if b, err := exec.Command("ffmpeg", "-v", "error", "-ss", "0.5", "-i", ok, "-c", "copy", filepath.Join(editlist, "cam.mp4")).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg cut: %v\n%s", err, b)
	}
	if s, err := Import(editlist, filepath.Join(dir, "editlist.zarr"), Options{}); err != nil || s.Frames != 30 {
		t.Errorf("a stream with an edit list: %v (%v)", err, s)
	}

	uneven := mk("uneven")
	encode(t, uneven, "a.mp4", 30, 5)
	encode(t, uneven, "b.mp4", 25, 5)
	failImport(t, uneven, Options{}, "cameras of different frame counts", filepath.Join(uneven, "a.mp4")+" has 30 frames", filepath.Join(uneven, "b.mp4")+" has 25")

	ends := mk("ends")
	encode(t, ends, "a.mp4", 30, 5)
	os.WriteFile(filepath.Join(ends, "episode_ends.txt"), []byte("10 20"), 0o644)
	failImport(t, ends, Options{}, "episode_ends.txt end at frame 20, but the videos have 30 frames")
}

func TestImportBadHDF5(t *testing.T) {
	dir := t.TempDir()
	python(t, dir, `
img = np.random.default_rng(3).integers(0, 255, (20, 16, 16, 3), dtype='u1')
with h5py.File(d + '/gz.h5', 'w') as f:
    f.create_dataset('cam', data=img, chunks=(10, 16, 16, 3), compression='gzip')
    f.create_dataset('action', data=np.zeros((20, 2), dtype='f4'))
    info = f['cam'].id.get_chunk_info(1)
    open(d + '/chunk1', 'w').write(f'{info.byte_offset} {info.size}')
with h5py.File(d + '/unknown.h5', 'w') as f:
    u = f.create_dataset('data/demo_0/obs/agentview_image', shape=(4, 8, 8, 3), dtype='u1', chunks=(2, 8, 8, 3), compression=32001, allow_unknown_filter=True)
    u.id.write_direct_chunk((0, 0, 0, 0), bytes(range(192)))
    f.create_dataset('data/demo_0/actions', data=np.zeros((4, 2)))
with h5py.File(d + '/uneven.h5', 'w') as f:
    f.create_dataset('data/demo_0/obs/img', data=img)
    f.create_dataset('data/demo_0/actions', data=np.zeros((19, 2)))
`)
	failImport(t, filepath.Join(dir, "unknown.h5"), Options{}, "unknown.h5", "dataset data/demo_0/obs/agentview_image", "filter 32001")
	failImport(t, filepath.Join(dir, "uneven.h5"), Options{}, "uneven.h5", "data/demo_0/obs/img has shape [20 16 16 3] but data/demo_0/actions has 19 steps")
	data, _ := os.ReadFile(filepath.Join(dir, "gz.h5"))
	cut := filepath.Join(dir, "cut.h5")
	os.WriteFile(cut, data[:len(data)*2/3], 0o644)
	failImport(t, cut, Options{}, "cut.h5", "truncated file")
	// Garbage over the second chunk's compressed bytes.
	var off, size int
	if where, err := os.ReadFile(filepath.Join(dir, "chunk1")); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Sscan(string(where), &off, &size); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), data...)
	for i := off + 10; i < off+size-10; i++ {
		bad[i] ^= 0x5a
	}
	corrupt := filepath.Join(dir, "corrupt.h5")
	os.WriteFile(corrupt, bad, 0o644)
	failImport(t, corrupt, Options{}, "corrupt.h5", "dataset cam rows", "inflate() failed")
	failImport(t, filepath.Join(dir, "gz.h5"), Options{Keys: []string{"nope"}}, "gz.h5", "dataset nope")
}

// TestImportNoCamera checks a robomimic file whose images are not
// (T,H,W,3) uint8 is refused, saying what was found.
func TestImportNoCamera(t *testing.T) {
	dir := t.TempDir()
	python(t, dir, `
with h5py.File(d + '/chw.h5', 'w') as f:
    f.create_dataset('data/demo_0/obs/agentview_image', data=np.zeros((5, 3, 8, 8), 'u1'))
    f.create_dataset('data/demo_0/actions', data=np.zeros((5, 2)))
`)
	failImport(t, filepath.Join(dir, "chw.h5"), Options{}, "chw.h5", "no (T,H,W,3) uint8 camera", "data/demo_0/obs/agentview_image is |u1 [5 3 8 8]")
}
