// Package episodes reads the diffusion-policy replay-buffer layout from a Zarr
// store and turns it into training windows.
//
// # Layout
//
// A replay buffer keeps every frame of every episode back to back:
// data/<key> arrays whose first axis is the global frame index (camera
// arrays (T,H,W,3) uint8, low-dimensional arrays (T,D) float32) and
// meta/episode_ends (E,) int64, the exclusive end frame of each episode.
//
// # Windows
//
// A training window has n_obs_steps observation frames and horizon action
// frames starting at the same frame, as diffusion_policy's SequenceSampler
// builds them: a window may start up to pad_before = n_obs_steps-1 frames
// before its episode and end up to pad_after = n_action_steps-1 frames after
// it; positions outside the episode repeat the edge frame. Windows never
// cross episode boundaries.
//
// # Sampling and its randomness trade
//
// [Uniform] draws a fresh random permutation of all windows each epoch:
// the reference semantics, and what a DataLoader with shuffle=True does.
// Each window needs a few frames from anywhere in the dataset, so when the
// Zarr chunks hold many frames every sample decompresses whole chunks to
// use two frames of them (read amplification of hundreds).
//
// [ChunkAware] shuffles at chunk granularity instead. Windows are grouped by
// the chunk that holds their last observation frame; the groups are visited
// in a random order, and a shuffle buffer holding the windows of Mix groups
// at a time emits them in random order, refilling from the next group as a
// group drains. Each chunk is then decoded about once per epoch. The price
// is weaker randomness: consecutive samples (and so one batch) come from
// about Mix chunks rather than from the whole dataset, so a batch is
// correlated in time. Every window is still visited exactly once per epoch,
// and the order differs between epochs and seeds. Raise Mix (more memory for
// decoded chunks) to approach uniform sampling; with 1-frame chunks the two
// samplers are equivalent in effect.
//
// When the loader's cache cannot hold a few chunk rows (long chunks, a data
// set many times the cache), groups are spans of a chunk rather than whole
// chunks, and the spans of one chunk are visited one after another: a chunk
// row decoded for one span leaves the frames of the next spans in the
// loader's store, so it is decoded about once per cache-full of its frames.
// Batches are then correlated over a span instead of a chunk.
package episodes
