package dataset

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

func python(t *testing.T, stdin []byte, script string, args ...string) []byte {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("needs %s with python3-zarr: %v", py, err)
	}
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script)}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

// TestGuessChunksMatchesZarr compares GuessChunks with zarr-python's own
// guess_chunks over the shapes that matter and some awkward ones.
func TestGuessChunksMatchesZarr(t *testing.T) {
	type tc struct {
		Shape    []int
		TypeSize int
	}
	var cases []tc
	for _, T := range []int{1, 50, 1000, 5000, 10000, 20000, 40000, 123457} {
		cases = append(cases, tc{[]int{T, 128, 128, 3}, 1}, tc{[]int{T, 14}, 4}, tc{[]int{T}, 8}, tc{[]int{T, 96, 96, 3}, 1})
	}
	cases = append(cases, tc{[]int{0, 5}, 4}, tc{[]int{1 << 30}, 1}, tc{[]int{7, 7, 7, 7, 7}, 8}, tc{[]int{3}, 100000000})
	in := make([][]any, len(cases))
	for i, c := range cases {
		in[i] = []any{c.Shape, c.TypeSize}
	}
	b, _ := json.Marshal(in)
	var want [][]int
	if err := json.Unmarshal(python(t, b, "guess_chunks.py"), &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if got := GuessChunks(c.Shape, c.TypeSize); !slices.Equal(got, want[i]) {
			t.Errorf("GuessChunks(%v, %d) = %v, zarr says %v", c.Shape, c.TypeSize, got, want[i])
		}
	}
}

func TestGenerateReadByZarrPython(t *testing.T) {
	for _, chunk := range []int{0, 1, 10} {
		dir := filepath.Join(t.TempDir(), "ds")
		if err := Generate(GenOptions{Out: dir, Episodes: 3, Frames: 40, ChunkFrames: chunk, Codec: "blosc-lz4", Seed: 1, Size: 32}); err != nil {
			t.Fatal(err)
		}
		out := python(t, nil, "check_dataset.py", dir, "3", "40", "32")
		if string(out) != "ok\n" {
			t.Errorf("chunk %d: %s", chunk, out)
		}
	}
}

func TestGenerateRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := Generate(GenOptions{Out: dir, Episodes: 1, Frames: 4})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Generate into a non-empty dir: %v", err)
	}
	if err := Generate(GenOptions{Out: t.TempDir() + "/a", Episodes: 1, Frames: 4, Codec: "snappy"}); err == nil || !strings.Contains(err.Error(), `unknown codec "snappy"`) {
		t.Fatalf("bad codec: %v", err)
	}
}

// treeDigest maps every file under dir to its content, to prove a
// directory was not modified.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readAll(t *testing.T, dir, array string) []byte {
	t.Helper()
	s, err := zarr.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.OpenArray(array)
	if err != nil {
		t.Fatal(err)
	}
	n := a.DType().Size
	for _, v := range a.Shape() {
		n *= v
	}
	buf := make([]byte, n)
	if err := a.ReadRegion(make([]int, len(a.Shape())), a.Shape(), buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

func TestRechunkAndInspect(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	if err := Generate(GenOptions{Out: src, Episodes: 4, Frames: 60, ChunkFrames: 0, Seed: 2, Size: 32}); err != nil {
		t.Fatal(err)
	}
	before := treeDigest(t, src)
	rep, err := Inspect(src, episodes.DefaultKeys, episodes.DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReadAmpLarge < 4 || !strings.Contains(rep.Recommendation, "--chunk-frames 1") {
		t.Errorf("default chunking: read amp %.1f, recommendation %q", rep.ReadAmpLarge, rep.Recommendation)
	}
	dst := filepath.Join(base, "dst")
	if err := Rechunk(src, dst, RechunkOptions{ChunkFrames: 1, Codec: "zstd", SlabBytes: 100000}); err != nil {
		t.Fatal(err)
	}
	if !mapsEqual(before, treeDigest(t, src)) {
		t.Fatal("rechunk modified the source")
	}
	for _, a := range []string{"data/camera0", "data/camera3", "data/state", "data/action", "meta/episode_ends"} {
		if !bytes.Equal(readAll(t, src, a), readAll(t, dst, a)) {
			t.Errorf("%s differs after rechunk", a)
		}
	}
	rep, err = Inspect(dst, episodes.DefaultKeys, episodes.DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReadAmpLarge > 1.5 || !strings.Contains(rep.Recommendation, "nothing to do") {
		t.Errorf("after rechunk: read amp %.2f, recommendation %q", rep.ReadAmpLarge, rep.Recommendation)
	}
	for _, ar := range rep.Arrays {
		if strings.HasPrefix(ar.Path, "data/camera") && (ar.Chunks[0] != 1 || ar.Codec != "zstd(1)") {
			t.Errorf("%s: chunks %v codec %s", ar.Path, ar.Chunks, ar.Codec)
		}
	}
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil || !strings.Contains(txt.String(), "data/camera0") {
		t.Errorf("text report: %v\n%s", err, txt.String())
	}
	// The destination must not exist; nothing is left behind on failure.
	if err := Rechunk(src, dst, RechunkOptions{ChunkFrames: 1}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("rechunk onto an existing dir: %v", err)
	}
	if err := Rechunk(filepath.Join(base, "missing"), filepath.Join(base, "d2"), RechunkOptions{ChunkFrames: 1}); err == nil {
		t.Error("rechunk of a missing source succeeded")
	}
	left, _ := filepath.Glob(filepath.Join(base, "*.tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 30: "3.0 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
