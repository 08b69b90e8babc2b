package dataset

import "math"

// zarr-python 2.x's chunk-size bounds (zarr.util).
const (
	chunkBase = 256 * 1024
	chunkMin  = 128 * 1024
	chunkMax  = 64 * 1024 * 1024
)

// GuessChunks reproduces zarr-python 2.x's guess_chunks, the chunk shape
// zarr picks when none is given: a target chunk size that grows with the
// array's size (a PyTables rule), reached by halving the axes in turn,
// starting with the first.
func GuessChunks(shape []int, typeSize int) []int {
	n := len(shape)
	chunks := make([]float64, n)
	size := float64(typeSize)
	for i, s := range shape {
		chunks[i] = math.Max(float64(s), 1)
		size *= chunks[i]
	}
	target := chunkBase * math.Pow(2, math.Log10(size/(1024*1024)))
	target = math.Min(math.Max(target, chunkMin), chunkMax)
	for idx := 0; n > 0; idx++ {
		prod := 1.0
		for _, c := range chunks {
			prod *= c
		}
		bytes := prod * float64(typeSize)
		if (bytes < target || math.Abs(bytes-target)/target < 0.5) && bytes < chunkMax {
			break
		}
		if prod == 1 {
			break
		}
		chunks[idx%n] = math.Ceil(chunks[idx%n] / 2)
	}
	out := make([]int, n)
	for i, c := range chunks {
		out[i] = int(c)
	}
	return out
}
