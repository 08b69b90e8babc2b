/*
 * pipetorch.h - the C ABI of libpipetorch, the libtorch side of pipetrain.
 *
 * One call per training stage, so the caller (the Go loop) owns the stage
 * boundaries and can time or skip any of them:
 *
 *   create -> [begin_step -> upload -> forward -> backward -> optim_step
 *              -> sync -> poll_timings]* -> save/load -> destroy
 *
 * Conventions
 *   - Every function returning int returns 0 on success and -1 on failure
 *     (pt_policy_poll_timings returns a count or -1). On failure the
 *     message is available from pt_last_error() on the same OS thread,
 *     until the next pipetorch call on that thread.
 *   - No C++ exception ever crosses this boundary.
 *   - A policy handle is not thread-safe: the caller serializes calls on
 *     one handle. Different handles may be used from different threads.
 *   - Memory passed in (images, state, action, extra) is only read during
 *     the call; the library keeps its own copies.
 */
#ifndef PIPETORCH_H
#define PIPETORCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PT_API __attribute__((visibility("default")))
#else
#define PT_API
#endif

/* PT_ABI_VERSION changes whenever a signature or a struct below changes. */
#define PT_ABI_VERSION 3

/* Stage indices reported by pt_policy_poll_timings. */
#define PT_STAGE_H2D 0
#define PT_STAGE_FORWARD 1
#define PT_STAGE_BACKWARD 2
#define PT_STAGE_OPTIM 3
#define PT_STAGE_COMM 4

/* pt_timing is one finished GPU stage interval, measured with a pair of
 * CUDA events recorded on the stream that ran the stage. */
typedef struct pt_timing {
  int64_t step;  /* the step given to the last pt_policy_begin_step */
  int32_t stage; /* PT_STAGE_* */
  int32_t reserved;
  int64_t ns; /* GPU time between the two events, nanoseconds */
} pt_timing;

/* pt_policy is an opaque model + optimizer + noise generator. */
typedef struct pt_policy pt_policy;

/* pt_abi_version returns PT_ABI_VERSION of the built library. */
PT_API int pt_abi_version(void);

/* pt_last_error returns the message of the last failed call on this
 * thread, or "" if there was none. The pointer stays valid until the next
 * pipetorch call on this thread. */
PT_API const char* pt_last_error(void);

/* pt_policy_create builds a policy from a flat JSON object (see
 * config.cpp for the keys; unknown keys are an error). */
PT_API int pt_policy_create(const char* config_json, pt_policy** out);

/* pt_config_resolve parses a config like pt_policy_create and writes it
 * back as JSON with the preset's defaults filled in, without building a
 * model (device and precision stay as given). buf/cap/needed work like
 * pt_policy_info. */
PT_API int pt_config_resolve(const char* config_json, char* buf, size_t cap,
                             size_t* needed);

/* pt_policy_destroy frees the policy; NULL is ignored. */
PT_API void pt_policy_destroy(pt_policy* p);

/* pt_policy_info writes a NUL-terminated JSON object describing the policy
 * (device, precision, encoder init, torch version, resolved config) into
 * buf. *needed receives the size including the NUL; if cap is too small
 * the call fails and nothing useful is written. */
PT_API int pt_policy_info(pt_policy* p, char* buf, size_t cap, size_t* needed);

/* pt_policy_param_counts reports parameter counts of the frozen image
 * encoder and of the trainable policy (observation projection + DiT). */
PT_API int pt_policy_param_counts(pt_policy* p, int64_t* encoder,
                                  int64_t* policy);

/* pt_policy_begin_step sets the step number that tags GPU timings of the
 * stages that follow. */
PT_API int pt_policy_begin_step(pt_policy* p, int64_t step);

/* pt_policy_upload copies one batch to the device. Layouts (row-major):
 *   images [batch][n_obs][cams][height][width][3] uint8
 *   state  [batch][n_obs][state_dim] float32
 *   action [batch][horizon][action_dim] float32
 * n_* are element counts and must match the layouts exactly. On CUDA the
 * copy goes through reusable pinned staging buffers on a copy stream and
 * does not wait for the device. */
PT_API int pt_policy_upload(pt_policy* p, const uint8_t* images,
                            size_t n_images, const float* state,
                            size_t n_state, const float* action,
                            size_t n_action, int32_t batch);

/* pt_policy_forward runs encoder + policy + DDPM loss on the last uploaded
 * batch and keeps the loss tensor. */
PT_API int pt_policy_forward(pt_policy* p);

/* pt_policy_backward back-propagates the kept loss. */
PT_API int pt_policy_backward(pt_policy* p);

/* pt_policy_optim_step clips the gradient norm, takes an AdamW step and
 * clears the gradients. */
PT_API int pt_policy_optim_step(pt_policy* p);

/* pt_policy_sync waits for the device and reads back the last loss and the
 * gradient norm before clipping of the last optim step (NaN if there was
 * no optim step since the last forward). Either pointer may be NULL. */
PT_API int pt_policy_sync(pt_policy* p, float* loss, float* grad_norm);

/* pt_policy_poll_timings moves up to cap finished GPU stage timings into
 * dst without blocking and returns how many it wrote. It always returns 0
 * on CPU. */
PT_API int pt_policy_poll_timings(pt_policy* p, pt_timing* dst, int32_t cap);

/* pt_policy_save writes model, optimizer and noise-generator state plus
 * the caller's extra bytes to exactly path (no temp file, no fsync). */
PT_API int pt_policy_save(pt_policy* p, const char* path,
                          const uint8_t* extra, size_t extra_len);

/* pt_policy_load restores a checkpoint written by pt_policy_save for the
 * same architecture. The file is fully validated before anything live is
 * touched: on failure the policy is unchanged. On success *extra receives
 * a malloc'ed copy of the extra bytes (free it with pt_free; NULL when
 * empty) and *extra_len its length. */
PT_API int pt_policy_load(pt_policy* p, const char* path, uint8_t** extra,
                          size_t* extra_len);

/* pt_policy_save_encoder writes the frozen encoder's weights with
 * torch::save, a file that "encoder_weights" accepts. */
PT_API int pt_policy_save_encoder(pt_policy* p, const char* path);

/* pt_dist is one rank's membership of a c10d process group. */
typedef struct pt_dist pt_dist;

/* pt_dist_options configures pt_dist_create. NULL strings and zero
 * numbers take the defaults noted. */
typedef struct pt_dist_options {
  const char* backend;     /* "gloo", "nccl" or "auto" (default: nccl
                              with a device_index, else gloo) */
  const char* master_addr; /* host of rank 0's TCPStore (127.0.0.1) */
  int32_t master_port;     /* its port (required) */
  int32_t rank;            /* this rank, 0..world_size-1 */
  int32_t world_size;      /* number of ranks, >= 1 */
  int32_t device_index;    /* this rank's CUDA device (NCCL); -1: CPU */
  int64_t timeout_ms;      /* rendezvous and collective timeout (300000) */
  int64_t bucket_bytes;    /* gradient bucket size (25 MiB) */
} pt_dist_options;

/* pt_dist_create joins the process group: rank 0 serves a c10d TCPStore
 * at master_addr:master_port, every rank connects to it and the Gloo or
 * NCCL group is built over it. It fails, naming the missing ranks, when
 * not every rank joins within the timeout. */
PT_API int pt_dist_create(const pt_dist_options* opts, pt_dist** out);

/* pt_dist_destroy leaves the group; NULL is ignored. */
PT_API void pt_dist_destroy(pt_dist* d);

/* pt_dist_info writes a JSON object (backend, rank, world_size,
 * timeout_ms, bucket_bytes); buf/cap/needed work like pt_policy_info. */
PT_API int pt_dist_info(pt_dist* d, char* buf, size_t cap, size_t* needed);

/* pt_dist_barrier waits until every rank calls it (or the timeout). */
PT_API int pt_dist_barrier(pt_dist* d);

/* pt_policy_join makes p one replica of the group: every parameter and
 * buffer is overwritten with rank 0's, and ranks other than 0 reseed
 * their noise generator from (seed, rank, step) so replicas draw
 * different noise. Call it after creating (and loading) the policy. */
PT_API int pt_policy_join(pt_policy* p, pt_dist* d, int64_t step);

/* pt_policy_allreduce_grads is the comm stage: it replaces every gradient
 * with its mean over the ranks (bucketed, after backward has finished).
 * vote is this rank's stop vote (0 or 1); *votes receives the sum over
 * all ranks, so every rank can stop at the same step. On failure the
 * error names the ranks that did not reach this step. */
PT_API int pt_policy_allreduce_grads(pt_policy* p, pt_dist* d, int32_t vote,
                                     int32_t* votes);

/* pt_policy_checksum hashes the bytes of every trainable parameter
 * (FNV-1a, 64 bits): replicas in step have equal checksums. */
PT_API int pt_policy_checksum(pt_policy* p, uint64_t* out);

/* pt_free releases memory returned by this library. */
PT_API void pt_free(void* ptr);

#ifdef __cplusplus
}
#endif

#endif /* PIPETORCH_H */
