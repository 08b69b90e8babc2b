// Writes Zarr v3 arrays with zarrita (an implementation independent of
// trainer/zarr) for the Go reader's interop test.
//
// usage: node write.mjs OUT_DIR
//
// Writes OUT_DIR/store (a v3 group of arrays covering each codec the Go
// package reads: blosc, zstd, gzip, bytes in both byte orders, transpose,
// both chunk key encodings, fill values for missing chunks, and sharding
// with the index at the start and at the end), OUT_DIR/<name>.bin (each
// array's expected elements, C order, little-endian) and
// OUT_DIR/manifest.json.
//
// zarrita encodes every chunk and every shard index. Three things it
// cannot do, and how this script does them instead:
//   - encode gzip and crc32c (it only decodes them): the codec registry
//     gets encoders from node's zlib and from @aws-crypto/crc32c;
//   - take blosc's v3 shuffle names: they are mapped to numcodecs'
//     numbers before numcodecs encodes;
//   - write sharded arrays: each shard's inner chunks are encoded by
//     zarrita as a plain array with the inner chunk shape and codecs, its
//     index as a uint64 array with the index codecs, and the shard file is
//     their concatenation with the index first or last, as the sharding
//     specification lays it out. zarrita then reads every end-indexed
//     shard back as a check (it cannot read start-indexed ones).
import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { crc32c } from "@aws-crypto/crc32c";
import FileSystemStore from "@zarrita/storage/fs";
import Blosc from "numcodecs/blosc";
import * as zarr from "zarrita";
import { cStrides, DTYPES, numpyType, product, toCBytes } from "./common.mjs";

const SHUFFLE = { noshuffle: 0, shuffle: 1, bitshuffle: 2 };
zarr.registry.set("blosc", () => ({
	fromConfig: (cfg) => Blosc.fromConfig({ ...cfg, shuffle: SHUFFLE[cfg.shuffle] ?? cfg.shuffle }),
}));
zarr.registry.set("gzip", () => ({
	fromConfig: (cfg) => ({
		kind: "bytes_to_bytes",
		encode: async (b) => new Uint8Array(zlib.gzipSync(b, { level: cfg?.level ?? 5 })),
		decode: async (b) => new Uint8Array(zlib.gunzipSync(b)),
	}),
}));
zarr.registry.set("crc32c", () => ({
	fromConfig: () => ({
		kind: "bytes_to_bytes",
		encode: async (b) => {
			const out = new Uint8Array(b.length + 4);
			out.set(b);
			new DataView(out.buffer).setUint32(b.length, crc32c(b), true);
			return out;
		},
		decode: async (b) => b.subarray(0, b.length - 4),
		computeEncodedSize: (n) => n + 4,
	}),
}));

const bytes = (endian) => ({ name: "bytes", configuration: { endian } });
const CODECS = {
	none: [],
	"blosc-lz4": [{ name: "blosc", configuration: { cname: "lz4", clevel: 5, shuffle: "shuffle", typesize: 1, blocksize: 0 } }],
	"blosc-zstd": [{ name: "blosc", configuration: { cname: "zstd", clevel: 3, shuffle: "bitshuffle", typesize: 1, blocksize: 0 } }],
	"blosc-noshuffle": [{ name: "blosc", configuration: { cname: "blosclz", clevel: 9, shuffle: "noshuffle", typesize: 1, blocksize: 0 } }],
	zstd: [{ name: "zstd", configuration: { level: 3, checksum: false } }],
	gzip: [{ name: "gzip", configuration: { level: 5 } }],
	"zstd-crc32c": [{ name: "zstd", configuration: { level: 1, checksum: false } }, { name: "crc32c" }],
};

// values fills a typed array of n elements with a compressible pattern.
function values(dtype, n, seed) {
	const t = DTYPES[dtype];
	const out = new t.ctor(n);
	for (let i = 0; i < n; i++) {
		const v = ((i * 7 + seed) % 97) + (i >> 4) % 5;
		if (t.ctor === BigInt64Array) out[i] = BigInt(v) * 1000003n - 40n;
		else if (t.np[0] === "f") out[i] = v * 0.25 - 3;
		else if (t.np[0] === "i") out[i] = v - 40;
		else out[i] = v;
	}
	return out;
}

// expected is the array after writing data to its first `rows` rows: the
// fill value elsewhere.
function expected(dtype, shape, data, rows, fill) {
	const out = new DTYPES[dtype].ctor(product(shape));
	const row = product(shape.slice(1));
	out.fill(DTYPES[dtype].ctor === BigInt64Array ? BigInt(fill) : fill);
	out.set(data.subarray(0, rows * row));
	return out;
}

async function writeRows(arr, dtype, shape, data, rows) {
	const sub = [rows, ...shape.slice(1)];
	const sel = [zarr.slice(0, rows), ...shape.slice(1).map(() => null)];
	await zarr.set(arr, sel, { data: data.subarray(0, product(sub)), shape: sub, stride: cStrides(sub) });
}

// plain writes an unsharded array with zarrita.
async function plain(root, c) {
	const loc = root.resolve(c.name);
	const arr = await zarr.create(loc, { shape: c.shape, chunkShape: c.chunks, dtype: c.dtype,
		codecs: c.codecs, fillValue: c.fill, chunkSeparator: c.sep ?? "/" });
	if (c.v2keys) {
		// zarrita creates only the default key encoding; it writes and
		// reads the v2 one when the metadata says so.
		const file = path.join(root.store.root, c.name, "zarr.json");
		const meta = JSON.parse(fs.readFileSync(file));
		meta.chunk_key_encoding = { name: "v2", configuration: { separator: "." } };
		fs.writeFileSync(file, JSON.stringify(meta));
	}
	const data = values(c.dtype, product(c.shape), c.seed);
	await writeRows(await zarr.open(loc, { kind: "array" }), c.dtype, c.shape, data, c.rows);
	return expected(c.dtype, c.shape, data, c.rows, c.fill);
}

// sharded writes a sharded array: inner chunks and indexes encoded by
// zarrita, shards laid out here (see the header).
async function sharded(root, scratch, c) {
	const per = c.shard.map((s, i) => s / c.chunks[i]);
	const inner = await zarr.create(scratch.resolve(c.name), { shape: c.shape, chunkShape: c.chunks, dtype: c.dtype,
		codecs: c.codecs, fillValue: c.fill, chunkSeparator: "/" });
	const data = values(c.dtype, product(c.shape), c.seed);
	await writeRows(inner, c.dtype, c.shape, data, c.rows);
	const indexCodecs = c.crc ? [bytes("little"), { name: "crc32c" }] : [bytes("little")];
	const idx = await zarr.create(scratch.resolve(c.name + "-index"), { shape: [...per, 2], chunkShape: [...per, 2],
		dtype: "uint64", codecs: indexCodecs, fillValue: 0 });
	const indexBytes = 16 * product(per) + (c.crc ? 4 : 0);
	const grid = c.shape.map((s, i) => Math.ceil(s / c.shard[i]));
	for (let s = 0; s < product(grid); s++) {
		const sidx = unravel(s, grid);
		const chunks = [];
		const ents = new BigUint64Array(2 * product(per));
		let off = c.start ? indexBytes : 0;
		for (let j = 0; j < product(per); j++) {
			const cidx = unravel(j, per).map((v, i) => sidx[i] * per[i] + v);
			const file = path.join(scratch.store.root, c.name, "c", ...cidx.map(String));
			if (!fs.existsSync(file)) {
				ents[2 * j] = ents[2 * j + 1] = 0xffffffffffffffffn;
				continue;
			}
			const b = fs.readFileSync(file);
			ents[2 * j] = BigInt(off);
			ents[2 * j + 1] = BigInt(b.length);
			chunks.push(b);
			off += b.length;
		}
		if (chunks.length === 0) continue; // a missing shard reads as the fill value
		await zarr.set(idx, null, { data: ents, shape: [...per, 2], stride: cStrides([...per, 2]) });
		const index = fs.readFileSync(path.join(scratch.store.root, c.name + "-index", "c", ...per.map(() => "0"), "0"));
		if (index.length !== indexBytes) throw new Error(`${c.name}: index of ${index.length} bytes, want ${indexBytes}`);
		const parts = c.start ? [index, ...chunks] : [...chunks, index];
		const file = path.join(root.store.root, c.name, "c", ...sidx.map(String));
		fs.mkdirSync(path.dirname(file), { recursive: true });
		fs.writeFileSync(file, Buffer.concat(parts));
	}
	const meta = JSON.parse(fs.readFileSync(path.join(scratch.store.root, c.name, "zarr.json")));
	meta.chunk_grid.configuration.chunk_shape = c.shard;
	meta.codecs = [{ name: "sharding_indexed", configuration: { chunk_shape: c.chunks, codecs: meta.codecs,
		index_codecs: indexCodecs, index_location: c.start ? "start" : "end" } }];
	fs.writeFileSync(path.join(root.store.root, c.name, "zarr.json"), JSON.stringify(meta));
	return expected(c.dtype, c.shape, data, c.rows, c.fill);
}

function unravel(k, shape) {
	const out = new Array(shape.length);
	for (let i = shape.length - 1; i >= 0; i--) {
		out[i] = k % shape[i];
		k = Math.floor(k / shape[i]);
	}
	return out;
}

// cases lists every array: each codec, both byte orders, transpose,
// partly written arrays (missing chunks), and sharding.
function cases() {
	const out = [];
	const dtypes = ["uint8", "int16", "uint16", "float32", "float64", "int64", "uint32", "int32"];
	let seed = 0;
	for (const [cname, cc] of Object.entries(CODECS)) {
		for (const endian of ["little", "big"]) {
			const dtype = dtypes[seed % dtypes.length];
			out.push({ name: `${cname}-${endian}`, dtype, endian, shape: [9, 7, 3], chunks: [4, 3, 3], rows: 9, fill: 0,
				codecs: [bytes(endian), ...cc], seed: seed++, sep: seed % 2 ? "/" : "." });
		}
	}
	out.push({ name: "transpose", dtype: "uint16", endian: "big", shape: [6, 5, 4], chunks: [4, 5, 2], rows: 6, fill: 0,
		codecs: [{ name: "transpose", configuration: { order: [2, 0, 1] } }, bytes("big"), ...CODECS.zstd], seed: seed++ });
	out.push({ name: "v2-keys", dtype: "float32", endian: "little", shape: [10, 4], chunks: [3, 4], rows: 10, fill: 0,
		codecs: [bytes("little"), ...CODECS.gzip], seed: seed++, v2keys: true });
	out.push({ name: "fill", dtype: "int32", endian: "little", shape: [10, 6], chunks: [2, 3], rows: 4, fill: 7,
		codecs: [bytes("little"), ...CODECS["blosc-lz4"]], seed: seed++ });
	for (const start of [false, true]) {
		const where = start ? "start" : "end";
		for (const cname of ["blosc-lz4", "zstd", "gzip"]) {
			out.push({ name: `sharded-${cname}-${where}`, dtype: "uint8", endian: "little", shape: [10, 8, 8, 3],
				chunks: [1, 8, 8, 3], shard: [4, 8, 8, 3], rows: 10, fill: 0, start, crc: true,
				codecs: [bytes("little"), ...CODECS[cname]], seed: seed++ });
		}
		out.push({ name: `sharded-partial-${where}`, dtype: "float64", endian: "big", shape: [11, 6], chunks: [2, 3],
			shard: [4, 6], rows: 5, fill: -1.5, start, crc: true, codecs: [bytes("big"), ...CODECS.zstd], seed: seed++ });
		out.push({ name: `sharded-transpose-${where}`, dtype: "int16", endian: "little", shape: [8, 6], chunks: [4, 3],
			shard: [8, 6], rows: 8, fill: 0, start, crc: false,
			codecs: [{ name: "transpose", configuration: { order: [1, 0] } }, bytes("little"), ...CODECS.gzip], seed: seed++ });
	}
	return out;
}

async function main(out) {
	const root = await zarr.create(zarr.root(new FileSystemStore(path.join(out, "store"))));
	const scratch = zarr.root(new FileSystemStore(path.join(out, "scratch")));
	const manifest = [];
	for (const c of cases()) {
		const want = c.shard ? await sharded(root, scratch, c) : await plain(root, c);
		const wantBytes = new Uint8Array(want.buffer, want.byteOffset, want.byteLength);
		if (!c.start) {
			const got = toCBytes(await zarr.get(await zarr.open(root.resolve(c.name), { kind: "array" })));
			if (Buffer.compare(Buffer.from(got), Buffer.from(wantBytes)) !== 0) throw new Error(`${c.name}: zarrita reads back other values`);
		}
		fs.writeFileSync(path.join(out, c.name + ".bin"), wantBytes);
		manifest.push({ name: c.name, dtype: numpyType(c.dtype, c.endian), shape: c.shape, sharded: !!c.shard, index_at_start: !!c.start });
	}
	fs.rmSync(path.join(out, "scratch"), { recursive: true });
	fs.writeFileSync(path.join(out, "manifest.json"), JSON.stringify(manifest));
	console.log(`wrote ${manifest.length}`);
}

await main(process.argv[2]);
