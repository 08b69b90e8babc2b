// Checks, with zarrita, Zarr v3 arrays written by the Go package.
//
// usage: node read.mjs DIR
//
// DIR holds store/ (written by Go), manifest.json and <name>.bin files
// with each array's expected elements (C order, little-endian). zarrita
// reads every array; as zarrita does not check crc32c checksums, this
// script also checks every shard index's checksum itself, with
// @aws-crypto/crc32c. Prints one line per mismatch and exits 1 if there
// is any; prints "ok N" otherwise.
import * as fs from "node:fs";
import * as path from "node:path";
import { crc32c } from "@aws-crypto/crc32c";
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";
import { numpyType, toCBytes } from "./common.mjs";

// shardChecksums checks the crc32c of the index of every shard of an
// end-indexed array and returns how many it checked.
function shardChecksums(dir, meta) {
	const cfg = meta.codecs[0].configuration;
	const count = cfg.chunk_shape.reduce((n, c, i) => n * (meta.chunk_grid.configuration.chunk_shape[i] / c), 1);
	const n = 16 * count;
	let checked = 0;
	const walk = (d) => {
		for (const e of fs.readdirSync(d, { withFileTypes: true })) {
			const p = path.join(d, e.name);
			if (e.isDirectory()) {
				walk(p);
				continue;
			}
			const b = fs.readFileSync(p);
			const index = b.subarray(b.length - n - 4);
			const stored = new DataView(index.buffer, index.byteOffset).getUint32(n, true);
			if (crc32c(index.subarray(0, n)) !== stored) throw new Error(`${p}: index checksum mismatch`);
			checked++;
		}
	};
	walk(path.join(dir, "c"));
	return checked;
}

async function main(dir) {
	const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json")));
	const root = zarr.root(new FileSystemStore(path.join(dir, "store")));
	let bad = 0;
	for (const m of manifest) {
		const arr = await zarr.open(root.resolve(m.name), { kind: "array" });
		const meta = JSON.parse(fs.readFileSync(path.join(dir, "store", m.name, "zarr.json")));
		const codecs = m.sharded ? meta.codecs[0].configuration.codecs : meta.codecs;
		const endian = codecs.find((c) => c.name === "bytes").configuration?.endian;
		const got = toCBytes(await zarr.get(arr));
		const want = fs.readFileSync(path.join(dir, m.name + ".bin"));
		if (numpyType(arr.dtype, endian) !== m.dtype || JSON.stringify(arr.shape) !== JSON.stringify(m.shape)) {
			console.log(`${m.name}: dtype/shape ${numpyType(arr.dtype, endian)} ${arr.shape}, want ${m.dtype} ${m.shape}`);
			bad++;
		} else if (Buffer.compare(Buffer.from(got), want) !== 0) {
			console.log(`${m.name}: values differ`);
			bad++;
		}
		if (m.sharded && shardChecksums(path.join(dir, "store", m.name), meta) === 0) {
			console.log(`${m.name}: no shard files`);
			bad++;
		}
	}
	if (bad) process.exit(1);
	console.log(`ok ${manifest.length}`);
}

await main(process.argv[2]);
