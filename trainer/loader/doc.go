// Package loader is pipetrain's parallel input pipeline: it reads training
// windows from a Zarr replay buffer (package replay) and assembles them into
// batches.
//
// N decode workers each fill a whole batch at a time into a reusable buffer
// taken from a small pool, so the training loop's Next only waits when the
// workers fall behind. Batches come out in sample order whatever the number
// of workers, and their content depends only on the seed: a run resumed with
// Config.StartSample = Position() continues the same sample stream.
//
// Images stay uint8 HWC, as stored; normalisation belongs on the device.
// Zarr v2 and v3 stores are read alike: the chunks of a sharded v3 camera
// are its inner chunks, each read with one ranged read of its shard.
// When a camera is chunked one frame per chunk, the chunk is decompressed
// straight into its slot in the batch (no intermediate copy). Otherwise
// decoded chunks go through a shared cache with a memory cap and
// single-flight decoding, so two workers never decode the same chunk at
// once; with the chunk-aware sampler each chunk is then decoded about once
// per epoch.
//
// Stats reports samples/s, worker busy fraction, queue depth, cache hit
// rate and read amplification (bytes decompressed / bytes copied into
// batches). A corrupt or missing chunk is an error returned by Next for the
// batch that needed it; a panic inside a worker is recovered into an error.
package loader
