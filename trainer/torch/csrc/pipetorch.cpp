// pipetorch.cpp - the C entry points: argument checks, thread-local state,
// and the exception barrier.
#include "pipetorch.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "config.h"
#include "policy.h"

struct pt_policy {
  std::unique_ptr<pipetorch::Policy> impl;
};

struct pt_dist {
  std::unique_ptr<pipetorch::Dist> impl;
};

namespace {

thread_local std::string g_error;

// Guard runs f and turns any exception into -1 plus a thread-local message.
template <class F>
int Guard(const char* op, F&& f) {
  g_error.clear();
  try {
    f();
    return 0;
  } catch (const c10::Error& e) {
    g_error = std::string(op) + ": " + e.what_without_backtrace();
  } catch (const std::exception& e) {
    g_error = std::string(op) + ": " + e.what();
  } catch (...) {
    g_error = std::string(op) + ": unknown C++ exception";
  }
  return -1;
}

pipetorch::Policy& Impl(pt_policy* p) {
  if (!p || !p->impl) throw std::invalid_argument("NULL policy handle");
  return *p->impl;
}

pipetorch::Dist& DistImpl(pt_dist* d) {
  if (!d || !d->impl) throw std::invalid_argument("NULL process group handle");
  return *d->impl;
}

// WithPolicy runs f(policy) with the policy's device and stream selected on
// this thread.
template <class F>
int WithPolicy(const char* op, pt_policy* p, F&& f) {
  return Guard(op, [&] {
    auto& impl = Impl(p);
    pipetorch::Policy::Scope scope(impl);
    f(impl);
  });
}

// CopyOut writes s NUL-terminated into buf, or fails if cap is too small.
void CopyOut(const std::string& s, char* buf, size_t cap, size_t* needed) {
  if (needed) *needed = s.size() + 1;
  if (!buf || cap < s.size() + 1)
    throw std::length_error("buffer of " + std::to_string(cap) + " bytes, need " +
                            std::to_string(s.size() + 1));
  std::memcpy(buf, s.c_str(), s.size() + 1);
}

}  // namespace

extern "C" {

int pt_abi_version(void) { return PT_ABI_VERSION; }

const char* pt_last_error(void) { return g_error.c_str(); }

int pt_policy_create(const char* config_json, pt_policy** out) {
  return Guard("create", [&] {
    if (!config_json || !out) throw std::invalid_argument("NULL argument");
    *out = nullptr;
    auto cfg = pipetorch::ParseConfig(config_json);
    auto h = std::make_unique<pt_policy>();
    h->impl = std::make_unique<pipetorch::Policy>(cfg);
    *out = h.release();
  });
}

void pt_policy_destroy(pt_policy* p) {
  Guard("destroy", [&] {
    if (!p) return;
    if (p->impl) {
      pipetorch::Policy::Scope scope(*p->impl);
      p->impl.reset();
    }
    delete p;
  });
}

int pt_policy_info(pt_policy* p, char* buf, size_t cap, size_t* needed) {
  return Guard("info", [&] { CopyOut(Impl(p).InfoJSON(), buf, cap, needed); });
}

int pt_config_resolve(const char* config_json, char* buf, size_t cap, size_t* needed) {
  return Guard("config", [&] {
    if (!config_json) throw std::invalid_argument("NULL config");
    CopyOut(pipetorch::ConfigJSON(pipetorch::ParseConfig(config_json)), buf, cap, needed);
  });
}

int pt_policy_param_counts(pt_policy* p, int64_t* encoder, int64_t* policy) {
  return Guard("param_counts", [&] {
    auto& impl = Impl(p);
    if (encoder) *encoder = impl.EncoderParams();
    if (policy) *policy = impl.PolicyParams();
  });
}

int pt_policy_begin_step(pt_policy* p, int64_t step) {
  return Guard("begin_step", [&] { Impl(p).BeginStep(step); });
}

int pt_policy_upload(pt_policy* p, const uint8_t* images, size_t n_images,
                     const float* state, size_t n_state, const float* action,
                     size_t n_action, int32_t batch) {
  return WithPolicy("upload", p, [&](pipetorch::Policy& impl) {
    impl.Upload(images, n_images, state, n_state, action, n_action, batch);
  });
}

int pt_policy_forward(pt_policy* p) {
  return WithPolicy("forward", p, [](pipetorch::Policy& impl) { impl.Forward(); });
}

int pt_policy_backward(pt_policy* p) {
  return WithPolicy("backward", p, [](pipetorch::Policy& impl) { impl.Backward(); });
}

int pt_policy_optim_step(pt_policy* p) {
  return WithPolicy("optim_step", p, [](pipetorch::Policy& impl) { impl.OptimStep(); });
}

int pt_policy_sync(pt_policy* p, float* loss, float* grad_norm) {
  return WithPolicy("sync", p,
                    [&](pipetorch::Policy& impl) { impl.Sync(loss, grad_norm); });
}

int pt_policy_poll_timings(pt_policy* p, pt_timing* dst, int32_t cap) {
  int n = 0;
  int rc = WithPolicy("poll_timings", p,
                      [&](pipetorch::Policy& impl) { n = impl.PollTimings(dst, cap); });
  return rc == 0 ? n : -1;
}

int pt_policy_save(pt_policy* p, const char* path, const uint8_t* extra,
                   size_t extra_len) {
  return WithPolicy("save", p, [&](pipetorch::Policy& impl) {
    if (!path) throw std::invalid_argument("NULL path");
    if (!extra && extra_len) throw std::invalid_argument("NULL extra with non-zero length");
    impl.Save(path, std::string(reinterpret_cast<const char*>(extra), extra_len));
  });
}

int pt_policy_load(pt_policy* p, const char* path, uint8_t** extra,
                   size_t* extra_len) {
  return WithPolicy("load", p, [&](pipetorch::Policy& impl) {
    if (!path || !extra || !extra_len) throw std::invalid_argument("NULL argument");
    *extra = nullptr;
    *extra_len = 0;
    std::string bytes = impl.Load(path);
    if (bytes.empty()) return;
    auto* mem = static_cast<uint8_t*>(std::malloc(bytes.size()));
    if (!mem) throw std::bad_alloc();
    std::memcpy(mem, bytes.data(), bytes.size());
    *extra = mem;
    *extra_len = bytes.size();
  });
}

int pt_policy_save_encoder(pt_policy* p, const char* path) {
  return WithPolicy("save_encoder", p, [&](pipetorch::Policy& impl) {
    if (!path) throw std::invalid_argument("NULL path");
    impl.SaveEncoder(path);
  });
}

int pt_dist_create(const pt_dist_options* opts, pt_dist** out) {
  return Guard("dist_create", [&] {
    if (!opts || !out) throw std::invalid_argument("NULL argument");
    *out = nullptr;
    auto h = std::make_unique<pt_dist>();
    h->impl = std::make_unique<pipetorch::Dist>(pipetorch::DistOptionsFrom(*opts));
    *out = h.release();
  });
}

void pt_dist_destroy(pt_dist* d) {
  Guard("dist_destroy", [&] { delete d; });
}

int pt_dist_info(pt_dist* d, char* buf, size_t cap, size_t* needed) {
  return Guard("dist_info", [&] { CopyOut(DistImpl(d).InfoJSON(), buf, cap, needed); });
}

int pt_dist_barrier(pt_dist* d) {
  return Guard("barrier", [&] { DistImpl(d).Barrier("pt_dist_barrier"); });
}

int pt_policy_join(pt_policy* p, pt_dist* d, int64_t step) {
  return WithPolicy("join", p, [&](pipetorch::Policy& impl) { impl.Join(DistImpl(d), step); });
}

int pt_policy_allreduce_grads(pt_policy* p, pt_dist* d, int32_t vote, int32_t* votes) {
  return WithPolicy("c10d", p, [&](pipetorch::Policy& impl) {
    int v = impl.AllReduceGrads(DistImpl(d), vote != 0);
    if (votes) *votes = v;
  });
}

int pt_policy_checksum(pt_policy* p, uint64_t* out) {
  return Guard("checksum", [&] {
    if (!out) throw std::invalid_argument("NULL argument");
    *out = Impl(p).ParamChecksum();
  });
}

void pt_free(void* ptr) { std::free(ptr); }

}  // extern "C"
