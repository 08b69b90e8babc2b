// model.h - the networks: a ResNet18 image encoder and a DiT denoiser.
#pragma once

#include <torch/torch.h>

#include "config.h"

namespace pipetorch {

// BasicBlockImpl is ResNet's two-conv residual block.
struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

// ResNet18Impl is ResNet18 without its classifier: images [N,3,H,W] to
// features [N, 8*width] after global average pooling. Parameter names
// match torchvision's resnet18 state dict (minus fc.*).
struct ResNet18Impl : torch::nn::Module {
  explicit ResNet18Impl(int64_t width);
  torch::Tensor forward(const torch::Tensor& x);
  int64_t out_dim() const { return out_dim_; }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr},
      layer4{nullptr};

 private:
  int64_t out_dim_;
};
TORCH_MODULE(ResNet18);

// DiTBlockImpl is a transformer block with adaLN-Zero conditioning.
struct DiTBlockImpl : torch::nn::Module {
  DiTBlockImpl(int64_t d, int64_t heads, int64_t mlp_ratio);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& c);

  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr},
      ada{nullptr};

 private:
  torch::Tensor Attention(const torch::Tensor& h);
  int64_t heads_;
};
TORCH_MODULE(DiTBlock);

// PolicyNetImpl is everything trainable: the observation projection and the
// DiT that predicts the noise added to an action sequence.
struct PolicyNetImpl : torch::nn::Module {
  PolicyNetImpl(const Config& c, int64_t feature_dim);
  // obs_features [B, n_obs*cams*F] and state [B, n_obs*state_dim] to the
  // observation embedding [B, d].
  torch::Tensor Observe(const torch::Tensor& obs_features,
                        const torch::Tensor& state);
  // noisy [B, horizon, action_dim], t [B] int64, obs [B, d] to the
  // predicted noise [B, horizon, action_dim].
  torch::Tensor forward(const torch::Tensor& noisy, const torch::Tensor& t,
                        const torch::Tensor& obs);

  torch::nn::Linear obs_proj{nullptr}, t_fc1{nullptr}, t_fc2{nullptr},
      in_proj{nullptr}, final_ada{nullptr}, out_proj{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::Tensor pos;

 private:
  void Init();
  torch::Tensor TimestepFeatures(const torch::Tensor& t) const;
  int64_t freq_dim_;
};
TORCH_MODULE(PolicyNet);

// CountParams counts the elements of all parameters of m.
int64_t CountParams(const torch::nn::Module& m);

}  // namespace pipetorch
