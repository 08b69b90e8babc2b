// Shared by write.mjs and read.mjs: the dtypes the interop tests use and
// conversions between zarrita's chunks and C-ordered little-endian bytes.

// DTYPES maps a Zarr v3 data_type to its typed array and numpy kind.
export const DTYPES = {
	uint8: { ctor: Uint8Array, np: "u1" },
	int16: { ctor: Int16Array, np: "i2" },
	uint16: { ctor: Uint16Array, np: "u2" },
	int32: { ctor: Int32Array, np: "i4" },
	uint32: { ctor: Uint32Array, np: "u4" },
	int64: { ctor: BigInt64Array, np: "i8" },
	float32: { ctor: Float32Array, np: "f4" },
	float64: { ctor: Float64Array, np: "f8" },
};

// numpyType is the numpy type string of a data type stored in an endian.
export function numpyType(dtype, endian) {
	const t = DTYPES[dtype];
	if (t.ctor.BYTES_PER_ELEMENT === 1) return "|" + t.np;
	return (endian === "big" ? ">" : "<") + t.np;
}

export function product(shape) {
	return shape.reduce((a, b) => a * b, 1);
}

export function cStrides(shape) {
	const s = new Array(shape.length);
	let n = 1;
	for (let i = shape.length - 1; i >= 0; i--) {
		s[i] = n;
		n *= shape[i];
	}
	return s;
}

// toCBytes returns a zarrita chunk's elements in C order as
// little-endian bytes, whatever the chunk's strides (a transposed
// array's chunks come back in its stored order).
export function toCBytes(chunk) {
	const n = product(chunk.shape);
	const out = new chunk.data.constructor(n);
	const idx = new Array(chunk.shape.length).fill(0);
	for (let k = 0; k < n; k++) {
		let off = 0;
		for (let d = 0; d < idx.length; d++) off += idx[d] * chunk.stride[d];
		out[k] = chunk.data[off];
		for (let d = idx.length - 1; d >= 0; d--) {
			if (++idx[d] < chunk.shape[d]) break;
			idx[d] = 0;
		}
	}
	return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}
