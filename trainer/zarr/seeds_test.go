package zarr

// v3Seeds are zarr.json documents as zarr-python 3 and zarrita write them:
// the fuzz corpus's start and the parser tests' inputs. The first is
// sharded with four inner chunks per shard (FuzzShardIndex uses it).
var v3Seeds = []string{
	`{"zarr_format":3,"node_type":"array","shape":[10,4],"data_type":"uint8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4,4]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":0,"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[1,4],"codecs":[{"name":"bytes"},{"name":"zstd","configuration":{"level":0,"checksum":false}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}],"attributes":{},"storage_transformers":[],"dimension_names":null}`,
	`{"zarr_format":3,"node_type":"array","shape":[7,3],"data_type":"float32","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3,3]}},"chunk_key_encoding":{"name":"v2","configuration":{"separator":"."}},"fill_value":"NaN","codecs":[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes","configuration":{"endian":"big"}},{"name":"blosc","configuration":{"cname":"lz4","clevel":5,"shuffle":"shuffle","typesize":4,"blocksize":0}},{"name":"crc32c"}],"attributes":{"a":1}}`,
	`{"zarr_format":3,"node_type":"array","shape":[5],"data_type":"int64","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"fill_value":-3,"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"gzip","configuration":{"level":5}}],"extra":{"must_understand":false}}`,
	`{"zarr_format":3,"node_type":"array","shape":[6,8],"data_type":"float64","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[6,8]}},"fill_value":"0x7ff8000000000000","codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[3,4],"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"},{"name":"zstd","configuration":{"level":3,"checksum":true}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"big"}}],"index_location":"start"}}]}`,
	`{"zarr_format":3,"node_type":"array","shape":[],"data_type":"bool","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[]}},"fill_value":true,"codecs":["bytes"]}`,
}
