/*
 * binding.h - the Go side's C glue: a table of entry points resolved with
 * dlsym, and trampolines that call through it. Each trampoline copies the
 * thread-local error message in the same C call, hence on the same OS
 * thread as the failing call.
 */
#ifndef PIPETORCH_BINDING_H
#define PIPETORCH_BINDING_H
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "pipetorch.h"

typedef int (*pt_op_fn)(pt_policy*);

// pt_api holds the library's entry points, resolved with dlsym.
typedef struct pt_api {
	void* handle;
	int (*abi_version)(void);
	const char* (*last_error)(void);
	int (*create)(const char*, pt_policy**);
	int (*config_resolve)(const char*, char*, size_t, size_t*);
	void (*destroy)(pt_policy*);
	int (*info)(pt_policy*, char*, size_t, size_t*);
	int (*param_counts)(pt_policy*, int64_t*, int64_t*);
	int (*begin_step)(pt_policy*, int64_t);
	int (*upload)(pt_policy*, const uint8_t*, size_t, const float*, size_t, const float*, size_t, int32_t);
	pt_op_fn forward;
	pt_op_fn backward;
	pt_op_fn optim_step;
	int (*sync)(pt_policy*, float*, float*);
	int (*poll_timings)(pt_policy*, pt_timing*, int32_t);
	int (*save)(pt_policy*, const char*, const uint8_t*, size_t);
	int (*load)(pt_policy*, const char*, uint8_t**, size_t*);
	int (*save_encoder)(pt_policy*, const char*);
	void (*free)(void*);
	int (*dist_create)(const pt_dist_options*, pt_dist**);
	void (*dist_destroy)(pt_dist*);
	int (*dist_info)(pt_dist*, char*, size_t, size_t*);
	int (*dist_barrier)(pt_dist*);
	int (*join)(pt_policy*, pt_dist*, int64_t);
	int (*allreduce_grads)(pt_policy*, pt_dist*, int32_t, int32_t*);
	int (*checksum)(pt_policy*, uint64_t*);
} pt_api;

static inline void* pt_open(const char* path, char* err, size_t n) {
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		strncpy(err, e ? e : "unknown dlopen error", n - 1);
		err[n - 1] = 0;
	}
	return h;
}

static inline void* pt_sym(void* h, const char* name) { return dlsym(h, name); }

static inline void pt_copy_err(pt_api* a, char* err, size_t n) {
	const char* e = a->last_error();
	strncpy(err, e ? e : "", n - 1);
	err[n - 1] = 0;
}

static inline int pt_call_abi_version(pt_api* a) { return a->abi_version(); }

static inline int pt_call_create(pt_api* a, const char* cfg, pt_policy** out, char* err, size_t n) {
	int rc = a->create(cfg, out);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_config_resolve(pt_api* a, const char* cfg, char* buf, size_t cap, size_t* need, char* err, size_t n) {
	int rc = a->config_resolve(cfg, buf, cap, need);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline void pt_call_destroy(pt_api* a, pt_policy* p) { a->destroy(p); }

static inline int pt_call_info(pt_api* a, pt_policy* p, char* buf, size_t cap, size_t* need, char* err, size_t n) {
	int rc = a->info(p, buf, cap, need);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_param_counts(pt_api* a, pt_policy* p, int64_t* enc, int64_t* pol, char* err, size_t n) {
	int rc = a->param_counts(p, enc, pol);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_begin_step(pt_api* a, pt_policy* p, int64_t step, char* err, size_t n) {
	int rc = a->begin_step(p, step);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_upload(pt_api* a, pt_policy* p, const uint8_t* img, size_t ni,
                          const float* st, size_t ns, const float* act, size_t na,
                          int32_t batch, char* err, size_t n) {
	int rc = a->upload(p, img, ni, st, ns, act, na, batch);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_op(pt_api* a, pt_op_fn fn, pt_policy* p, char* err, size_t n) {
	int rc = fn(p);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_sync(pt_api* a, pt_policy* p, float* loss, float* gn, char* err, size_t n) {
	int rc = a->sync(p, loss, gn);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_poll(pt_api* a, pt_policy* p, pt_timing* dst, int32_t cap, char* err, size_t n) {
	int rc = a->poll_timings(p, dst, cap);
	if (rc < 0) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_save(pt_api* a, pt_policy* p, const char* path, const uint8_t* extra, size_t len, char* err, size_t n) {
	int rc = a->save(p, path, extra, len);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_load(pt_api* a, pt_policy* p, const char* path, uint8_t** extra, size_t* len, char* err, size_t n) {
	int rc = a->load(p, path, extra, len);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_save_encoder(pt_api* a, pt_policy* p, const char* path, char* err, size_t n) {
	int rc = a->save_encoder(p, path);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline void pt_call_free(pt_api* a, void* ptr) { a->free(ptr); }

static inline int pt_call_dist_create(pt_api* a, const pt_dist_options* o, pt_dist** out, char* err, size_t n) {
	int rc = a->dist_create(o, out);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline void pt_call_dist_destroy(pt_api* a, pt_dist* d) { a->dist_destroy(d); }

static inline int pt_call_dist_info(pt_api* a, pt_dist* d, char* buf, size_t cap, size_t* need, char* err, size_t n) {
	int rc = a->dist_info(d, buf, cap, need);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_dist_barrier(pt_api* a, pt_dist* d, char* err, size_t n) {
	int rc = a->dist_barrier(d);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_join(pt_api* a, pt_policy* p, pt_dist* d, int64_t step, char* err, size_t n) {
	int rc = a->join(p, d, step);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_allreduce_grads(pt_api* a, pt_policy* p, pt_dist* d, int32_t vote, int32_t* votes, char* err, size_t n) {
	int rc = a->allreduce_grads(p, d, vote, votes);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

static inline int pt_call_checksum(pt_api* a, pt_policy* p, uint64_t* out, char* err, size_t n) {
	int rc = a->checksum(p, out);
	if (rc) pt_copy_err(a, err, n);
	return rc;
}

#endif
