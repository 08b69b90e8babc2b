// The C side of package hdf5: small wrappers over libhdf5 that keep its
// macros, callbacks and version differences out of Go.
#ifndef PT_HDF5_GLUE_H
#define PT_HDF5_GLUE_H

#include <hdf5.h>
#include <stddef.h>

#define PT_MAX_RANK 32
#define PT_MAX_FILTERS 16
#define PT_MAX_PARAMS 8

typedef struct {
	int id;
	char name[64];
	unsigned params[PT_MAX_PARAMS];
	int nparams;
	int available;
} pt_filter;

typedef struct {
	int rank;
	hsize_t dims[PT_MAX_RANK];
	int chunked;
	hsize_t chunks[PT_MAX_RANK];
	char kind;  // 'u', 'i', 'f' or '?'
	int size;
	int big_endian;
	char class_name[32];
	int nfilters;
	pt_filter filters[PT_MAX_FILTERS];
	hsize_t stored;
} pt_info;

void pt_init(void);
void pt_quiet(void);
void pt_last_error(char *buf, size_t n);
int pt_is_hdf5(const char *path);
hid_t pt_open(const char *path);
int pt_list_datasets(hid_t file, char **out, size_t *n);
hid_t pt_dataset_open(hid_t file, const char *path, pt_info *info);
int pt_read_rows(hid_t dset, hsize_t start, hsize_t n, void *buf);
unsigned pt_lzf_decompress(const unsigned char *in, unsigned in_len, unsigned char *out, unsigned out_len);

#endif
