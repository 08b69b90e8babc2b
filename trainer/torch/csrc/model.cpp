// model.cpp - ResNet18 encoder and DiT denoiser.
#include "model.h"

#include <cmath>

namespace pipetorch {
namespace nn = torch::nn;

namespace {

nn::Conv2d Conv(int64_t in, int64_t out, int64_t k, int64_t stride,
                int64_t pad) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// InitConv matches torchvision: Kaiming normal (fan_out) for convs,
// BatchNorm at weight 1, bias 0.
void InitConvNet(nn::Module& m) {
  for (auto& sub : m.modules(/*include_self=*/false)) {
    if (auto* conv = sub->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut,
                                torch::kReLU);
    } else if (auto* bn = sub->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

nn::Sequential Layer(int64_t in, int64_t out, int64_t stride) {
  return nn::Sequential(BasicBlock(in, out, stride), BasicBlock(out, out, 1));
}

nn::LayerNorm PlainNorm(int64_t d) {
  return nn::LayerNorm(
      nn::LayerNormOptions({d}).elementwise_affine(false).eps(1e-6));
}

// Modulate applies adaLN's shift and scale to normalized tokens.
torch::Tensor Modulate(const torch::Tensor& x, const torch::Tensor& shift,
                       const torch::Tensor& scale) {
  return x * (1 + scale) + shift;
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
  conv1 = register_module("conv1", Conv(in, out, 3, stride, 1));
  bn1 = register_module("bn1", nn::BatchNorm2d(out));
  conv2 = register_module("conv2", Conv(out, out, 3, 1, 1));
  bn2 = register_module("bn2", nn::BatchNorm2d(out));
  if (stride != 1 || in != out) {
    downsample = register_module(
        "downsample", nn::Sequential(Conv(in, out, 1, stride, 0),
                                     nn::BatchNorm2d(out)));
  }
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  auto h = torch::relu(bn1(conv1(x)));
  h = bn2(conv2(h));
  auto skip = downsample ? downsample->forward(x) : x;
  return torch::relu(h + skip);
}

ResNet18Impl::ResNet18Impl(int64_t w) : out_dim_(8 * w) {
  conv1 = register_module("conv1", Conv(3, w, 7, 2, 3));
  bn1 = register_module("bn1", nn::BatchNorm2d(w));
  layer1 = register_module("layer1", Layer(w, w, 1));
  layer2 = register_module("layer2", Layer(w, 2 * w, 2));
  layer3 = register_module("layer3", Layer(2 * w, 4 * w, 2));
  layer4 = register_module("layer4", Layer(4 * w, 8 * w, 2));
  InitConvNet(*this);
}

torch::Tensor ResNet18Impl::forward(const torch::Tensor& x) {
  auto h = torch::relu(bn1(conv1(x)));
  h = torch::max_pool2d(h, 3, 2, 1);
  h = layer4->forward(layer3->forward(layer2->forward(layer1->forward(h))));
  return h.mean({2, 3});
}

DiTBlockImpl::DiTBlockImpl(int64_t d, int64_t heads, int64_t mlp_ratio)
    : heads_(heads) {
  norm1 = register_module("norm1", PlainNorm(d));
  qkv = register_module("qkv", nn::Linear(d, 3 * d));
  proj = register_module("proj", nn::Linear(d, d));
  norm2 = register_module("norm2", PlainNorm(d));
  fc1 = register_module("fc1", nn::Linear(d, mlp_ratio * d));
  fc2 = register_module("fc2", nn::Linear(mlp_ratio * d, d));
  ada = register_module("ada", nn::Linear(d, 6 * d));
}

torch::Tensor DiTBlockImpl::Attention(const torch::Tensor& h) {
  const int64_t b = h.size(0), l = h.size(1), d = h.size(2);
  auto qkv_out = qkv(h).view({b, l, 3, heads_, d / heads_}).permute({2, 0, 3, 1, 4});
  auto q = qkv_out[0], k = qkv_out[1], v = qkv_out[2];
#if TORCH_VERSION_MAJOR >= 2
  auto out = at::scaled_dot_product_attention(q, k, v);
#else
  auto scale = 1.0 / std::sqrt(static_cast<double>(d / heads_));
  auto att = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * scale, -1);
  auto out = torch::matmul(att, v);
#endif
  return proj(out.transpose(1, 2).reshape({b, l, d}));
}

torch::Tensor DiTBlockImpl::forward(const torch::Tensor& x,
                                    const torch::Tensor& c) {
  auto mod = ada(torch::silu(c)).unsqueeze(1).chunk(6, -1);
  auto h = x + mod[2] * Attention(Modulate(norm1(x), mod[0], mod[1]));
  auto m = fc2(torch::gelu(fc1(Modulate(norm2(h), mod[3], mod[4])), "tanh"));
  return h + mod[5] * m;
}

PolicyNetImpl::PolicyNetImpl(const Config& c, int64_t feature_dim)
    : freq_dim_(c.freq_dim) {
  const int64_t d = c.d_model;
  const int64_t obs_in =
      int64_t{c.n_obs} * c.cams * feature_dim + int64_t{c.n_obs} * c.state_dim;
  obs_proj = register_module("obs_proj", nn::Linear(obs_in, d));
  t_fc1 = register_module("t_fc1", nn::Linear(c.freq_dim, d));
  t_fc2 = register_module("t_fc2", nn::Linear(d, d));
  in_proj = register_module("in_proj", nn::Linear(c.action_dim, d));
  pos = register_parameter("pos", torch::zeros({1, c.horizon, d}));
  blocks = register_module("blocks", nn::ModuleList());
  for (int i = 0; i < c.depth; ++i)
    blocks->push_back(DiTBlock(d, c.heads, c.mlp_ratio));
  final_norm = register_module("final_norm", PlainNorm(d));
  final_ada = register_module("final_ada", nn::Linear(d, 2 * d));
  out_proj = register_module("out_proj", nn::Linear(d, c.action_dim));
  Init();
}

// Init follows DiT: Xavier-uniform linears with zero bias, small normal
// timestep MLP and positions, and zero adaLN and output layers so every
// block starts as the identity.
void PolicyNetImpl::Init() {
  torch::NoGradGuard no_grad;
  for (auto& sub : modules(/*include_self=*/false)) {
    if (auto* lin = sub->as<nn::Linear>()) {
      nn::init::xavier_uniform_(lin->weight);
      nn::init::zeros_(lin->bias);
    }
  }
  nn::init::normal_(t_fc1->weight, 0.0, 0.02);
  nn::init::normal_(t_fc2->weight, 0.0, 0.02);
  nn::init::normal_(pos, 0.0, 0.02);
  for (auto& block : *blocks) {
    auto* b = block->as<DiTBlock>();
    nn::init::zeros_(b->ada->weight);
    nn::init::zeros_(b->ada->bias);
  }
  for (auto* lin : {&final_ada, &out_proj}) {
    nn::init::zeros_((*lin)->weight);
    nn::init::zeros_((*lin)->bias);
  }
}

torch::Tensor PolicyNetImpl::TimestepFeatures(const torch::Tensor& t) const {
  const int64_t half = freq_dim_ / 2;
  auto freqs = torch::exp(
      torch::arange(half, t.options().dtype(torch::kFloat32)) *
      (-std::log(10000.0) / static_cast<double>(half)));
  auto args = t.to(torch::kFloat32).unsqueeze(1) * freqs.unsqueeze(0);
  return torch::cat({torch::cos(args), torch::sin(args)}, 1);
}

torch::Tensor PolicyNetImpl::Observe(const torch::Tensor& obs_features,
                                     const torch::Tensor& state) {
  return obs_proj(torch::cat(
      {obs_features.to(torch::kFloat32), state.to(torch::kFloat32)}, 1));
}

torch::Tensor PolicyNetImpl::forward(const torch::Tensor& noisy,
                                     const torch::Tensor& t,
                                     const torch::Tensor& obs) {
  auto c = t_fc2(torch::silu(t_fc1(TimestepFeatures(t)))) + obs;
  auto x = in_proj(noisy) + pos;
  for (auto& block : *blocks) x = block->as<DiTBlock>()->forward(x, c);
  auto mod = final_ada(torch::silu(c)).unsqueeze(1).chunk(2, -1);
  return out_proj(Modulate(final_norm(x), mod[0], mod[1]));
}

int64_t CountParams(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace pipetorch
