#include "hdf5_glue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// ---- errors ----

typedef struct {
	char *buf;
	size_t n;
} pt_errbuf;

// keep_innermost records each entry of a downward walk, so the innermost
// (most specific) one is what remains.
static herr_t keep_innermost(unsigned n, const H5E_error2_t *e, void *data) {
	pt_errbuf *b = data;
	(void)n;
	if (e->desc && e->desc[0]) {
		snprintf(b->buf, b->n, "%s (in %s)", e->desc, e->func_name ? e->func_name : "?");
	}
	return 0;
}

// captured holds a failed call's message when cleanup calls after it
// would clear the error stack (every libhdf5 API call clears it first).
static __thread char captured[512];

static void capture(void) {
	pt_errbuf b = {captured, sizeof captured};
	captured[0] = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, &b);
}

void pt_last_error(char *buf, size_t n) {
	if (captured[0]) {
		snprintf(buf, n, "%s", captured);
		captured[0] = 0;
		return;
	}
	pt_errbuf b = {buf, n};
	buf[0] = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, &b);
	H5Eclear2(H5E_DEFAULT);
}

// ---- LZF (h5py's filter 32000), decode only ----

// pt_lzf_decompress decodes liblzf's format (as h5py's filter writes it):
// returns the decoded length, or 0 with errno E2BIG (output too small) or
// EINVAL. FuzzLZF checks it against a Go decoder.
unsigned pt_lzf_decompress(const unsigned char *ip, unsigned in_len, unsigned char *out, unsigned out_len) {
	const unsigned char *in_end = ip + in_len;
	unsigned char *op = out, *out_end = out + out_len;
	while (ip < in_end) {
		unsigned ctrl = *ip++;
		if (ctrl < (1 << 5)) {
			ctrl++;
			if ((size_t)(out_end - op) < ctrl) { errno = E2BIG; return 0; }
			if ((size_t)(in_end - ip) < ctrl) { errno = EINVAL; return 0; }
			memcpy(op, ip, ctrl);
			op += ctrl;
			ip += ctrl;
		} else {
			unsigned len = ctrl >> 5;
			size_t back = ((size_t)(ctrl & 0x1f) << 8) + 1;
			if (ip >= in_end) { errno = EINVAL; return 0; }
			if (len == 7) {
				len += *ip++;
				if (ip >= in_end) { errno = EINVAL; return 0; }
			}
			back += *ip++;
			if ((size_t)(out_end - op) < len + 2) { errno = E2BIG; return 0; }
			if ((size_t)(op - out) < back) { errno = EINVAL; return 0; }
			const unsigned char *ref = op - back;
			len += 2;
			while (len--) *op++ = *ref++;
		}
	}
	return (unsigned)(op - out);
}

static size_t lzf_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t *buf_size, void **buf) {
	if (!(flags & H5Z_FLAG_REVERSE)) {
		return 0; // encoding is not needed: this package only reads
	}
	size_t out_size = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
	for (int tries = 0; tries < 32; tries++) {
		unsigned char *out = malloc(out_size);
		if (!out) return 0;
		unsigned got = pt_lzf_decompress(*buf, (unsigned)nbytes, out, (unsigned)out_size);
		if (got > 0) {
			free(*buf);
			*buf = out;
			*buf_size = out_size;
			return got;
		}
		free(out);
		if (errno != E2BIG) {
			H5Epush2(H5E_DEFAULT, __FILE__, "lzf_filter", __LINE__, H5E_ERR_CLS, H5E_PLINE, H5E_READERROR, "corrupt LZF data");
			return 0;
		}
		out_size += *buf_size;
	}
	return 0;
}

static const H5Z_class2_t lzf_class = {
	H5Z_CLASS_T_VERS, (H5Z_filter_t)32000, 1, 1, "lzf", NULL, NULL, (H5Z_func_t)lzf_filter,
};

// pt_quiet stops libhdf5 printing errors from this thread: package hdf5
// reports them itself.
void pt_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

void pt_init(void) {
	H5open();
	if (H5Zfilter_avail(32000) <= 0) {
		H5Zregister(&lzf_class);
	}
}

// ---- files ----

int pt_is_hdf5(const char *path) {
	htri_t r = H5Fis_hdf5(path);
	H5Eclear2(H5E_DEFAULT);
	return r;
}

hid_t pt_open(const char *path) {
	H5Eclear2(H5E_DEFAULT);
	return H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
}

typedef struct {
	char *buf;
	size_t len, cap;
	int failed;
} pt_names;

static herr_t add_dataset(hid_t g, const char *name, const H5L_info_t *info, void *data) {
	pt_names *n = data;
	if (info->type != H5L_TYPE_HARD) {
		return 0; // soft and external links are not followed
	}
	hid_t obj = H5Oopen(g, name, H5P_DEFAULT);
	if (obj < 0) {
		H5Eclear2(H5E_DEFAULT);
		return 0;
	}
	int is_dset = H5Iget_type(obj) == H5I_DATASET;
	H5Oclose(obj);
	if (!is_dset) return 0;
	size_t l = strlen(name) + 1;
	if (n->len + l > n->cap) {
		size_t cap = n->cap * 2 + l + 256;
		char *b = realloc(n->buf, cap);
		if (!b) { n->failed = 1; return -1; }
		n->buf = b;
		n->cap = cap;
	}
	memcpy(n->buf + n->len, name, l);
	n->len += l;
	return 0;
}

int pt_list_datasets(hid_t file, char **out, size_t *len) {
	pt_names n = {0};
	H5Eclear2(H5E_DEFAULT);
	if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, add_dataset, &n) < 0) {
		capture();
		free(n.buf);
		return -1;
	}
	*out = n.buf ? n.buf : calloc(1, 1);
	*len = n.len;
	return 0;
}

// ---- datasets ----

static void type_info(hid_t t, pt_info *info) {
	info->size = (int)H5Tget_size(t);
	info->kind = '?';
	switch (H5Tget_class(t)) {
	case H5T_INTEGER:
		info->kind = H5Tget_sign(t) == H5T_SGN_NONE ? 'u' : 'i';
		break;
	case H5T_FLOAT:
		info->kind = 'f';
		break;
	case H5T_STRING: strcpy(info->class_name, "string"); break;
	case H5T_COMPOUND: strcpy(info->class_name, "compound"); break;
	case H5T_ENUM: strcpy(info->class_name, "enum"); break;
	case H5T_ARRAY: strcpy(info->class_name, "array"); break;
	case H5T_OPAQUE: strcpy(info->class_name, "opaque"); break;
	case H5T_REFERENCE: strcpy(info->class_name, "reference"); break;
	default: strcpy(info->class_name, "other"); break;
	}
	info->big_endian = H5Tget_order(t) == H5T_ORDER_BE;
}

static void filter_info(hid_t dcpl, pt_info *info) {
	int n = H5Pget_nfilters(dcpl);
	for (int i = 0; i < n && i < PT_MAX_FILTERS; i++) {
		pt_filter *f = &info->filters[i];
		unsigned flags, cfg;
		size_t np = PT_MAX_PARAMS;
		H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &np, f->params, sizeof f->name, f->name, &cfg);
		if (id < 0) {
			H5Eclear2(H5E_DEFAULT);
			continue;
		}
		f->id = (int)id;
		f->nparams = np < PT_MAX_PARAMS ? (int)np : PT_MAX_PARAMS;
		f->available = H5Zfilter_avail(id) > 0;
		info->nfilters = i + 1;
	}
	H5Eclear2(H5E_DEFAULT);
}

hid_t pt_dataset_open(hid_t file, const char *path, pt_info *info) {
	memset(info, 0, sizeof *info);
	H5Eclear2(H5E_DEFAULT);
	hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
	if (d < 0) return -1;
	hid_t sp = H5Dget_space(d);
	int rank = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
	if (rank < 0 || rank > PT_MAX_RANK) {
		capture();
		if (sp >= 0) H5Sclose(sp);
		H5Dclose(d);
		return -1;
	}
	info->rank = rank;
	H5Sget_simple_extent_dims(sp, info->dims, NULL);
	H5Sclose(sp);
	hid_t t = H5Dget_type(d);
	if (t >= 0) {
		type_info(t, info);
		H5Tclose(t);
	}
	hid_t dcpl = H5Dget_create_plist(d);
	if (dcpl >= 0) {
		if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
			info->chunked = H5Pget_chunk(dcpl, PT_MAX_RANK, info->chunks) == rank;
		}
		filter_info(dcpl, info);
		H5Pclose(dcpl);
	}
	info->stored = H5Dget_storage_size(d);
	H5Eclear2(H5E_DEFAULT);
	return d;
}

int pt_read_rows(hid_t dset, hsize_t start, hsize_t n, void *buf) {
	H5Eclear2(H5E_DEFAULT);
	int ok = -1;
	hid_t fsp = H5Dget_space(dset), msp = -1, ft = H5Dget_type(dset), mt = -1;
	hsize_t off[PT_MAX_RANK] = {0}, cnt[PT_MAX_RANK];
	int rank = fsp < 0 ? -1 : H5Sget_simple_extent_ndims(fsp);
	if (rank < 1 || ft < 0) goto out;
	H5Sget_simple_extent_dims(fsp, cnt, NULL);
	off[0] = start;
	cnt[0] = n;
	if (H5Sselect_hyperslab(fsp, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0) goto out;
	if ((msp = H5Screate_simple(rank, cnt, NULL)) < 0) goto out;
	if ((mt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) < 0) goto out;
	if (H5Dread(dset, mt, msp, fsp, H5P_DEFAULT, buf) < 0) goto out;
	ok = 0;
out:
	if (ok < 0) capture();
	if (mt >= 0) H5Tclose(mt);
	if (msp >= 0) H5Sclose(msp);
	if (ft >= 0) H5Tclose(ft);
	if (fsp >= 0) H5Sclose(fsp);
	return ok;
}
