package dataset

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// GenOptions configures Generate.
type GenOptions struct {
	Out      string
	Episodes int
	Frames   int // frames per episode
	// ChunkFrames is the camera chunk length in frames; 0 means zarr's
	// default chunk guess for every array ("--chunk-frames auto").
	ChunkFrames int
	// Codec is a zarr.NewCodec name ("blosc-lz4", zarr's default).
	Codec string
	// Layout is the Zarr format (0 means 2) and the camera shards.
	Layout  Layout
	Seed    uint64
	Cameras int // 4
	Size    int // frame height and width, 128
}

func (o *GenOptions) defaults() error {
	if o.Cameras == 0 {
		o.Cameras = 4
	}
	if o.Size == 0 {
		o.Size = 128
	}
	if o.Codec == "" {
		o.Codec = "blosc-lz4"
	}
	if o.Layout.Format == 0 {
		o.Layout.Format = 2
	}
	if err := o.Layout.check(o.ChunkFrames); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	switch {
	case o.Out == "":
		return fmt.Errorf("gen: no output directory")
	case o.Episodes < 1 || o.Frames < 2:
		return fmt.Errorf("gen: need episodes >= 1 and frames >= 2 (got %d, %d)", o.Episodes, o.Frames)
	case o.ChunkFrames < 0:
		return fmt.Errorf("gen: chunk frames %d must be >= 1 (or 0 for auto)", o.ChunkFrames)
	case o.Size < 24:
		return fmt.Errorf("gen: frame size %d is too small (>= 24)", o.Size)
	}
	return nil
}

// CameraKey names camera k's array under data/.
func CameraKey(k int) string { return fmt.Sprintf("camera%d", k) }

// CameraChunks is the chunk shape for a (T,H,W,3) camera array: whole
// frames of chunkFrames, or zarr's guess when chunkFrames is 0.
func CameraChunks(t, h, w, chunkFrames int) []int {
	if chunkFrames == 0 {
		return GuessChunks([]int{t, h, w, 3}, 1)
	}
	return []int{min(chunkFrames, max(t, 1)), h, w, 3}
}

// Generate writes a procedural replay buffer to o.Out, which must not exist
// or be empty. Memory use is about cameras × chunk frames × frame bytes.
func Generate(o GenOptions) error {
	if err := o.defaults(); err != nil {
		return err
	}
	codec, err := zarr.NewCodec(o.Codec)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	T := o.Episodes * o.Frames
	if int64(T)*int64(o.Size*o.Size*3) > math.MaxInt64/8 {
		return fmt.Errorf("gen: dataset too large")
	}
	s, err := zarr.CreateFormat(o.Out, o.Layout.Format)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	states, ends := simulate(o)
	cams := make([]*zarr.Array, o.Cameras)
	shape := []int{T, o.Size, o.Size, 3}
	chunks := CameraChunks(T, o.Size, o.Size, o.ChunkFrames)
	if o.ChunkFrames == 0 && o.Layout.ShardFrames%chunks[0] != 0 {
		return fmt.Errorf("gen: shard frames %d must be a multiple of the chunk frames %d", o.Layout.ShardFrames, chunks[0])
	}
	for k := range cams {
		cams[k], err = s.CreateArray("data/"+CameraKey(k), zarr.ArraySpec{Shape: shape, Chunks: chunks,
			ShardShape: o.Layout.shardShape(shape, chunks), DType: "|u1", Codec: codec, FillValue: 0})
		if err != nil {
			return fmt.Errorf("gen: %w", err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, o.Cameras)
	for k := range cams {
		wg.Go(func() { errs[k] = writeCamera(cams[k], newCamera(k, o.Size, o.Size, o.Seed), states, o.Frames) })
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return fmt.Errorf("gen: %w", e)
		}
	}
	actions := make([]float32, len(states))
	for t := 0; t < T; t++ {
		next := t + 1
		if next%o.Frames == 0 { // last frame of its episode: hold still
			next = t
		}
		copy(actions[t*StateDim:(t+1)*StateDim], states[next*StateDim:(next+1)*StateDim])
	}
	for key, v := range map[string][]float32{"state": states, "action": actions} {
		if err := writeLowDim(s, key, v, codec); err != nil {
			return fmt.Errorf("gen: %w", err)
		}
	}
	if err := episodes.WriteEpisodeEnds(s, ends, codec); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	attrs := map[string]any{"generator": "pipetrain data gen", "episodes": o.Episodes, "frames_per_episode": o.Frames, "seed": o.Seed}
	if err := s.SetAttrs("", attrs); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := s.Consolidate(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// simulate returns the state of every frame and the episode ends.
func simulate(o GenOptions) ([]float32, []int64) {
	r := rand.New(rand.NewPCG(o.Seed, 1))
	states := make([]float32, o.Episodes*o.Frames*StateDim)
	ends := make([]int64, o.Episodes)
	for e := range o.Episodes {
		ep := newEpisode(r)
		for t := range o.Frames {
			g := e*o.Frames + t
			ep.state(t, states[g*StateDim:(g+1)*StateDim])
		}
		ends[e] = int64((e + 1) * o.Frames)
	}
	return states, ends
}

// writeCamera renders and writes one camera, a slab of chunk (or shard)
// rows at a time.
func writeCamera(a *zarr.Array, cam *camera, states []float32, perEp int) error {
	sh := a.Shape()
	T, fb := sh[0], sh[1]*sh[2]*3
	rows := writeRows(a.Chunks(), a.ShardShape())
	slab := make([]byte, rows*fb)
	for t0 := 0; t0 < T; t0 += rows {
		n := min(rows, T-t0)
		for i := range n {
			t := t0 + i
			cam.render(t%perEp, states[t*StateDim:(t+1)*StateDim], slab[i*fb:(i+1)*fb])
		}
		if err := a.WriteRegion([]int{t0, 0, 0, 0}, []int{n, sh[1], sh[2], 3}, slab[:n*fb]); err != nil {
			return err
		}
	}
	return nil
}

func writeLowDim(s *zarr.Store, key string, v []float32, codec zarr.Codec) error {
	T := len(v) / StateDim
	a, err := s.CreateArray("data/"+key, zarr.ArraySpec{Shape: []int{T, StateDim},
		Chunks: GuessChunks([]int{T, StateDim}, 4), DType: "<f4", Codec: codec, FillValue: 0})
	if err != nil {
		return err
	}
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	return a.WriteRegion([]int{0, 0}, []int{T, StateDim}, raw)
}
