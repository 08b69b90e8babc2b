// policy.cpp - the training stages of one policy.
#include "policy.h"

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define PIPETORCH_AUTOCAST_BY_DEVICE 1
#endif

namespace pipetorch {
namespace {

// CreateMutex serializes policy construction: module init draws from the
// global RNG, which is seeded per policy.
std::mutex& CreateMutex() {
  static std::mutex m;
  return m;
}

// AutocastScope enables or disables autocast for one device type on this
// thread and restores the previous state on exit, like torch.autocast.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType type, bool bf16) : type_(type) {
    prev_enabled_ = Enabled();
    prev_dtype_ = Dtype();
    Set(bf16, bf16 ? at::kBFloat16 : prev_dtype_);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    Set(prev_enabled_, prev_dtype_);
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
#ifdef PIPETORCH_AUTOCAST_BY_DEVICE
  bool Enabled() const { return at::autocast::is_autocast_enabled(type_); }
  at::ScalarType Dtype() const { return at::autocast::get_autocast_dtype(type_); }
  void Set(bool on, at::ScalarType dtype) {
    at::autocast::set_autocast_enabled(type_, on);
    at::autocast::set_autocast_dtype(type_, dtype);
  }
#else
  bool Enabled() const {
    return type_ == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                          : at::autocast::is_cpu_enabled();
  }
  at::ScalarType Dtype() const {
    return type_ == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                          : at::autocast::get_autocast_cpu_dtype();
  }
  void Set(bool on, at::ScalarType dtype) {
    if (type_ == c10::DeviceType::CUDA) {
      at::autocast::set_enabled(on);
      at::autocast::set_autocast_gpu_dtype(dtype);
    } else {
      at::autocast::set_cpu_enabled(on);
      at::autocast::set_autocast_cpu_dtype(dtype);
    }
  }
#endif
  c10::DeviceType type_;
  bool prev_enabled_;
  at::ScalarType prev_dtype_;
};

torch::Device ResolveDevice(const std::string& name) {
  if (name == "auto") {
#ifdef PIPETORCH_CUDA
    if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
#endif
    return torch::Device(torch::kCPU);
  }
  torch::Device d(torch::kCPU);
  try {
    d = torch::Device(name);
  } catch (const std::exception&) {
    throw std::invalid_argument("config key \"device\": bad device \"" + name +
                                "\" (want auto, cpu, cuda or cuda:N)");
  }
  if (d.is_cpu()) return d;
  if (!d.is_cuda())
    throw std::invalid_argument("config key \"device\": unsupported device \"" +
                                name + "\" (want auto, cpu, cuda or cuda:N)");
#ifndef PIPETORCH_CUDA
  throw std::invalid_argument(
      "config key \"device\": \"" + name +
      "\" requested, but this libpipetorch was built against a CPU-only "
      "libtorch; rebuild it with TORCH_PREFIX pointing at a CUDA libtorch");
#else
  if (!torch::cuda::is_available())
    throw std::invalid_argument("config key \"device\": \"" + name +
                                "\" requested, but no CUDA device is available");
  if (!d.has_index()) d.set_index(0);
  if (d.index() >= static_cast<int>(torch::cuda::device_count()))
    throw std::invalid_argument("config key \"device\": \"" + name +
                                "\" does not exist (" +
                                std::to_string(torch::cuda::device_count()) +
                                " CUDA devices)");
  return d;
#endif
}

// SquaredCosineBetas is the "squaredcos_cap_v2" DDPM schedule.
torch::Tensor SquaredCosineBetas(int steps) {
  auto alpha_bar = [](double t) {
    double v = std::cos((t + 0.008) / 1.008 * M_PI / 2);
    return v * v;
  };
  std::vector<double> betas(steps);
  for (int i = 0; i < steps; ++i) {
    double b = 1 - alpha_bar((i + 1.0) / steps) / alpha_bar(double(i) / steps);
    betas[i] = std::min(b, 0.999);
  }
  return torch::tensor(betas, torch::kFloat64);
}

std::string Shape(const std::vector<int64_t>& s) {
  std::ostringstream o;
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "x" : "") << s[i];
  return o.str();
}

void CheckCount(const char* what, size_t got, const std::vector<int64_t>& shape) {
  int64_t want = 1;
  for (auto d : shape) want *= d;
  if (got != static_cast<size_t>(want))
    throw std::invalid_argument(std::string("upload: ") + what + " has " +
                                std::to_string(got) + " elements, want " +
                                std::to_string(want) + " (" + Shape(shape) + ")");
}

// WeightsTable reads a TorchScript module or a torch::save archive into a
// flat name -> tensor map (dotted names, like a state dict).
std::map<std::string, torch::Tensor> WeightsTable(const std::string& path) {
  torch::jit::Module m;
  try {
    m = torch::jit::load(path, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    throw std::runtime_error("encoder_weights " + path +
                             ": not a TorchScript module or torch::save archive: " +
                             e.what_without_backtrace());
  }
  std::map<std::string, torch::Tensor> table;
  for (const auto& p : m.named_parameters(true)) table[p.name] = p.value;
  for (const auto& b : m.named_buffers(true)) table[b.name] = b.value;
  return table;
}

// WeightsPrefix finds the prefix under which a ResNet lives in table, by
// its stem convolution "conv1.weight" of shape [w,3,7,7].
std::string WeightsPrefix(const std::map<std::string, torch::Tensor>& table,
                          const std::string& path) {
  const std::string stem = "conv1.weight";
  for (const auto& [name, t] : table) {
    if (name.size() < stem.size() ||
        name.compare(name.size() - stem.size(), stem.size(), stem) != 0)
      continue;
    std::string prefix = name.substr(0, name.size() - stem.size());
    if (t.dim() == 4 && t.size(1) == 3 && t.size(2) == 7 &&
        (prefix.empty() || prefix.back() == '.') &&
        prefix.find("layer") == std::string::npos)
      return prefix;
  }
  throw std::runtime_error("encoder_weights " + path +
                           ": no ResNet stem (conv1.weight of shape [w,3,7,7]) found");
}

}  // namespace

Policy::Scope::Scope(Policy& p) {
#ifdef PIPETORCH_CUDA
  if (p.gpu_) guard_.emplace(p.gpu_->compute);
#else
  (void)p;
#endif
}

Policy::Policy(const Config& cfg) : cfg_(cfg), device_(ResolveDevice(cfg.device)) {
  if (cfg_.precision == "auto") cfg_.precision = device_.is_cuda() ? "bf16" : "fp32";
  bf16_ = cfg_.precision == "bf16";
  if (cfg_.threads == 0)
    cfg_.threads = std::max(1u, std::thread::hardware_concurrency() / 2);
  cfg_.device = device_.str();
#ifdef PIPETORCH_CUDA
  if (device_.is_cuda()) {
    c10::cuda::set_device(device_.index());
    gpu_ = std::make_unique<Gpu>(device_.index());
  }
#endif
  Scope scope(*this);
  torch::NoGradGuard no_grad;
  {
    std::lock_guard<std::mutex> lock(CreateMutex());
    at::set_num_threads(cfg_.threads);
    torch::manual_seed(static_cast<uint64_t>(cfg_.seed));
    encoder_ = ResNet18(cfg_.encoder_width);
    net_ = PolicyNet(cfg_, encoder_->out_dim());
  }
  if (!cfg_.encoder_weights.empty()) LoadEncoderWeights(cfg_.encoder_weights);
  for (auto& p : encoder_->parameters()) p.set_requires_grad(false);
  encoder_->eval();
  encoder_->to(device_);
  net_->to(device_);
  net_->train();
  opt_ = MakeOptimizer();
  gen_ = MakeGenerator();

  auto alphas = 1 - SquaredCosineBetas(cfg_.diffusion_steps);
  auto ac = torch::cumprod(alphas, 0);
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  sqrt_ac_ = ac.sqrt().to(f32);
  sqrt_1m_ac_ = (1 - ac).sqrt().to(f32);
  // ImageNet normalization folded into one multiply-add on [0,255] pixels.
  auto mean = torch::tensor({0.485, 0.456, 0.406}, torch::kFloat64);
  auto stdv = torch::tensor({0.229, 0.224, 0.225}, torch::kFloat64);
  pix_scale_ = (1.0 / (255.0 * stdv)).view({1, 3, 1, 1}).to(f32);
  pix_bias_ = (-mean / stdv).view({1, 3, 1, 1}).to(f32);
}

std::unique_ptr<torch::optim::AdamW> Policy::MakeOptimizer() const {
  auto opts = torch::optim::AdamWOptions(cfg_.lr)
                  .betas({cfg_.beta1, cfg_.beta2})
                  .weight_decay(cfg_.weight_decay);
  return std::make_unique<torch::optim::AdamW>(net_->parameters(), opts);
}

at::Generator Policy::MakeGenerator() const {
  const auto seed = static_cast<uint64_t>(cfg_.seed) ^ 0x9e3779b97f4a7c15ULL;
#ifdef PIPETORCH_CUDA
  if (device_.is_cuda()) return MakeCudaGenerator(device_.index(), seed);
#endif
  return at::detail::createCPUGenerator(seed);
}

void Policy::LoadEncoderWeights(const std::string& path) {
  auto table = WeightsTable(path);
  const std::string prefix = WeightsPrefix(table, path);
  auto assign = [&](const std::string& name, torch::Tensor& dst) {
    auto it = table.find(prefix + name);
    if (it == table.end()) {
      if (name.find("num_batches_tracked") != std::string::npos) return;
      throw std::runtime_error("encoder_weights " + path + ": missing tensor \"" +
                               prefix + name + "\"");
    }
    if (!it->second.sizes().equals(dst.sizes()))
      throw std::runtime_error(
          "encoder_weights " + path + ": tensor \"" + prefix + name + "\" has shape " +
          Shape(it->second.sizes().vec()) + ", encoder (encoder_width " +
          std::to_string(cfg_.encoder_width) + ") wants " + Shape(dst.sizes().vec()));
    dst.copy_(it->second);
  };
  for (auto& p : encoder_->named_parameters(true)) assign(p.key(), p.value());
  for (auto& b : encoder_->named_buffers(true)) assign(b.key(), b.value());
  random_init_ = false;
}

void Policy::Upload(const uint8_t* images, size_t n_images, const float* state,
                    size_t n_state, const float* action, size_t n_action,
                    int64_t batch) {
  if (batch < 1) throw std::invalid_argument("upload: batch must be >= 1");
  if (!images || !state || !action)
    throw std::invalid_argument("upload: images, state and action must be non-NULL");
  const std::vector<int64_t> img{batch, cfg_.n_obs, cfg_.cams, cfg_.height, cfg_.width, 3};
  const std::vector<int64_t> st{batch, cfg_.n_obs, cfg_.state_dim};
  const std::vector<int64_t> act{batch, cfg_.horizon, cfg_.action_dim};
  CheckCount("images", n_images, img);
  CheckCount("state", n_state, st);
  CheckCount("action", n_action, act);
#ifdef PIPETORCH_CUDA
  if (gpu_) {
    auto t = gpu_->staging.Upload(images, state, action, img, st, act,
                                  gpu_->copy, gpu_->timer, step_);
    images_ = t.images, state_ = t.state, action_ = t.action;
    batch_ = batch;
    return;
  }
#endif
  if (batch != batch_ || !images_.defined()) {
    images_ = torch::empty(img, torch::kUInt8);
    state_ = torch::empty(st, torch::kFloat32);
    action_ = torch::empty(act, torch::kFloat32);
  }
  std::memcpy(images_.data_ptr(), images, n_images);
  std::memcpy(state_.data_ptr(), state, n_state * sizeof(float));
  std::memcpy(action_.data_ptr(), action, n_action * sizeof(float));
  batch_ = batch;
}

void Policy::Forward() {
  if (!images_.defined()) throw std::logic_error("forward: no batch uploaded yet");
#ifdef PIPETORCH_CUDA
  if (gpu_) {
    gpu_->staging.WaitCopied(gpu_->compute);
    gpu_->timer.Start(step_, PT_STAGE_FORWARD, gpu_->compute);
  }
#endif
  torch::AutoGradMode grad(true);
  AutocastScope autocast(device_.type(), bf16_);
  const int64_t b = batch_;
  auto pixels = images_.view({-1, cfg_.height, cfg_.width, 3})
                    .permute({0, 3, 1, 2})
                    .to(torch::kFloat32)
                    .mul(pix_scale_)
                    .add_(pix_bias_);
  torch::Tensor features;
  {
    torch::NoGradGuard no_grad;
    features = encoder_->forward(pixels).view({b, -1});
  }
  auto obs = net_->Observe(features, state_.view({b, -1}));
  auto opts = torch::TensorOptions().device(device_);
  auto t = torch::randint(0, cfg_.diffusion_steps, {b}, gen_, opts.dtype(torch::kLong));
  auto noise = torch::randn({b, cfg_.horizon, cfg_.action_dim}, gen_,
                            opts.dtype(torch::kFloat32));
  auto noisy = sqrt_ac_.index_select(0, t).view({b, 1, 1}) * action_ +
               sqrt_1m_ac_.index_select(0, t).view({b, 1, 1}) * noise;
  auto pred = net_->forward(noisy, t, obs);
  loss_ = torch::mse_loss(pred.to(torch::kFloat32), noise);
  loss_value_ = loss_.detach();
  grad_norm_ = torch::Tensor();
  phase_ = Phase::kForward;
#ifdef PIPETORCH_CUDA
  if (gpu_) {
    gpu_->staging.MarkConsumed(gpu_->compute);
    gpu_->timer.Stop(gpu_->compute);
  }
#endif
}

void Policy::Backward() {
  if (phase_ != Phase::kForward)
    throw std::logic_error("backward: no forward since the last backward");
#ifdef PIPETORCH_CUDA
  if (gpu_) gpu_->timer.Start(step_, PT_STAGE_BACKWARD, gpu_->compute);
#endif
  torch::AutoGradMode grad(true);
  AutocastScope no_autocast(device_.type(), false);  // backward runs outside autocast
  loss_.backward();
  loss_ = torch::Tensor();
  phase_ = Phase::kBackward;
#ifdef PIPETORCH_CUDA
  if (gpu_) gpu_->timer.Stop(gpu_->compute);
#endif
}

// ClipGradients scales grads so their global L2 norm is at most
// grad_clip, without reading anything back to the host.
void Policy::ClipGradients(std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> norms;
  norms.reserve(grads.size());
  for (auto& g : grads) norms.push_back(g.norm(2).to(torch::kFloat32));
  grad_norm_ = torch::stack(norms).norm(2);
  if (cfg_.grad_clip <= 0) return;
  auto coef = (cfg_.grad_clip / (grad_norm_ + 1e-6)).clamp_max(1.0);
  for (auto& g : grads) g.mul_(coef);
}

void Policy::OptimStep() {
#ifdef PIPETORCH_CUDA
  if (gpu_) gpu_->timer.Start(step_, PT_STAGE_OPTIM, gpu_->compute);
#endif
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  auto params = net_->parameters();
  for (auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) throw std::logic_error("optim_step: no gradients (run backward first)");
  ClipGradients(grads);
  opt_->step();
  for (auto& p : params) p.mutable_grad() = torch::Tensor();
  phase_ = Phase::kIdle;
#ifdef PIPETORCH_CUDA
  if (gpu_) gpu_->timer.Stop(gpu_->compute);
#endif
}

void Policy::Sync(float* loss, float* grad_norm) {
  if (!loss_value_.defined()) throw std::logic_error("sync: no forward yet");
  torch::NoGradGuard no_grad;
  auto values = grad_norm_.defined()
                    ? torch::stack({loss_value_, grad_norm_}).cpu()
                    : loss_value_.view({1}).cpu();
  auto* v = values.data_ptr<float>();
  if (loss) *loss = v[0];
  if (grad_norm)
    *grad_norm = values.numel() > 1 ? v[1] : std::numeric_limits<float>::quiet_NaN();
}

int Policy::PollTimings(pt_timing* dst, int cap) {
  if (cap < 0) throw std::invalid_argument("poll_timings: negative capacity");
  if (cap > 0 && !dst) throw std::invalid_argument("poll_timings: NULL buffer");
#ifdef PIPETORCH_CUDA
  if (gpu_) return gpu_->timer.Poll(dst, cap);
#endif
  return 0;
}

void Policy::Join(Dist& d, int64_t step) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> all;
  for (auto& t : encoder_->parameters()) all.push_back(t);
  for (auto& t : encoder_->buffers()) all.push_back(t);
  for (auto& t : net_->parameters()) all.push_back(t);
  for (auto& t : net_->buffers()) all.push_back(t);
  d.Broadcast(all, "rank 0's parameters");
  if (d.Rank() == 0) return;
  uint64_t seed = static_cast<uint64_t>(cfg_.seed) ^ 0x9e3779b97f4a7c15ULL;
  seed ^= (static_cast<uint64_t>(d.Rank()) * 0xbf58476d1ce4e5b9ULL) ^
          (static_cast<uint64_t>(step) * 0x94d049bb133111ebULL);
  gen_.set_current_seed(seed);
}

int Policy::AllReduceGrads(Dist& d, int vote) {
#ifdef PIPETORCH_CUDA
  if (gpu_) gpu_->timer.Start(step_, PT_STAGE_COMM, gpu_->compute);
#endif
  std::vector<torch::Tensor> grads;
  for (auto& p : net_->parameters())
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) throw std::logic_error("allreduce_grads: no gradients (run backward first)");
  int votes = d.AverageGrads(grads, step_, vote);
#ifdef PIPETORCH_CUDA
  if (gpu_) gpu_->timer.Stop(gpu_->compute);
#endif
  return votes;
}

uint64_t Policy::ParamChecksum() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& p : net_->parameters()) {
    auto c = p.detach().to(torch::kCPU).contiguous();
    const auto* b = static_cast<const uint8_t*>(c.data_ptr());
    for (size_t i = 0, n = c.numel() * c.element_size(); i < n; ++i) {
      h ^= b[i];
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

void Policy::SaveEncoder(const std::string& path) {
  torch::NoGradGuard no_grad;
  auto cpu = ResNet18(cfg_.encoder_width);
  auto src = encoder_->named_parameters(true);
  for (auto& p : cpu->named_parameters(true)) p.value().copy_(src[p.key()]);
  auto bufs = encoder_->named_buffers(true);
  for (auto& b : cpu->named_buffers(true)) b.value().copy_(bufs[b.key()]);
  torch::save(cpu, path);
}

std::string Policy::InfoJSON() const {
  std::ostringstream o;
  o << "{\"device\":" << JSONQuote(device_.str())
    << ",\"precision\":" << JSONQuote(cfg_.precision)
    << ",\"encoder_random_init\":" << (random_init_ ? "true" : "false")
    << ",\"encoder_params\":" << EncoderParams()
    << ",\"policy_params\":" << PolicyParams()
    << ",\"torch_version\":" << JSONQuote(TORCH_VERSION)
#ifdef PIPETORCH_CUDA
    << ",\"cuda_build\":true"
#else
    << ",\"cuda_build\":false"
#endif
    << ",\"threads\":" << at::get_num_threads()
    << ",\"config\":" << ConfigJSON(cfg_) << "}";
  return o.str();
}

}  // namespace pipetorch
