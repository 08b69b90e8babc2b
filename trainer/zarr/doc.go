// Package zarr reads and writes Zarr v2 arrays in local directory stores.
//
// It covers what a training data pipeline needs and nothing more: integer
// and floating-point dtypes in either byte order, C order, fill values for
// missing chunks, both dimension separators ("." and "/"), consolidated
// metadata (.zmetadata), and the numcodecs compressors blosc (through
// libblosc), zstd, lz4, zlib and gzip, framed byte for byte as numcodecs
// frames them so that zarr-python reads what this package writes and the
// other way round.
//
// Chunks decode into caller-owned buffers ([Array.DecodeChunk]) so a loader
// can decode straight into its batch memory; [Array.ReadRegion] assembles an
// arbitrary hyper-rectangle across chunks, handling partial edge chunks.
// Bytes are returned in the array's stored byte order; [DType.ToNative]
// converts in place.
package zarr
