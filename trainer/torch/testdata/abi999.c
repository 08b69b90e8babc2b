/* A library with every pipetorch entry point but the wrong ABI version,
 * for the Open test. None of the functions does anything. */
#include "pipetorch.h"

int pt_abi_version(void) { return 999; }
const char* pt_last_error(void) { return ""; }
int pt_policy_create(const char* c, pt_policy** o) { return -1; }
int pt_config_resolve(const char* c, char* b, size_t n, size_t* m) { return -1; }
void pt_policy_destroy(pt_policy* p) {}
int pt_policy_info(pt_policy* p, char* b, size_t c, size_t* n) { return -1; }
int pt_policy_param_counts(pt_policy* p, int64_t* e, int64_t* q) { return -1; }
int pt_policy_begin_step(pt_policy* p, int64_t s) { return -1; }
int pt_policy_upload(pt_policy* p, const uint8_t* i, size_t ni, const float* s,
                     size_t ns, const float* a, size_t na, int32_t b) { return -1; }
int pt_policy_forward(pt_policy* p) { return -1; }
int pt_policy_backward(pt_policy* p) { return -1; }
int pt_policy_optim_step(pt_policy* p) { return -1; }
int pt_policy_sync(pt_policy* p, float* l, float* g) { return -1; }
int pt_policy_poll_timings(pt_policy* p, pt_timing* d, int32_t c) { return -1; }
int pt_policy_save(pt_policy* p, const char* f, const uint8_t* e, size_t n) { return -1; }
int pt_policy_load(pt_policy* p, const char* f, uint8_t** e, size_t* n) { return -1; }
int pt_policy_save_encoder(pt_policy* p, const char* f) { return -1; }
void pt_free(void* x) {}
int pt_dist_create(const pt_dist_options* o, pt_dist** d) { return -1; }
void pt_dist_destroy(pt_dist* d) {}
int pt_dist_info(pt_dist* d, char* b, size_t c, size_t* n) { return -1; }
int pt_dist_barrier(pt_dist* d) { return -1; }
int pt_policy_join(pt_policy* p, pt_dist* d, int64_t s) { return -1; }
int pt_policy_allreduce_grads(pt_policy* p, pt_dist* d, int32_t v, int32_t* n) { return -1; }
int pt_policy_checksum(pt_policy* p, uint64_t* o) { return -1; }
