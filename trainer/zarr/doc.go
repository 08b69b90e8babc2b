// Package zarr reads and writes Zarr v2 and v3 arrays in local directory
// stores. Which version a store is, is read from the store (a root
// zarr.json is v3).
//
// It covers what a training data pipeline needs and nothing more: integer
// and floating-point dtypes in either byte order, fill values for missing
// chunks, consolidated metadata (.zmetadata in v2, the root zarr.json's
// consolidated_metadata in v3), and the compressors camera data uses:
// blosc (through libblosc), zstd, lz4, zlib and gzip in v2, framed byte
// for byte as numcodecs frames them; in v3 the codecs bytes, transpose,
// blosc, zstd, gzip and crc32c, both chunk key encodings, and the
// sharding_indexed codec with its index at the start or the end.
// zarr-python reads what this package writes as v2, zarrita what it writes
// as v3, and the other way round.
//
// Chunks decode into caller-owned buffers ([Array.DecodeChunk]) so a loader
// can decode straight into its batch memory; [Array.ReadRegion] assembles an
// arbitrary hyper-rectangle across chunks, handling partial edge chunks.
// A sharded array presents its inner chunks as its chunks: [Array.ReadRaw]
// reads one with a single ranged read of its shard, after reading and
// checking the shard's index once (cached). Bytes are returned in the
// array's stored byte order; [DType.ToNative] converts in place.
package zarr
