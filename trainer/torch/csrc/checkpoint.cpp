// checkpoint.cpp - saving and validated loading of a policy.
//
// File layout: a 32-byte header, then a torch::serialize archive.
//   0  8  magic "PTCKPT\r\n"
//   8  4  format version (little endian), currently 1
//  12  4  reserved, 0
//  16  8  payload length in bytes
//  24  8  payload checksum (FNV-1a over 64-bit words, see Checksum)
// The archive holds "pipetorch/arch" (shape-defining config), "pipetorch/rng"
// (noise generator state), "pipetorch/extra" (caller bytes) and the
// sub-archives "encoder", "policy" and "optimizer".
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "policy.h"

namespace pipetorch {
namespace {

constexpr char kMagic[8] = {'P', 'T', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeader = 32;

// Checksum is FNV-1a applied to 64-bit little-endian words (and the tail
// bytes): each step is a bijection of the state, so any single changed
// word changes the result.
uint64_t Checksum(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  for (; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ULL;
  return h;
}

void PutU64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}
uint64_t GetU64(const char* src) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(src[i]);
  return v;
}

torch::Tensor BytesTensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string TensorBytes(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU).contiguous();
  if (c.scalar_type() != torch::kUInt8 || c.dim() != 1)
    throw std::runtime_error("expected a 1-d uint8 tensor");
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("checkpoint " + path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw std::runtime_error("checkpoint " + path + ": read error");
  return buf.str();
}

// CheckEnvelope checks the header and checksum of a checkpoint file; the
// archive bytes follow the header.
void CheckEnvelope(const std::string& file, const std::string& path) {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("checkpoint " + path + ": " + why);
  };
  if (file.size() < kHeader)
    fail("truncated: " + std::to_string(file.size()) + " bytes, shorter than the header");
  if (std::memcmp(file.data(), kMagic, 8) != 0) fail("not a pipetorch checkpoint (bad magic)");
  uint32_t format = static_cast<uint32_t>(GetU64(file.data() + 8) & 0xffffffffu);
  if (format != kFormat)
    fail("format version " + std::to_string(format) + ", this library reads " +
         std::to_string(kFormat));
  uint64_t len = GetU64(file.data() + 16);
  if (file.size() - kHeader < len)
    fail("truncated: header says " + std::to_string(len) + " payload bytes, file has " +
         std::to_string(file.size() - kHeader));
  if (file.size() - kHeader > len)
    fail("corrupt: " + std::to_string(file.size() - kHeader - len) +
         " unexpected bytes after the payload");
  if (Checksum(file.data() + kHeader, len) != GetU64(file.data() + 24))
    fail("corrupt: payload checksum mismatch");
}

// Staged is one tensor read from a checkpoint, waiting to be copied into
// its live counterpart.
struct Staged {
  torch::Tensor live, loaded;
};

// StageModule reads every parameter and buffer of m from ar into fresh
// tensors, checking names, shapes and dtypes against the live module.
void StageModule(torch::serialize::InputArchive& ar, const torch::nn::Module& m,
                 const std::string& where, std::vector<Staged>& out) {
  auto take = [&](const std::string& key, const torch::Tensor& live, bool buffer) {
    torch::Tensor t;
    if (!ar.try_read(key, t, buffer))
      throw std::runtime_error("missing tensor " + where + key);
    if (!t.sizes().equals(live.sizes()) || t.scalar_type() != live.scalar_type())
      throw std::runtime_error("tensor " + where + key + " has shape " +
                               c10::str(t.sizes()) + " " + c10::toString(t.scalar_type()) +
                               ", the policy has " + c10::str(live.sizes()) + " " +
                               c10::toString(live.scalar_type()));
    out.push_back({live, t});
  };
  for (const auto& p : m.named_parameters(false)) take(p.key(), p.value(), false);
  for (const auto& b : m.named_buffers(false)) take(b.key(), b.value(), true);
  for (const auto& c : m.named_children()) {
    torch::serialize::InputArchive sub;
    if (!ar.try_read(c.key(), sub))
      throw std::runtime_error("missing module " + where + c.key());
    StageModule(sub, *c.value(), where + c.key() + ".", out);
  }
}

// StateKey builds the optimizer state key of a parameter: libtorch 1.x
// keys by the printed TensorImpl address, 2.x by the address itself.
inline std::string StateKey(c10::TensorImpl* impl, std::string*) {
  std::ostringstream os;
  os << impl;
  return os.str();
}
inline void* StateKey(c10::TensorImpl* impl, void**) { return impl; }

// CheckAdamState verifies that every optimizer moment matches its
// parameter's shape.
void CheckAdamState(torch::optim::AdamW& opt) {
  for (const auto& group : opt.param_groups()) {
    for (const auto& p : group.params()) {
      using Key = typename std::decay_t<decltype(opt.state())>::key_type;
      auto it = opt.state().find(StateKey(p.unsafeGetTensorImpl(), static_cast<Key*>(nullptr)));
      if (it == opt.state().end()) continue;
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      if (!s.exp_avg().sizes().equals(p.sizes()) ||
          !s.exp_avg_sq().sizes().equals(p.sizes()))
        throw std::runtime_error("optimizer state shape " + c10::str(s.exp_avg().sizes()) +
                                 " does not match parameter " + c10::str(p.sizes()));
    }
  }
}

}  // namespace

void Policy::Save(const std::string& path, const std::string& extra) {
  torch::NoGradGuard no_grad;
  torch::serialize::OutputArchive ar;
  ar.write("pipetorch/arch", BytesTensor(ArchString(cfg_)));
  ar.write("pipetorch/extra", BytesTensor(extra));
  {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    ar.write("pipetorch/rng", gen_.get_state());
  }
  torch::serialize::OutputArchive enc, net, opt;
  encoder_->save(enc);
  net_->save(net);
  opt_->save(opt);
  ar.write("encoder", enc);
  ar.write("policy", net);
  ar.write("optimizer", opt);

  std::string file(kHeader, '\0');
  ar.save_to([&file](const void* data, size_t n) {
    file.append(static_cast<const char*>(data), n);
    return n;
  });
  std::memcpy(&file[0], kMagic, 8);
  PutU64(&file[8], kFormat);
  PutU64(&file[16], file.size() - kHeader);
  PutU64(&file[24], Checksum(file.data() + kHeader, file.size() - kHeader));

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("save " + path + ": " + std::strerror(errno));
  size_t wrote = std::fwrite(file.data(), 1, file.size(), f);
  int err = wrote == file.size() ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (wrote != file.size() || err != 0)
    throw std::runtime_error("save " + path + ": write failed: " + std::strerror(err ? err : EIO));
}

std::string Policy::Load(const std::string& path) {
  torch::NoGradGuard no_grad;
  const std::string file = ReadFile(path);
  CheckEnvelope(file, path);
  torch::serialize::InputArchive ar;
  try {
    ar.load_from(file.data() + kHeader, file.size() - kHeader, device_);
  } catch (const c10::Error& e) {
    throw std::runtime_error("checkpoint " + path + ": unreadable archive: " +
                             e.what_without_backtrace());
  }
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("checkpoint " + path + ": " + why);
  };
  torch::Tensor t;
  if (!ar.try_read("pipetorch/arch", t)) fail("no pipetorch/arch record");
  const std::string arch = TensorBytes(t);
  if (arch != ArchString(cfg_))
    fail("written for a different architecture:\n  file:   " + arch +
         "\n  policy: " + ArchString(cfg_));

  std::vector<Staged> staged;
  auto opt = MakeOptimizer();
  at::Generator gen = MakeGenerator();
  torch::Tensor rng, extra;
  try {
    for (auto [key, module] : {std::pair<const char*, torch::nn::Module*>{"encoder", encoder_.get()},
                               {"policy", net_.get()}}) {
      torch::serialize::InputArchive sub;
      if (!ar.try_read(key, sub)) throw std::runtime_error(std::string("missing module ") + key);
      StageModule(sub, *module, std::string(key) + ".", staged);
    }
    torch::serialize::InputArchive opt_ar;
    if (!ar.try_read("optimizer", opt_ar)) throw std::runtime_error("missing optimizer state");
    opt->load(opt_ar);
    CheckAdamState(*opt);
    if (!ar.try_read("pipetorch/rng", rng)) throw std::runtime_error("missing rng state");
    rng = rng.to(torch::kCPU);
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng);
    }
    if (!ar.try_read("pipetorch/extra", extra)) throw std::runtime_error("missing extra record");
  } catch (const c10::Error& e) {
    fail(e.what_without_backtrace());
  } catch (const std::exception& e) {
    fail(e.what());
  }
  std::string extra_bytes = TensorBytes(extra);

  // Everything is validated: commit. Options come from the current config.
  for (auto& s : staged) s.live.copy_(s.loaded);
  for (auto& group : opt->param_groups()) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    o.lr(cfg_.lr).weight_decay(cfg_.weight_decay).betas({cfg_.beta1, cfg_.beta2});
  }
  opt_ = std::move(opt);
  gen_ = gen;
  loss_ = torch::Tensor();
  grad_norm_ = torch::Tensor();
  phase_ = Phase::kIdle;
  return extra_bytes;
}

}  // namespace pipetorch
