// Package dataset makes, inspects and rechunks the Zarr replay buffers
// pipetrain trains on.
//
// Generate writes a procedural dataset in the diffusion-policy layout (see
// package replay): seven shapes move smoothly in each episode; their (x, y)
// positions are the 14-dim state, the action at frame t is the state at
// t+1, and each of the four cameras shows the scene from its own rotated or
// mirrored view in its own colours over a noisy background, so a policy can
// learn it and the images compress like real ones rather than like flat
// colour. GuessChunks reproduces zarr-python's default chunking, so the
// "default chunking" dataset is the one zarr would really produce.
//
// Inspect reports each array's dtype, chunking, codec, sizes, and the read
// amplification random training windows will cause, with a recommendation.
// Rechunk streams a dataset into new chunking with bounded memory, verifies
// every slab, and only then renames the result into place.
package dataset
