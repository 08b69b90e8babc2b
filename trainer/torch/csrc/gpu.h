// gpu.h - CUDA-only pieces: streams, pinned staging buffers and CUDA event
// timings. Compiled only when the build found a CUDA libtorch
// (PIPETORCH_CUDA); nothing here is used on CPU.
#pragma once

#ifdef PIPETORCH_CUDA

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "pipetorch.h"

namespace pipetorch {

// GpuTimer records CUDA event pairs around stages and hands back the ones
// the device has finished, without ever blocking.
class GpuTimer {
 public:
  // Start records the opening event of a stage on stream.
  void Start(int64_t step, int stage, const c10::cuda::CUDAStream& stream) {
    open_ = Pending{step, stage, Take(), nullptr};
    open_->start->record(stream);
  }

  // Stop records the closing event of the open stage on stream.
  void Stop(const c10::cuda::CUDAStream& stream) {
    if (!open_) return;
    open_->end = Take();
    open_->end->record(stream);
    pending_.push_back(std::move(*open_));
    open_.reset();
    while (pending_.size() > kMaxPending) {  // nobody polls: drop the oldest
      Release(pending_.front());
      pending_.pop_front();
    }
  }

  // Poll moves finished intervals into dst, oldest first.
  int Poll(pt_timing* dst, int cap) {
    int n = 0;
    for (auto it = pending_.begin(); it != pending_.end() && n < cap;) {
      if (!it->end->query()) {
        ++it;
        continue;
      }
      float ms = it->start->elapsed_time(*it->end);
      dst[n++] = pt_timing{it->step, it->stage, 0,
                           static_cast<int64_t>(static_cast<double>(ms) * 1e6)};
      Release(*it);
      it = pending_.erase(it);
    }
    return n;
  }

 private:
  using Event = std::unique_ptr<at::cuda::CUDAEvent>;
  struct Pending {
    int64_t step;
    int stage;
    Event start, end;
  };
  static constexpr size_t kMaxPending = 4096;

  Event Take() {
    if (free_.empty()) return std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);
    Event e = std::move(free_.back());
    free_.pop_back();
    return e;
  }
  void Release(Pending& p) {
    free_.push_back(std::move(p.start));
    if (p.end) free_.push_back(std::move(p.end));
  }

  std::deque<Pending> pending_;
  std::vector<Event> free_;
  std::optional<Pending> open_;
};

// Staging double-buffers batches: pinned host buffers filled by memcpy, and
// device buffers filled by a non-blocking copy on the copy stream. Events
// order the copy after the previous reader and the reader after the copy.
class Staging {
 public:
  // Tensors are the device-side buffers of one slot.
  struct Tensors {
    torch::Tensor images, state, action;
  };

  // Upload stages one batch; shapes are the full tensor shapes. The
  // returned device tensors are valid to read on the compute stream after
  // WaitCopied.
  Tensors Upload(const uint8_t* images, const float* state, const float* action,
                 const std::vector<int64_t>& img_shape,
                 const std::vector<int64_t>& state_shape,
                 const std::vector<int64_t>& action_shape,
                 const c10::cuda::CUDAStream& copy, GpuTimer& timer,
                 int64_t step) {
    Slot& s = slots_[next_];
    s.copied.synchronize();  // the pinned buffers are free again
    if (!s.dev.images.defined() || !s.dev.images.sizes().equals(img_shape) ||
        !s.dev.state.sizes().equals(state_shape) ||
        !s.dev.action.sizes().equals(action_shape)) {
      s.consumed.synchronize();
      Allocate(s, img_shape, state_shape, action_shape);
    }
    std::memcpy(s.pin.images.data_ptr(), images, s.pin.images.nbytes());
    std::memcpy(s.pin.state.data_ptr(), state, s.pin.state.nbytes());
    std::memcpy(s.pin.action.data_ptr(), action, s.pin.action.nbytes());
    {
      c10::cuda::CUDAStreamGuard guard(copy);
      s.consumed.block(copy);  // the previous forward finished reading
      timer.Start(step, PT_STAGE_H2D, copy);
      s.dev.images.copy_(s.pin.images, /*non_blocking=*/true);
      s.dev.state.copy_(s.pin.state, /*non_blocking=*/true);
      s.dev.action.copy_(s.pin.action, /*non_blocking=*/true);
      timer.Stop(copy);
      s.copied.record(copy);
    }
    current_ = next_;
    next_ ^= 1;
    return s.dev;
  }

  // WaitCopied makes stream wait for the current slot's copy.
  void WaitCopied(const c10::cuda::CUDAStream& stream) {
    if (current_ >= 0) slots_[current_].copied.block(stream);
  }

  // MarkConsumed records that stream has queued its last read of the
  // current slot.
  void MarkConsumed(const c10::cuda::CUDAStream& stream) {
    if (current_ >= 0) slots_[current_].consumed.record(stream);
  }

 private:
  struct Slot {
    Tensors pin, dev;
    at::cuda::CUDAEvent copied, consumed;  // timing disabled: sync only
  };

  static void Allocate(Slot& s, const std::vector<int64_t>& img,
                       const std::vector<int64_t>& st,
                       const std::vector<int64_t>& act) {
    auto dev = torch::TensorOptions().device(torch::kCUDA, c10::cuda::current_device());
    auto pin = torch::TensorOptions().pinned_memory(true);
    s.pin.images = torch::empty(img, pin.dtype(torch::kUInt8));
    s.pin.state = torch::empty(st, pin.dtype(torch::kFloat32));
    s.pin.action = torch::empty(act, pin.dtype(torch::kFloat32));
    s.dev.images = torch::empty(img, dev.dtype(torch::kUInt8));
    s.dev.state = torch::empty(st, dev.dtype(torch::kFloat32));
    s.dev.action = torch::empty(act, dev.dtype(torch::kFloat32));
  }

  Slot slots_[2];
  int next_ = 0;
  int current_ = -1;
};

// Gpu bundles the streams, staging and timer of one policy.
struct Gpu {
  explicit Gpu(c10::DeviceIndex index)
      : compute(c10::cuda::getStreamFromPool(false, index)),
        copy(c10::cuda::getStreamFromPool(false, index)) {}

  c10::cuda::CUDAStream compute, copy;
  Staging staging;
  GpuTimer timer;
};

// MakeCudaGenerator returns a dedicated CUDA generator for device index.
inline at::Generator MakeCudaGenerator(c10::DeviceIndex index, uint64_t seed) {
  at::Generator g = at::cuda::detail::createCUDAGenerator(index);
  g.set_current_seed(seed);
  return g;
}

}  // namespace pipetorch

#endif  // PIPETORCH_CUDA
