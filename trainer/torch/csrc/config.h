// config.h - policy configuration: presets and the flat JSON parser.
#pragma once

#include <cstdint>
#include <string>

namespace pipetorch {

// Config is the resolved configuration of one policy. Zero values in the
// JSON mean "the preset's default".
struct Config {
  std::string preset = "small";
  // Data shapes.
  int cams = 0, height = 0, width = 0, n_obs = 0, horizon = 0;
  int state_dim = 0, action_dim = 0;
  // Architecture.
  int encoder_width = 0;  // ResNet18 base channels; 64 is the real ResNet18
  int d_model = 0, depth = 0, heads = 0, mlp_ratio = 0;
  int freq_dim = 256;         // sinusoidal timestep features
  int diffusion_steps = 100;  // DDPM training steps
  // Runtime.
  std::string device = "auto";     // "auto", "cpu", "cuda", "cuda:N"
  std::string precision = "auto";  // "auto", "fp32", "bf16"
  int threads = 0;                 // intra-op threads; 0: half the cores
  int64_t seed = 0;
  double lr = 1e-4, weight_decay = 1e-2, grad_clip = 1.0;
  double beta1 = 0.9, beta2 = 0.999;
  std::string encoder_weights;  // TorchScript or torch::save file
};

// ParseConfig parses a flat JSON object and fills the defaults of its
// preset. It throws std::invalid_argument naming the offending key.
Config ParseConfig(const std::string& json);

// ArchString is a canonical description of everything that fixes tensor
// shapes; checkpoints store it to refuse a mismatched architecture.
std::string ArchString(const Config& c);

// ConfigJSON renders the resolved configuration as a JSON object.
std::string ConfigJSON(const Config& c);

// JSONQuote returns s as a JSON string literal.
std::string JSONQuote(const std::string& s);

}  // namespace pipetorch
