package hdf5

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// h5py runs a Python snippet with h5py and numpy imported (as h5py and
// np), the output directory as the variable d.
func h5py(t *testing.T, dir, script string) {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 with h5py (scripts/install-deps.sh installs python3-h5py)")
	}
	full := "import h5py, numpy as np, sys\nd = sys.argv[1]\n" + script
	if out, err := exec.Command(py, "-c", full, dir).CombinedOutput(); err != nil {
		t.Fatalf("h5py: %v\n%s", err, out)
	}
}

// writer is the h5py script writing the test file: uint8 frames and
// float64/int32/big-endian arrays, chunked per trajectory and per frame,
// with gzip, lzf, shuffle and an unknown filter; values are a formula the
// Go side recomputes.
const writer = `
img = (np.arange(6*5*4*3) % 251).astype('u1').reshape(6, 5, 4, 3)
vec = np.arange(6*7, dtype='f8').reshape(6, 7) / 3
with h5py.File(d + '/t.h5', 'w') as f:
    f.create_dataset('traj/gzip', data=img, chunks=(6, 5, 4, 3), compression='gzip', compression_opts=4)
    f.create_dataset('frame/lzf', data=img, chunks=(1, 5, 4, 3), compression='lzf', shuffle=True)
    f.create_dataset('plain', data=img)
    f.create_dataset('vec', data=vec, chunks=(2, 7))
    f.create_dataset('be', data=np.arange(6, dtype='>i4'))
    f.create_dataset('text', data=np.array([b'a', b'b']))
    u = f.create_dataset('unknown', shape=(4, 8), dtype='u1', chunks=(2, 8), compression=32001, allow_unknown_filter=True)
    u.id.write_direct_chunk((0, 0), b'0123456789abcdef')
`

func img() []byte {
	out := make([]byte, 6*5*4*3)
	for i := range out {
		out[i] = byte(i % 251)
	}
	return out
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	h5py(t, dir, writer)
	f, err := Open(filepath.Join(dir, "t.h5"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := f.Datasets()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "be frame/lzf plain text traj/gzip unknown vec" {
		t.Errorf("datasets %q", got)
	}
	cases := []struct {
		path, dtype, chunks, filters string
	}{
		{"traj/gzip", "|u1", "[6 5 4 3]", "gzip(4)"},
		{"frame/lzf", "|u1", "[1 5 4 3]", "shuffle lzf"},
		{"plain", "|u1", "[]", ""},
		{"vec", "<f8", "[2 7]", ""},
		{"be", ">i4", "[]", ""},
		{"unknown", "|u1", "[2 8]", "filter 32001 (unnamed, not available)"},
	}
	for _, c := range cases {
		d, err := f.Dataset(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var fl []string
		for _, x := range d.Filters {
			fl = append(fl, x.String())
		}
		if d.DType.String() != c.dtype || sprint(d.Chunks) != c.chunks || strings.Join(fl, " ") != c.filters {
			t.Errorf("%s: %s chunks %v filters %q, want %s %s %q", c.path, d.DType, d.Chunks, fl, c.dtype, c.chunks, c.filters)
		}
		d.Close()
	}
	for _, p := range []string{"traj/gzip", "frame/lzf", "plain"} {
		d, _ := f.Dataset(p)
		buf := make([]byte, 3*d.RowBytes())
		if err := d.ReadRows(2, 3, buf); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if want := img()[2*60 : 5*60]; !bytes.Equal(buf, want) {
			t.Errorf("%s rows 2..5 differ from h5py's", p)
		}
		d.Close()
	}
	d, _ := f.Dataset("vec")
	buf := make([]byte, 6*d.RowBytes())
	if err := d.ReadRows(0, 6, buf); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 42; i++ {
		if v := math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:])); v != float64(i)/3 {
			t.Fatalf("vec[%d] = %v, want %v", i, v, float64(i)/3)
		}
	}
	d, _ = f.Dataset("be")
	buf = make([]byte, 24)
	if err := d.ReadRows(0, 6, buf); err != nil || binary.LittleEndian.Uint32(buf[20:]) != 5 {
		t.Errorf("big-endian read: %v %v", err, buf)
	}
	d, _ = f.Dataset("unknown")
	err = d.ReadRows(0, 2, make([]byte, 16))
	if err == nil || !strings.Contains(err.Error(), "filter 32001") || !strings.Contains(err.Error(), "unknown") || !strings.Contains(err.Error(), "t.h5") {
		t.Errorf("reading a dataset with an unknown filter: %v", err)
	}
	d, _ = f.Dataset("text")
	if err := d.ReadRows(0, 1, make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "class string") {
		t.Errorf("reading strings: %v", err)
	}
}

func sprint(v []int) string { return strings.Trim(fmt.Sprint(v), " ") }

// TestBadFiles checks truncated and corrupt files are errors naming the
// file, the dataset and the cause.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	h5py(t, dir, `
img = np.random.default_rng(1).integers(0, 255, (20, 16, 16, 3), dtype='u1')
with h5py.File(d + '/ok.h5', 'w') as f:
    f.create_dataset('cam', data=img, chunks=(10, 16, 16, 3), compression='gzip')
`)
	data, err := os.ReadFile(filepath.Join(dir, "ok.h5"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := Open(write("text.h5", []byte("not hdf5"))); err == nil || !strings.Contains(err.Error(), "text.h5: not an HDF5 file") {
		t.Errorf("a text file: %v", err)
	}
	// Cut in the middle of the chunks: the header opens, the data is gone.
	cut := write("cut.h5", data[:len(data)*2/3])
	if err := readAll(cut, "cam"); err == nil || !strings.Contains(err.Error(), "cut.h5: open: truncated file") {
		t.Errorf("a truncated file: %v", err)
	}
	// Garbage over the compressed chunks.
	bad := append([]byte(nil), data...)
	for i := len(bad) - 3000; i < len(bad)-100; i++ {
		bad[i] ^= 0x5a
	}
	if err := readAll(write("corrupt.h5", bad), "cam"); err == nil || !strings.Contains(err.Error(), "corrupt.h5") || !strings.Contains(err.Error(), "dataset cam") {
		t.Errorf("a corrupt file: %v", err)
	}
}

// readAll opens path and reads every row of the dataset.
func readAll(path, name string) error {
	f, err := Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := f.Dataset(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.ReadRows(0, d.Shape[0], make([]byte, int64(d.Shape[0])*d.RowBytes()))
}
