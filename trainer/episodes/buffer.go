package episodes

import (
	"encoding/binary"
	"fmt"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// Keys names the arrays of a replay buffer under data/.
type Keys struct {
	Cameras []string // (T,H,W,3) uint8 arrays
	LowDim  []string // (T,D) float32 observation arrays, concatenated in order
	Action  string   // (T,D) float32
}

// DefaultKeys is the layout `pipetrain data gen` writes.
var DefaultKeys = Keys{
	Cameras: []string{"camera0", "camera1", "camera2", "camera3"},
	LowDim:  []string{"state"},
	Action:  "action",
}

// Buffer is an opened, validated replay buffer.
type Buffer struct {
	Store       *zarr.Store
	Cameras     []*zarr.Array
	LowDim      []*zarr.Array
	Action      *zarr.Array
	EpisodeEnds []int64
	Frames      int64 // T
	H, W        int   // camera frame size
	StateDim    int   // sum of the low-dim widths
	ActionDim   int
}

// Open opens the replay buffer at dir and checks that the arrays named by
// keys exist and agree: uint8 (T,H,W,3) cameras of one size, float32 (T,D)
// low-dim and action arrays, and episode_ends ending at T.
func Open(dir string, keys Keys) (*Buffer, error) {
	if len(keys.Cameras) == 0 {
		return nil, fmt.Errorf("replay buffer %s: no camera keys", dir)
	}
	s, err := zarr.Open(dir)
	if err != nil {
		return nil, err
	}
	b := &Buffer{Store: s}
	if b.EpisodeEnds, err = readEpisodeEnds(s); err != nil {
		return nil, fmt.Errorf("replay buffer %s: %w", dir, err)
	}
	b.Frames = b.EpisodeEnds[len(b.EpisodeEnds)-1]
	for _, k := range keys.Cameras {
		a, err := b.openArray(k, 4)
		if err != nil {
			return nil, fmt.Errorf("replay buffer %s: %w", dir, err)
		}
		sh := a.Shape()
		if a.DType().Kind != zarr.Uint || a.DType().Size != 1 || sh[3] != 3 {
			return nil, fmt.Errorf("replay buffer %s: camera data/%s is %s %v, want uint8 (T,H,W,3)", dir, k, a.DType(), sh)
		}
		if len(b.Cameras) == 0 {
			b.H, b.W = sh[1], sh[2]
		} else if sh[1] != b.H || sh[2] != b.W {
			return nil, fmt.Errorf("replay buffer %s: camera data/%s is %dx%d, data/%s is %dx%d", dir, k, sh[1], sh[2], keys.Cameras[0], b.H, b.W)
		}
		b.Cameras = append(b.Cameras, a)
	}
	for _, k := range keys.LowDim {
		a, err := b.openFloat(k)
		if err != nil {
			return nil, fmt.Errorf("replay buffer %s: %w", dir, err)
		}
		b.LowDim = append(b.LowDim, a)
		b.StateDim += a.Shape()[1]
	}
	if b.Action, err = b.openFloat(keys.Action); err != nil {
		return nil, fmt.Errorf("replay buffer %s: %w", dir, err)
	}
	b.ActionDim = b.Action.Shape()[1]
	return b, nil
}

func (b *Buffer) openArray(key string, rank int) (*zarr.Array, error) {
	a, err := b.Store.OpenArray("data/" + key)
	if err != nil {
		names, _ := b.Store.Arrays()
		return nil, fmt.Errorf("key %q: %w (arrays: %v)", key, err, names)
	}
	sh := a.Shape()
	if len(sh) != rank {
		return nil, fmt.Errorf("data/%s has shape %v, want rank %d", key, sh, rank)
	}
	if int64(sh[0]) != b.Frames {
		return nil, fmt.Errorf("data/%s has %d frames but meta/episode_ends ends at %d", key, sh[0], b.Frames)
	}
	return a, nil
}

func (b *Buffer) openFloat(key string) (*zarr.Array, error) {
	a, err := b.openArray(key, 2)
	if err != nil {
		return nil, err
	}
	if d := a.DType(); d.Kind != zarr.Float || d.Size != 4 {
		return nil, fmt.Errorf("data/%s is %s, want float32 (<f4 or >f4)", key, d)
	}
	return a, nil
}

func readEpisodeEnds(s *zarr.Store) ([]int64, error) {
	a, err := s.OpenArray("meta/episode_ends")
	if err != nil {
		return nil, err
	}
	d := a.DType()
	if len(a.Shape()) != 1 || d.Kind != zarr.Int || d.Size != 8 {
		return nil, fmt.Errorf("meta/episode_ends is %s %v, want int64 (E,)", d, a.Shape())
	}
	n := a.Shape()[0]
	if n == 0 {
		return nil, fmt.Errorf("meta/episode_ends is empty")
	}
	raw := make([]byte, 8*n)
	if err := a.ReadRegion([]int{0}, []int{n}, raw); err != nil {
		return nil, err
	}
	ends := make([]int64, n)
	var prev int64
	for i := range ends {
		ends[i] = int64(d.ByteOrder().Uint64(raw[8*i:]))
		if ends[i] <= prev {
			return nil, fmt.Errorf("meta/episode_ends[%d] = %d after %d: must be increasing and positive", i, ends[i], prev)
		}
		prev = ends[i]
	}
	return ends, nil
}

// WriteEpisodeEnds writes meta/episode_ends as a single-chunk int64 array.
func WriteEpisodeEnds(s *zarr.Store, ends []int64, codec zarr.Codec) error {
	a, err := s.CreateArray("meta/episode_ends", zarr.ArraySpec{
		Shape: []int{len(ends)}, Chunks: []int{max(1, len(ends))}, DType: "<i8", Codec: codec, FillValue: 0})
	if err != nil {
		return err
	}
	raw := make([]byte, 8*len(ends))
	for i, e := range ends {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(e))
	}
	return a.WriteRegion([]int{0}, []int{len(ends)}, raw)
}

// Index builds the window index for p.
func (b *Buffer) Index(p WindowParams) (*Index, error) {
	return BuildIndex(b.EpisodeEnds, p)
}
