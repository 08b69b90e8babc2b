package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// python runs a testdata script with Debian's Python (which has zarr and
// numcodecs). Missing zarr-python is a failure: `make test` installs it.
func python(t *testing.T, script string, args ...string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("interop needs %s with python3-zarr: %v", py, err)
	}
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, out)
	}
	return string(out)
}

type manifestEntry struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Chunks []int  `json:"chunks,omitempty"`
}

func readArrayAll(t *testing.T, a *Array) []byte {
	t.Helper()
	n := a.DType().Size
	for _, s := range a.Shape() {
		n *= s
	}
	buf := make([]byte, n)
	if err := a.ReadRegion(make([]int, len(a.Shape())), a.Shape(), buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

func TestReadZarrPythonArrays(t *testing.T) {
	dir := t.TempDir()
	python(t, "zarr_write.py", dir)
	var manifest []manifestEntry
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Consolidated() {
		t.Fatal("store written with consolidate_metadata was not opened consolidated")
	}
	names, err := s.Arrays()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(manifest) {
		t.Errorf("Arrays() lists %d arrays, manifest has %d", len(names), len(manifest))
	}
	for _, m := range manifest {
		t.Run(m.Name, func(t *testing.T) {
			a, err := s.OpenArray(m.Name)
			if err != nil {
				t.Fatal(err)
			}
			if a.DType().String() != m.DType {
				t.Errorf("dtype %s, want %s", a.DType(), m.DType)
			}
			want, err := os.ReadFile(filepath.Join(dir, m.Name+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			if got := readArrayAll(t, a); !bytes.Equal(got, want) {
				t.Errorf("bytes differ from zarr-python's (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
}

// goCases is every codec/dtype/chunking combination the writer test covers.
func goCases(t *testing.T) []ArraySpec {
	t.Helper()
	var codecs []Codec
	codecs = append(codecs, nil)
	for _, cname := range []string{"lz4", "lz4hc", "zstd", "blosclz", "zlib"} {
		for _, sh := range []int{NoShuffle, ByteShuffle, BitShuffle, AutoShuffle} {
			b, err := NewBlosc(cname, 5, sh, 0)
			if err != nil {
				t.Fatal(err)
			}
			codecs = append(codecs, b)
		}
	}
	for _, name := range []string{"zstd", "lz4", "zlib", "gzip"} {
		c, err := NewCodec(name)
		if err != nil {
			t.Fatal(err)
		}
		codecs = append(codecs, c)
	}
	z9, _ := NewZstd(9)
	gz9, _ := NewGzip(9)
	codecs = append(codecs, z9, NewLZ4(8), gz9)
	dtypes := []string{"|u1", "|i1", "<u2", ">u2", "<i2", ">i4", "<u4", "<i8", ">u8", "<f2", ">f4", "<f4", "<f8", ">f8", "|b1"}
	geoms := [][2][]int{{{37, 11, 3}, {8, 5, 3}}, {{100}, {17}}, {{5, 64, 64, 3}, {1, 64, 64, 3}}, {{3, 4}, {5, 5}}}
	var specs []ArraySpec
	i := 0
	for _, c := range codecs {
		for _, g := range geoms {
			sep := "."
			if i%2 == 1 {
				sep = "/"
			}
			specs = append(specs, ArraySpec{Shape: g[0], Chunks: g[1], DType: dtypes[i%len(dtypes)], Codec: c, FillValue: 0, DimensionSeparator: sep})
			i++
		}
	}
	return specs
}

func randomBytes(r *rand.Rand, dt DType, n int) []byte {
	buf := make([]byte, n*dt.Size)
	for i := 0; i < n; i++ {
		el := buf[i*dt.Size : (i+1)*dt.Size]
		v := float64(i%97+r.IntN(5)) - 20
		if dt.Kind == Uint || dt.Kind == Bool {
			v = float64((i%97 + r.IntN(5)) % map[bool]int{true: 2, false: 256}[dt.Kind == Bool])
		}
		if dt.Kind == Float {
			v /= 4
		}
		if err := dt.encodeValue(el, v); err != nil {
			panic(err)
		}
	}
	return buf
}

func TestZarrPythonReadsOurArrays(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var manifest []manifestEntry
	for i, spec := range goCases(t) {
		name := fmt.Sprintf("a%03d", i)
		a, err := s.CreateArray(name, spec)
		if err != nil {
			t.Fatal(err)
		}
		n := 1
		for _, v := range spec.Shape {
			n *= v
		}
		data := randomBytes(r, a.DType(), n)
		if err := a.WriteRegion(make([]int, len(spec.Shape)), spec.Shape, data); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, manifestEntry{Name: name, DType: spec.DType, Shape: spec.Shape})
		// Our own reader must agree too.
		if got := readArrayAll(t, a); !bytes.Equal(got, data) {
			t.Errorf("%s (%s, %s): round trip differs", name, spec.DType, CodecName(spec.Codec))
		}
	}
	if err := s.Consolidate(); err != nil {
		t.Fatal(err)
	}
	mb, _ := json.Marshal(manifest)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	out := python(t, "zarr_read.py", dir)
	if want := fmt.Sprintf("ok %d\n", len(manifest)); out != want {
		t.Errorf("zarr_read.py: %q, want %q", out, want)
	}
}
