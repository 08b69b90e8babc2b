// dist.cpp - c10d process groups for data-parallel ranks.
#include "dist.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#ifdef PIPETORCH_C10D
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#endif
#ifdef PIPETORCH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef PIPETORCH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace pipetorch {
namespace {

std::string Str(const char* s, const char* def) { return s && *s ? s : def; }

std::string Describe(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

// ProgressKey is the store key where a rank notes the last collective it
// entered.
std::string ProgressKey(int rank) { return "pipetrain/at/" + std::to_string(rank); }
std::string JoinKey(int rank) { return "pipetrain/joined/" + std::to_string(rank); }

std::string Seconds(std::chrono::milliseconds ms) {
  std::ostringstream o;
  o << ms.count() / 1000.0 << "s";
  return o.str();
}

}  // namespace

DistOptions DistOptionsFrom(const pt_dist_options& o) {
  DistOptions d;
  d.backend = Str(o.backend, "auto");
  if (d.backend != "auto" && d.backend != "gloo" && d.backend != "nccl")
    throw std::invalid_argument("backend \"" + d.backend + "\": want auto, gloo or nccl");
  d.master_addr = Str(o.master_addr, "127.0.0.1");
  if (o.world_size < 1) throw std::invalid_argument("world_size " + std::to_string(o.world_size) + ": want >= 1");
  if (o.rank < 0 || o.rank >= o.world_size)
    throw std::invalid_argument("rank " + std::to_string(o.rank) + ": want 0.." +
                                std::to_string(o.world_size - 1));
  if (o.master_port < 1 || o.master_port > 65535)
    throw std::invalid_argument("master_port " + std::to_string(o.master_port) + ": want 1..65535");
  d.master_port = o.master_port;
  d.rank = o.rank;
  d.world_size = o.world_size;
  d.device_index = o.device_index;
  if (o.timeout_ms > 0) d.timeout = std::chrono::milliseconds(o.timeout_ms);
  if (o.bucket_bytes > 0) d.bucket_bytes = o.bucket_bytes;
  if (d.backend == "auto") d.backend = d.device_index >= 0 ? "nccl" : "gloo";
  return d;
}

#ifdef PIPETORCH_C10D

struct Dist::Impl {
  c10::intrusive_ptr<c10d::Store> store;
#ifdef PIPETORCH_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#ifdef PIPETORCH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif

  // Run calls f with whichever process group this rank built.
  template <class F>
  c10::intrusive_ptr<c10d::Work> Run(F&& f) {
#ifdef PIPETORCH_GLOO
    if (gloo) return f(*gloo);
#endif
#ifdef PIPETORCH_NCCL
    if (nccl) return f(*nccl);
#endif
    throw std::logic_error("no process group");
  }
};

namespace {

#ifdef PIPETORCH_GLOO
std::shared_ptr<::gloo::transport::Device> GlooDevice(const std::string& master) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (master == "localhost" || master.rfind("127.", 0) == 0)
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

// OpenStore serves (rank 0) or reaches the rendezvous store. A client's
// connect can fail early with EINTR: the Go runtime that hosts the shim
// signals its threads (preemption, profiling), and poll() is never
// restarted. Such a try is repeated until the timeout is spent.
c10::intrusive_ptr<c10d::TCPStore> OpenStore(const std::string& addr, c10d::TCPStoreOptions so) {
  const auto deadline = std::chrono::steady_clock::now() + so.timeout;
  for (;;) {
    try {
      return c10::make_intrusive<c10d::TCPStore>(addr, so);
    } catch (const std::exception& e) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (so.isServer || left.count() <= 100 || std::string(e.what()).find("Interrupted system call") == std::string::npos) throw;
      so.timeout = left;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace

Dist::Dist(const DistOptions& opts) : opts_(opts), backend_(opts.backend), impl_(std::make_unique<Impl>()) {
  const std::string where = opts_.master_addr + ":" + std::to_string(opts_.master_port);
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(opts_.master_port);
  so.isServer = opts_.rank == 0;
  so.numWorkers = opts_.world_size;
  so.waitWorkers = false;  // joining is checked below, naming who is missing
  so.timeout = opts_.timeout;
  try {
    impl_->store = OpenStore(opts_.master_addr, so);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        (opts_.rank == 0 ? "rendezvous: rank 0 could not serve the store on " + where
                         : "rendezvous: rank " + std::to_string(opts_.rank) +
                               " could not reach rank 0's store at " + where + " within " +
                               Seconds(opts_.timeout)) +
        ": " + Describe(e));
  }
  impl_->store->set(JoinKey(opts_.rank), std::vector<uint8_t>{'1'});
  std::vector<std::string> keys;
  for (int r = 0; r < opts_.world_size; ++r) keys.push_back(JoinKey(r));
  try {
    impl_->store->wait(keys, opts_.timeout);
  } catch (const std::exception& e) {
    std::string missing;
    for (int r = 0; r < opts_.world_size; ++r) {
      bool joined = false;
      try {
        joined = impl_->store->check({JoinKey(r)});
      } catch (const std::exception&) {
      }
      if (!joined) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    throw std::runtime_error("rendezvous at " + where + ": rank(s) " +
                             (missing.empty() ? "?" : missing) + " did not join within " +
                             Seconds(opts_.timeout) + " (" + Describe(e) + ")");
  }
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("pg", impl_->store);
  if (backend_ == "gloo") {
#ifdef PIPETORCH_GLOO
    auto o = c10d::ProcessGroupGloo::Options::create(opts_.timeout);
    o->devices.push_back(GlooDevice(opts_.master_addr));
    o->threads = 2;
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, opts_.rank, opts_.world_size, o);
#else
    throw std::runtime_error("backend gloo: this libpipetorch was built without Gloo headers (apt-get install libgloo-dev, then rebuild the shim)");
#endif
  } else {
#ifdef PIPETORCH_NCCL
    if (opts_.device_index < 0) throw std::invalid_argument("backend nccl needs a CUDA device");
    auto o = c10d::ProcessGroupNCCL::Options::create();
    o->timeout = opts_.timeout;
    impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, opts_.rank, opts_.world_size, o);
#else
    throw std::runtime_error("backend nccl: this libpipetorch was built without NCCL (a CUDA libtorch with c10d NCCL is needed)");
#endif
  }
}

Dist::~Dist() = default;

void Dist::MarkProgress(int64_t step) {
  std::string v = std::to_string(++seq_) + " " + std::to_string(step);
  impl_->store->set(ProgressKey(opts_.rank), std::vector<uint8_t>(v.begin(), v.end()));
}

// Laggards names the ranks whose last collective is behind this rank's,
// reading the store with a short timeout.
std::string Dist::Laggards(int64_t step) {
  auto& store = *impl_->store;
  try {
    store.setTimeout(std::min(opts_.timeout, std::chrono::milliseconds(5000)));
    std::string behind, dead;
    for (int r = 0; r < opts_.world_size; ++r) {
      if (r == opts_.rank) continue;
      if (!store.check({ProgressKey(r)})) {
        behind += (behind.empty() ? "rank " : ", rank ") + std::to_string(r) + " (no collective yet)";
        continue;
      }
      auto raw = store.get(ProgressKey(r));
      std::istringstream in(std::string(raw.begin(), raw.end()));
      int64_t seq = 0, at = 0;
      in >> seq >> at;
      if (seq < seq_)
        behind += (behind.empty() ? "rank " : ", rank ") + std::to_string(r) + " (last at step " +
                  std::to_string(at) + ")";
    }
    if (!behind.empty()) return behind + " did not reach step " + std::to_string(step);
    return "every rank reached step " + std::to_string(step) +
           ", so a rank failed or hung inside the collective (killed, stopped, or its link broke)";
  } catch (const std::exception&) {
    return "rank 0, which serves the store at " + opts_.master_addr + ":" +
           std::to_string(opts_.master_port) + ", does not answer (dead or hung)";
  }
}

void Dist::Fail(const std::string& what, int64_t step, const std::string& cause) {
  throw std::runtime_error(what + " on rank " + std::to_string(opts_.rank) + " failed: " +
                           Laggards(step) + " [" + backend_ + ": " + cause + "]");
}

void Dist::Broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  MarkProgress(-1);
  try {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (const auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      c10d::BroadcastOptions bo;
      bo.rootRank = 0;
      works.push_back(impl_->Run([&](auto& pg) { return pg.broadcast(one, bo); }));
    }
    for (auto& w : works) w->wait();
  } catch (const std::exception& e) {
    Fail("broadcast of " + what, -1, Describe(e));
  }
}

void Dist::Barrier(const std::string& what) {
  MarkProgress(-1);
  try {
    impl_->Run([&](auto& pg) { return pg.barrier(); })->wait();
  } catch (const std::exception& e) {
    Fail("barrier (" + what + ")", -1, Describe(e));
  }
}

int Dist::AverageGrads(const std::vector<torch::Tensor>& grads, int64_t step, int vote) {
  MarkProgress(step);
  torch::NoGradGuard no_grad;
  // Buckets in reverse parameter order (the order backward produces them),
  // split by dtype and device and at bucket_bytes.
  std::vector<std::vector<torch::Tensor>> buckets;
  int64_t bytes = 0;
  for (auto it = grads.rbegin(); it != grads.rend(); ++it) {
    const auto& g = *it;
    bool fresh = buckets.empty() || bytes >= opts_.bucket_bytes ||
                 buckets.back().front().scalar_type() != g.scalar_type() ||
                 buckets.back().front().device() != g.device();
    if (fresh) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(g);
    bytes += g.numel() * static_cast<int64_t>(g.element_size());
  }
  if (buckets.empty()) throw std::logic_error("all-reduce: no gradients");
  std::vector<torch::Tensor> flats;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  try {
    for (size_t b = 0; b < buckets.size(); ++b) {
      std::vector<torch::Tensor> parts;
      for (auto& g : buckets[b]) parts.push_back(g.reshape({-1}));
      if (b == 0) parts.push_back(torch::full({1}, static_cast<double>(vote), parts[0].options()));
      flats.push_back(torch::cat(parts));
      std::vector<at::Tensor> one{flats.back()};
      works.push_back(impl_->Run([&](auto& pg) { return pg.allreduce(one); }));
    }
    for (auto& w : works) w->wait();
  } catch (const std::exception& e) {
    Fail("gradient all-reduce of step " + std::to_string(step), step, Describe(e));
  }
  int votes = static_cast<int>(std::lround(flats[0][-1].item<double>()));
  for (size_t b = 0; b < buckets.size(); ++b) {
    flats[b].div_(opts_.world_size);
    int64_t off = 0;
    for (auto& g : buckets[b]) {
      g.copy_(flats[b].narrow(0, off, g.numel()).view_as(g));
      off += g.numel();
    }
  }
  return votes;
}

std::string Dist::InfoJSON() const {
  std::ostringstream o;
  o << "{\"backend\":\"" << backend_ << "\",\"rank\":" << opts_.rank
    << ",\"world_size\":" << opts_.world_size << ",\"timeout_ms\":" << opts_.timeout.count()
    << ",\"bucket_bytes\":" << opts_.bucket_bytes << "}";
  return o.str();
}

#else  // !PIPETORCH_C10D

struct Dist::Impl {};

Dist::Dist(const DistOptions& opts) : opts_(opts) {
  throw std::runtime_error(
      "this libpipetorch was built without c10d (libtorch without distributed support, or "
      "missing Gloo headers: apt-get install libgloo-dev, then rebuild the shim)");
}
Dist::~Dist() = default;
void Dist::MarkProgress(int64_t) {}
std::string Dist::Laggards(int64_t) { return ""; }
void Dist::Fail(const std::string& what, int64_t, const std::string& cause) {
  throw std::runtime_error(what + ": " + cause);
}
void Dist::Broadcast(const std::vector<torch::Tensor>&, const std::string&) {}
void Dist::Barrier(const std::string&) {}
int Dist::AverageGrads(const std::vector<torch::Tensor>&, int64_t, int) { return 0; }
std::string Dist::InfoJSON() const { return "{}"; }

#endif

}  // namespace pipetorch
