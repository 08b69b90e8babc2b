// dist.h - data-parallel ranks through libtorch's c10d: TCPStore rendezvous,
// a Gloo (CPU) or NCCL (CUDA) process group, and bucketed gradient
// averaging.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipetorch.h"

namespace pipetorch {

// DistOptions is pt_dist_options with the defaults filled in.
struct DistOptions {
  std::string backend = "auto";  // "gloo", "nccl" or "auto"
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int device_index = -1;  // CUDA device of this rank (NCCL), -1: CPU
  std::chrono::milliseconds timeout{300000};
  int64_t bucket_bytes = 25 << 20;
};

// DistOptionsFrom validates the C options and fills the defaults; it throws
// std::invalid_argument naming the bad field.
DistOptions DistOptionsFrom(const pt_dist_options& o);

// Dist is one rank's membership of a process group. Every collective here
// is blocking and honours the group timeout; on failure the error names the
// ranks that did not reach the same point (read from the store's progress
// keys), or the store's host when even the store is gone.
class Dist {
 public:
  explicit Dist(const DistOptions& opts);
  ~Dist();
  Dist(const Dist&) = delete;
  Dist& operator=(const Dist&) = delete;

  int Rank() const { return opts_.rank; }
  int World() const { return opts_.world_size; }
  const std::string& Backend() const { return backend_; }
  std::string InfoJSON() const;

  // Broadcast overwrites tensors on every rank with rank 0's values.
  void Broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what);

  // AverageGrads replaces each gradient with its mean over the ranks, in
  // buckets of about bucket_bytes (all buckets in flight at once). vote is
  // this rank's stop vote; the sum of all votes is returned.
  int AverageGrads(const std::vector<torch::Tensor>& grads, int64_t step, int vote);

  // Barrier waits for every rank to reach the same point.
  void Barrier(const std::string& what);

 private:
  struct Impl;

  void MarkProgress(int64_t step);
  [[noreturn]] void Fail(const std::string& what, int64_t step, const std::string& cause);
  std::string Laggards(int64_t step);

  DistOptions opts_;
  std::string backend_;
  std::unique_ptr<Impl> impl_;
  int64_t seq_ = 0;  // collectives issued (barrier and broadcast tag)
};

}  // namespace pipetorch
