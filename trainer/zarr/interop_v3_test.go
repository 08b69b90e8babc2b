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

// zarritaDir holds the zarrita scripts and their pinned npm packages.
var zarritaDir = filepath.Join("testdata", "zarrita")

// node runs a zarrita script. Without Node.js the test is skipped with a
// message saying so on stderr; Node.js without the packages installed is
// a failure (scripts/install-deps.sh installs them).
func node(t *testing.T, script string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		msg := "SKIPPED: the Zarr v3 interop tests against zarrita need Node.js, which is not installed (scripts/install-deps.sh installs it): v3 interop is NOT tested"
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join(zarritaDir, "node_modules", "zarrita", "package.json")); err != nil {
		t.Fatalf("zarrita is not installed in %s: run scripts/install-deps.sh (it runs npm ci there)", zarritaDir)
	}
	cmd := exec.Command(bin, append([]string{filepath.Join(zarritaDir, script)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s %v: %v\n%s", script, args, err, out)
	}
	return string(out)
}

type v3ManifestEntry struct {
	Name         string `json:"name"`
	DType        string `json:"dtype"`
	Shape        []int  `json:"shape"`
	Sharded      bool   `json:"sharded"`
	IndexAtStart bool   `json:"index_at_start"`
}

// nativeCopy returns the array's bytes in this machine's byte order.
func nativeCopy(a *Array, b []byte) []byte {
	out := append([]byte(nil), b...)
	a.DType().ToNative(out)
	return out
}

func TestReadZarritaArrays(t *testing.T) {
	dir := t.TempDir()
	node(t, "write.mjs", dir)
	var manifest []v3ManifestEntry
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
	if s.Format() != 3 {
		t.Fatalf("format %d, want 3", s.Format())
	}
	names, err := s.Arrays()
	if err != nil || len(names) != len(manifest) {
		t.Errorf("Arrays() lists %d arrays (%v), manifest has %d", len(names), err, len(manifest))
	}
	for _, m := range manifest {
		t.Run(m.Name, func(t *testing.T) {
			a, err := s.OpenArray(m.Name)
			if err != nil {
				t.Fatal(err)
			}
			if a.DType().String() != m.DType || (a.ShardShape() != nil) != m.Sharded || a.IndexAtStart() != m.IndexAtStart {
				t.Errorf("dtype %s sharded %v start %v, want %s %v %v", a.DType(), a.ShardShape() != nil, a.IndexAtStart(), m.DType, m.Sharded, m.IndexAtStart)
			}
			want, err := os.ReadFile(filepath.Join(dir, m.Name+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			if got := nativeCopy(a, readArrayAll(t, a)); !bytes.Equal(got, want) {
				t.Errorf("values differ from zarrita's (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
}

func TestZarritaReadsOurArrays(t *testing.T) {
	dir := t.TempDir()
	s, err := CreateFormat(filepath.Join(dir, "store"), 3)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	var manifest []v3ManifestEntry
	for i, tc := range zarritaCases(t) {
		name := fmt.Sprintf("a%02d-%s", i, tc.codec)
		a, err := s.CreateArray(name, tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		shape := tc.spec.Shape
		data := randomBytes(r, a.DType(), prod(shape))
		written := shape[0] - tc.unwritten
		row := len(data) / shape[0]
		if err := a.WriteRegion(make([]int, len(shape)), append([]int{written}, shape[1:]...), data[:written*row]); err != nil {
			t.Fatal(err)
		}
		want := readArrayAll(t, a)
		if !bytes.Equal(want[:written*row], data[:written*row]) {
			t.Fatalf("%s: our own round trip differs", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".bin"), nativeCopy(a, want), 0o644); err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, v3ManifestEntry{Name: name, DType: tc.spec.DType, Shape: shape, Sharded: tc.spec.ShardShape != nil})
	}
	if err := s.Consolidate(); err != nil {
		t.Fatal(err)
	}
	mb, _ := json.Marshal(manifest)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, want := node(t, "read.mjs", dir), fmt.Sprintf("ok %d\n", len(manifest)); out != want {
		t.Errorf("read.mjs: %q, want %q", out, want)
	}
}

// zarritaCase is an array we write for zarrita to read; its last
// unwritten rows read as the fill value.
type zarritaCase struct {
	codec     string
	spec      ArraySpec
	unwritten int
}

// zarritaCases covers each codec in both byte orders, transpose, missing
// chunks and sharding (with the index at the end: zarrita 0.7 reads only
// that layout) with partial edge shards.
func zarritaCases(t *testing.T) []zarritaCase {
	t.Helper()
	var out []zarritaCase
	dtypes := []string{"<u2", ">u2", "<f4", ">f8", "<i8", ">i4", "|u1", "<i2"}
	i := 0
	for _, name := range []string{"none", "blosc-lz4", "blosc-zstd", "zstd", "gzip"} {
		for range 2 {
			out = append(out, zarritaCase{codec: name, spec: ArraySpec{Shape: []int{9, 7, 3}, Chunks: []int{4, 3, 3}, DType: dtypes[i%len(dtypes)]}})
			i++
		}
	}
	out = append(out,
		zarritaCase{codec: "zstd", spec: ArraySpec{Shape: []int{6, 5, 4}, Chunks: []int{4, 5, 2}, DType: ">u2", Order: []int{2, 0, 1}}},
		zarritaCase{codec: "blosc-lz4", spec: ArraySpec{Shape: []int{10, 6}, Chunks: []int{2, 3}, DType: "<i4", FillValue: 7}, unwritten: 4},
		zarritaCase{codec: "blosc-lz4", spec: ArraySpec{Shape: []int{10, 8, 8, 3}, Chunks: []int{1, 8, 8, 3}, ShardShape: []int{4, 8, 8, 3}, DType: "|u1"}},
		zarritaCase{codec: "zstd", spec: ArraySpec{Shape: []int{11, 6}, Chunks: []int{2, 3}, ShardShape: []int{4, 6}, DType: ">f8", FillValue: -1.5}, unwritten: 5},
		zarritaCase{codec: "gzip", spec: ArraySpec{Shape: []int{8, 6}, Chunks: []int{4, 3}, ShardShape: []int{8, 6}, DType: "<i2", Order: []int{1, 0}}},
	)
	for k := range out {
		c, err := NewCodec(out[k].codec)
		if err != nil {
			t.Fatal(err)
		}
		out[k].spec.Codec = c
	}
	return out
}
