package loader

import (
	"math"
	"math/rand/v2"
)

// Shape is the geometry of a batch's samples.
type Shape struct {
	NObs, Cams, H, W, Horizon, StateDim, ActionDim int
}

// DefaultShape is the seed policy's batch geometry.
var DefaultShape = Shape{NObs: 2, Cams: 4, H: 128, W: 128, Horizon: 16, StateDim: 14, ActionDim: 14}

// FrameBytes is the size of one HWC uint8 camera frame.
func (s Shape) FrameBytes() int { return s.H * s.W * 3 }

// Batch is one batch of training windows in host memory.
type Batch struct {
	Size                                           int // samples in this batch
	NObs, Cams, H, W, Horizon, StateDim, ActionDim int
	Images                                         []uint8   // [Size][NObs][Cams][H][W][3]
	State                                          []float32 // [Size][NObs][StateDim]
	Action                                         []float32 // [Size][Horizon][ActionDim]
	// Sample is the stream index of the first sample (see Loader.Position).
	Sample int64
	// Windows holds each sample's window id in the replay index.
	Windows []int32
}

// NewBatch allocates an empty batch of the given shape and capacity.
func NewBatch(s Shape, size int) *Batch {
	return &Batch{
		Size: size, NObs: s.NObs, Cams: s.Cams, H: s.H, W: s.W, Horizon: s.Horizon,
		StateDim: s.StateDim, ActionDim: s.ActionDim,
		Images:  make([]uint8, size*s.NObs*s.Cams*s.FrameBytes()),
		State:   make([]float32, size*s.NObs*s.StateDim),
		Action:  make([]float32, size*s.Horizon*s.ActionDim),
		Windows: make([]int32, size),
	}
}

// Shape returns the batch's geometry.
func (b *Batch) Shape() Shape {
	return Shape{NObs: b.NObs, Cams: b.Cams, H: b.H, W: b.W, Horizon: b.Horizon, StateDim: b.StateDim, ActionDim: b.ActionDim}
}

// Frame returns the image bytes of one sample, observation step and camera.
func (b *Batch) Frame(sample, obs, cam int) []uint8 {
	n := b.H * b.W * 3
	o := ((sample*b.NObs+obs)*b.Cams + cam) * n
	return b.Images[o : o+n]
}

// SyntheticBatch returns an in-memory batch with the given shape filled with
// seeded pseudo-random content (images, state and actions in [-1, 1]). It
// stands in for the loader when a pipeline stage is measured without data.
func SyntheticBatch(s Shape, size int, seed uint64) *Batch {
	b := NewBatch(s, size)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i < len(b.Images); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && i+k < len(b.Images); k++ {
			b.Images[i+k] = uint8(v >> (8 * k))
		}
	}
	for i := range b.State {
		b.State[i] = float32(math.Sin(float64(i)) * r.Float64())
	}
	for i := range b.Action {
		b.Action[i] = float32(2*r.Float64() - 1)
	}
	return b
}
