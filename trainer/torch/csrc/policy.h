// policy.h - one trainable policy: frozen encoder, DiT, DDPM loss, AdamW.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "dist.h"
#include "gpu.h"
#include "model.h"
#include "pipetorch.h"

namespace pipetorch {

// Policy owns the model, optimizer, noise generator and the current batch.
// Each method is one training stage; the caller serializes calls.
class Policy {
 public:
  explicit Policy(const Config& cfg);

  void BeginStep(int64_t step) { step_ = step; }
  void Upload(const uint8_t* images, size_t n_images, const float* state,
              size_t n_state, const float* action, size_t n_action,
              int64_t batch);
  void Forward();
  void Backward();
  void OptimStep();
  void Sync(float* loss, float* grad_norm);
  int PollTimings(pt_timing* dst, int cap);

  void Save(const std::string& path, const std::string& extra);
  std::string Load(const std::string& path);  // returns the extra bytes
  void SaveEncoder(const std::string& path);

  // Join overwrites parameters and buffers with rank 0's and gives ranks
  // other than 0 their own noise stream.
  void Join(Dist& d, int64_t step);
  // AllReduceGrads averages the gradients over the ranks (the comm stage)
  // and returns the sum of the ranks' stop votes.
  int AllReduceGrads(Dist& d, int vote);
  // ParamChecksum hashes the trainable parameters' bytes.
  uint64_t ParamChecksum() const;

  std::string InfoJSON() const;
  int64_t EncoderParams() const { return CountParams(*encoder_); }
  int64_t PolicyParams() const { return CountParams(*net_); }

  // Scope sets the thread-local device state (CUDA device and stream) for
  // one entry point; a no-op on CPU.
  class Scope {
   public:
    explicit Scope(Policy& p);

   private:
#ifdef PIPETORCH_CUDA
    std::optional<c10::cuda::CUDAStreamGuard> guard_;
#endif
  };

 private:
  enum class Phase { kIdle, kForward, kBackward };

  std::unique_ptr<torch::optim::AdamW> MakeOptimizer() const;
  at::Generator MakeGenerator() const;
  void LoadEncoderWeights(const std::string& path);
  void ClipGradients(std::vector<torch::Tensor>& grads);

  Config cfg_;
  torch::Device device_;
  bool bf16_ = false;
  bool random_init_ = true;
  ResNet18 encoder_{nullptr};
  PolicyNet net_{nullptr};
  std::unique_ptr<torch::optim::AdamW> opt_;
  at::Generator gen_;

  // DDPM schedule and image normalization, on the device.
  torch::Tensor sqrt_ac_, sqrt_1m_ac_, pix_scale_, pix_bias_;

  // Current batch on the device.
  torch::Tensor images_, state_, action_;
  int64_t batch_ = 0;

  torch::Tensor loss_;       // with graph, until backward
  torch::Tensor loss_value_; // detached
  torch::Tensor grad_norm_;  // before clipping, of the last optim step
  Phase phase_ = Phase::kIdle;
  int64_t step_ = 0;

#ifdef PIPETORCH_CUDA
  std::unique_ptr<Gpu> gpu_;
#endif
};

}  // namespace pipetorch
