package episodes

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/trainer/zarr"
)

func frames(w Window, n int) []int64 {
	out := make([]int64, n)
	for j := range out {
		out[j] = w.Frame(j)
	}
	return out
}

// TestBuildIndexSequenceSampler checks the diffusion_policy SequenceSampler
// rule: starts from -pad_before to len-horizon+pad_after, edges repeated.
func TestBuildIndexSequenceSampler(t *testing.T) {
	tests := []struct {
		name   string
		ends   []int64
		p      WindowParams
		frames [][]int64
	}{
		{"pad both ends", []int64{5}, WindowParams{NObs: 2, Horizon: 4, NActionSteps: 3}, [][]int64{
			{0, 0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 4}, {3, 4, 4, 4}}},
		{"two episodes never mix", []int64{3, 6}, WindowParams{NObs: 1, Horizon: 2, NActionSteps: 2}, [][]int64{
			{0, 1}, {1, 2}, {2, 2}, {3, 4}, {4, 5}, {5, 5}}},
		{"episode shorter than horizon", []int64{2}, WindowParams{NObs: 2, Horizon: 4, NActionSteps: 2}, [][]int64{
			{0, 0, 1, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, err := BuildIndex(tt.ends, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if idx.Len() != len(tt.frames) {
				t.Fatalf("%d windows, want %d", idx.Len(), len(tt.frames))
			}
			for i, w := range idx.Windows {
				if got := frames(w, tt.p.Horizon); !slices.Equal(got, tt.frames[i]) {
					t.Errorf("window %d frames %v, want %v", i, got, tt.frames[i])
				}
			}
		})
	}
}

func TestBuildIndexErrors(t *testing.T) {
	tests := []struct {
		ends []int64
		p    WindowParams
		want string
	}{
		{[]int64{5, 5}, DefaultWindow, "episode_ends[1] = 5"},
		{[]int64{3}, WindowParams{NObs: 3, Horizon: 2, NActionSteps: 1}, "exceeds horizon"},
		{[]int64{1}, WindowParams{NObs: 1, Horizon: 8, NActionSteps: 1}, "no training windows"},
	}
	for _, tt := range tests {
		if _, err := BuildIndex(tt.ends, tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("BuildIndex(%v, %+v) error %v, want %q", tt.ends, tt.p, err, tt.want)
		}
	}
}

func isPermutation(order []int32, n int) bool {
	s := slices.Clone(order)
	slices.Sort(s)
	for i, v := range s {
		if int(v) != i {
			return false
		}
	}
	return len(s) == n
}

// twentyEpisodes indexes 20 episodes of 100 frames with the default window.
func twentyEpisodes(t *testing.T) *Index {
	t.Helper()
	var ends []int64
	for e := int64(1); e <= 20; e++ {
		ends = append(ends, e*100)
	}
	idx, err := BuildIndex(ends, DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestSamplers(t *testing.T) {
	idx := twentyEpisodes(t)
	ca, err := NewChunkAware(idx, 50, 0, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Shuffle{Uniform{N: idx.Len(), Seed: 7}, ca} {
		t.Run(s.Name(), func(t *testing.T) {
			a, b, c := s.Order(0), s.Order(0), s.Order(1)
			if !isPermutation(a, idx.Len()) || !isPermutation(c, idx.Len()) {
				t.Fatal("order is not a permutation of the windows")
			}
			if !slices.Equal(a, b) {
				t.Error("same seed and epoch gave different orders")
			}
			if slices.Equal(a, c) {
				t.Error("epochs 0 and 1 gave the same order")
			}
		})
	}
	// Chunk-aware locality: any 64 consecutive samples touch at most about
	// Mix+1 chunks (a group drains while the next one enters).
	order := ca.Order(3)
	for i := 0; i+64 <= len(order); i += 64 {
		chunks := map[int64]bool{}
		for _, w := range order[i : i+64] {
			chunks[idx.Windows[w].Frame(1)/50] = true
		}
		if len(chunks) > 2*ca.Mix {
			t.Fatalf("batch at %d spans %d chunks with mix %d", i, len(chunks), ca.Mix)
		}
	}
	// Uniform is not local: a batch spans many chunks.
	order = Uniform{N: idx.Len(), Seed: 7}.Order(0)
	chunks := map[int64]bool{}
	for _, w := range order[:64] {
		chunks[idx.Windows[w].Frame(1)/50] = true
	}
	if len(chunks) < 20 {
		t.Errorf("uniform batch spans only %d of 40 chunks", len(chunks))
	}
}

// Spans split chunks into smaller groups; a chunk's spans are visited one
// after another, so at most about Mix chunks are in progress at a time.
func TestChunkAwareSpans(t *testing.T) {
	idx := twentyEpisodes(t)
	whole, err := NewChunkAware(idx, 50, 0, 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewChunkAware(idx, 50, 10, 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Groups() < 4*whole.Groups() {
		t.Fatalf("%d spans of 10 frames for %d chunks of 50", ca.Groups(), whole.Groups())
	}
	order := ca.Order(0)
	if !isPermutation(order, idx.Len()) {
		t.Fatal("order is not a permutation of the windows")
	}
	left := map[int64]int{}
	for _, w := range idx.Windows {
		left[w.Frame(1)/50]++
	}
	active := map[int64]bool{}
	most := 0
	for _, w := range order {
		row := idx.Windows[w].Frame(1) / 50
		active[row] = true
		most = max(most, len(active))
		if left[row]--; left[row] == 0 {
			delete(active, row)
		}
	}
	if most > ca.Mix+1 {
		t.Fatalf("%d chunks in progress at once with mix %d", most, ca.Mix)
	}
}

// writeBuffer makes a small replay buffer: T frames, 2 cameras 4x4.
func writeBuffer(t *testing.T, ends []int64, frames int, stateDType string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	s, err := zarr.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, cam := range []string{"camera0", "camera1"} {
		a, err := s.CreateArray("data/"+cam, zarr.ArraySpec{Shape: []int{frames, 4, 4, 3}, Chunks: []int{2, 4, 4, 3}, DType: "|u1"})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, frames*48)
		for i := range buf {
			buf[i] = byte(i / 48)
		}
		if err := a.WriteRegion([]int{0, 0, 0, 0}, []int{frames, 4, 4, 3}, buf); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"state", "action"} {
		a, err := s.CreateArray("data/"+k, zarr.ArraySpec{Shape: []int{frames, 3}, Chunks: []int{frames, 3}, DType: stateDType})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, a.ChunkBytes())
		for i := 0; i < len(buf)/a.DType().Size; i++ {
			binary.BigEndian.PutUint32(buf[a.DType().Size*i:], math.Float32bits(float32(i)))
		}
		if err := a.WriteRegion([]int{0, 0}, []int{frames, 3}, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteEpisodeEnds(s, ends, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Consolidate(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpen(t *testing.T) {
	keys := Keys{Cameras: []string{"camera0", "camera1"}, LowDim: []string{"state"}, Action: "action"}
	b, err := Open(writeBuffer(t, []int64{4, 10}, 10, ">f4"), keys)
	if err != nil {
		t.Fatal(err)
	}
	if b.Frames != 10 || b.H != 4 || b.W != 4 || b.StateDim != 3 || b.ActionDim != 3 || len(b.Cameras) != 2 {
		t.Errorf("opened %+v", b)
	}
	bad := []struct {
		name string
		dir  string
		keys Keys
		want string
	}{
		{"missing camera", writeBuffer(t, []int64{10}, 10, "<f4"), Keys{Cameras: []string{"camera9"}, Action: "action"},
			`key "camera9": array "data/camera9": missing .zarray`},
		{"episode_ends disagree", writeBuffer(t, []int64{4, 12}, 10, "<f4"), keys,
			"data/camera0 has 10 frames but meta/episode_ends ends at 12"},
		{"wrong dtype", writeBuffer(t, []int64{10}, 10, "<f8"), keys, "data/state is <f8, want float32"},
		{"camera as state", writeBuffer(t, []int64{10}, 10, "<f4"), Keys{Cameras: []string{"state"}, Action: "action"},
			"data/state has shape [10 3], want rank 4"},
	}
	for _, tt := range bad {
		if _, err := Open(tt.dir, tt.keys); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestWindowsMatchPeer checks BuildIndex against the window builder of
// bench/loader_peer.py (a port of diffusion_policy's create_indices), so the
// loader benchmark compares identical work.
func TestWindowsMatchPeer(t *testing.T) {
	ends := []int64{5, 30, 31, 47}
	for _, p := range []WindowParams{DefaultWindow, {NObs: 1, Horizon: 1, NActionSteps: 1}, {NObs: 3, Horizon: 10, NActionSteps: 4}} {
		args := []string{filepath.Join("testdata", "peer_windows.py"), strconv.Itoa(p.Horizon), strconv.Itoa(p.NObs), strconv.Itoa(p.NActionSteps)}
		for _, e := range ends {
			args = append(args, strconv.FormatInt(e, 10))
		}
		out, err := exec.Command("/usr/bin/python3", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("peer_windows.py (needs /usr/bin/python3 with torch and zarr): %v\n%s", err, out)
		}
		var want [][]int64
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		idx, err := BuildIndex(ends, p)
		if err != nil {
			t.Fatal(err)
		}
		if idx.Len() != len(want) {
			t.Fatalf("%+v: %d windows, peer has %d", p, idx.Len(), len(want))
		}
		for i, w := range idx.Windows {
			if got := frames(w, p.Horizon); !slices.Equal(got, want[i]) {
				t.Errorf("%+v window %d: %v, peer %v", p, i, got, want[i])
			}
		}
	}
}
