// config.cpp - presets and a small parser for flat JSON objects.
#include "config.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

namespace pipetorch {
namespace {

// Value is one scalar JSON value.
struct Value {
  enum Kind { kString, kNumber, kBool, kNull } kind = kNull;
  std::string str;
  double num = 0;
  bool b = false;
};

// Parser reads a flat JSON object: string keys, scalar values.
class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  std::map<std::string, Value> Object() {
    std::map<std::string, Value> out;
    Skip();
    Expect('{');
    Skip();
    if (Peek() == '}') {
      ++i_;
      return Tail(out);
    }
    for (;;) {
      Skip();
      std::string key = String();
      Skip();
      Expect(':');
      Skip();
      if (out.count(key)) Fail("duplicate key \"" + key + "\"");
      out[key] = Scalar(key);
      Skip();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      Expect('}');
      return Tail(out);
    }
  }

 private:
  std::map<std::string, Value> Tail(std::map<std::string, Value>& out) {
    Skip();
    if (i_ != s_.size()) Fail("trailing data");
    return out;
  }

  [[noreturn]] void Fail(const std::string& what) {
    throw std::invalid_argument("config JSON at byte " + std::to_string(i_) +
                                ": " + what);
  }
  char Peek() { return i_ < s_.size() ? s_[i_] : '\0'; }
  void Skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' ||
                              s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++i_;
  }
  bool Literal(const char* lit) {
    size_t n = std::char_traits<char>::length(lit);
    if (s_.compare(i_, n, lit) != 0) return false;
    i_ += n;
    return true;
  }

  std::string String() {
    Expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) Fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': out += Unicode(); break;
        default: Fail(std::string("bad escape \\") + e);
      }
    }
    Expect('"');
    return out;
  }

  // Unicode decodes \uXXXX (BMP only) into UTF-8.
  std::string Unicode() {
    if (i_ + 4 > s_.size()) Fail("short \\u escape");
    unsigned cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= h - '0';
      else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
      else Fail("bad hex digit in \\u escape");
    }
    std::string out;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
  }

  Value Scalar(const std::string& key) {
    Value v;
    char c = Peek();
    if (c == '"') {
      v.kind = Value::kString;
      v.str = String();
    } else if (Literal("true")) {
      v.kind = Value::kBool;
      v.b = true;
    } else if (Literal("false")) {
      v.kind = Value::kBool;
    } else if (Literal("null")) {
      v.kind = Value::kNull;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = i_;
      while (i_ < s_.size() && std::string("+-.eE0123456789").find(s_[i_]) != std::string::npos) ++i_;
      std::string tok = s_.substr(start, i_ - start);
      char* end = nullptr;
      v.num = std::strtod(tok.c_str(), &end);
      if (end == nullptr || *end != '\0' || !std::isfinite(v.num))
        Fail("key \"" + key + "\": bad number " + tok);
      v.kind = Value::kNumber;
    } else {
      Fail("key \"" + key + "\": want a string, number or boolean");
    }
    return v;
  }

  const std::string& s_;
  size_t i_ = 0;
};

[[noreturn]] void BadValue(const std::string& key, const std::string& want) {
  throw std::invalid_argument("config key \"" + key + "\": want " + want);
}

int IntOf(const std::string& key, const Value& v) {
  if (v.kind != Value::kNumber || v.num != std::floor(v.num) || v.num < 0 ||
      v.num > 1e9)
    BadValue(key, "a non-negative integer");
  return static_cast<int>(v.num);
}

double FloatOf(const std::string& key, const Value& v) {
  if (v.kind != Value::kNumber || v.num < 0) BadValue(key, "a non-negative number");
  return v.num;
}

std::string StringOf(const std::string& key, const Value& v) {
  if (v.kind != Value::kString) BadValue(key, "a string");
  return v.str;
}

// Preset holds the defaults of one named preset.
struct Preset {
  int cams, height, width, n_obs, horizon, state_dim, action_dim;
  int encoder_width, d_model, depth, heads, mlp_ratio;
};

const std::map<std::string, Preset>& Presets() {
  // seed: the production policy, real ResNet18 and a ~50M DiT.
  // small: the CPU demo, a narrow ResNet18 and a few-M DiT.
  // tiny: unit tests, trains in seconds on one core.
  static const std::map<std::string, Preset> presets = {
      {"seed", {4, 128, 128, 2, 16, 14, 14, 64, 512, 10, 8, 4}},
      {"small", {4, 128, 128, 2, 16, 14, 14, 16, 256, 4, 4, 4}},
      {"tiny", {2, 32, 32, 2, 16, 14, 14, 8, 64, 2, 4, 4}},
  };
  return presets;
}

void Fill(int& field, int def) {
  if (field == 0) field = def;
}

void ApplyPreset(Config& c) {
  auto it = Presets().find(c.preset);
  if (it == Presets().end())
    throw std::invalid_argument("config key \"preset\": unknown preset \"" +
                                c.preset + "\" (want seed, small or tiny)");
  const Preset& p = it->second;
  Fill(c.cams, p.cams);
  Fill(c.height, p.height);
  Fill(c.width, p.width);
  Fill(c.n_obs, p.n_obs);
  Fill(c.horizon, p.horizon);
  Fill(c.state_dim, p.state_dim);
  Fill(c.action_dim, p.action_dim);
  Fill(c.encoder_width, p.encoder_width);
  Fill(c.d_model, p.d_model);
  Fill(c.depth, p.depth);
  Fill(c.heads, p.heads);
  Fill(c.mlp_ratio, p.mlp_ratio);
}

void Check(const Config& c) {
  if (c.d_model % c.heads != 0)
    throw std::invalid_argument("config: d_model " + std::to_string(c.d_model) +
                                " is not divisible by heads " +
                                std::to_string(c.heads));
  if (c.height < 16 || c.width < 16)
    throw std::invalid_argument("config: image " + std::to_string(c.height) +
                                "x" + std::to_string(c.width) +
                                " is too small for ResNet18 (min 16x16)");
  if (c.freq_dim < 2 || c.freq_dim % 2 != 0)
    throw std::invalid_argument("config key \"freq_dim\": want an even number >= 2");
  if (c.diffusion_steps < 2)
    throw std::invalid_argument("config key \"diffusion_steps\": want >= 2");
  if (c.precision != "auto" && c.precision != "fp32" && c.precision != "bf16")
    throw std::invalid_argument("config key \"precision\": want auto, fp32 or bf16, got \"" +
                                c.precision + "\"");
  if (c.beta1 >= 1 || c.beta2 >= 1)
    throw std::invalid_argument("config: beta1 and beta2 must be < 1");
}

using Setter = std::function<void(Config&, const std::string&, const Value&)>;

const std::map<std::string, Setter>& Setters() {
  static const std::map<std::string, Setter> setters = {
#define PT_INT(name) {#name, [](Config& c, const std::string& k, const Value& v) { c.name = IntOf(k, v); }}
#define PT_FLOAT(name) {#name, [](Config& c, const std::string& k, const Value& v) { c.name = FloatOf(k, v); }}
#define PT_STRING(name) {#name, [](Config& c, const std::string& k, const Value& v) { c.name = StringOf(k, v); }}
      PT_STRING(preset), PT_INT(cams), PT_INT(height), PT_INT(width),
      PT_INT(n_obs), PT_INT(horizon), PT_INT(state_dim), PT_INT(action_dim),
      PT_INT(encoder_width), PT_INT(d_model), PT_INT(depth), PT_INT(heads),
      PT_INT(mlp_ratio), PT_INT(freq_dim), PT_INT(diffusion_steps),
      PT_STRING(device), PT_STRING(precision), PT_INT(threads),
      PT_FLOAT(lr), PT_FLOAT(weight_decay), PT_FLOAT(grad_clip),
      PT_FLOAT(beta1), PT_FLOAT(beta2), PT_STRING(encoder_weights),
      {"seed", [](Config& c, const std::string& k, const Value& v) {
         if (v.kind != Value::kNumber || v.num != std::floor(v.num) ||
             std::fabs(v.num) > 9.007199254740992e15)
           BadValue(k, "an integer");
         c.seed = static_cast<int64_t>(v.num);
       }},
#undef PT_INT
#undef PT_FLOAT
#undef PT_STRING
  };
  return setters;
}

}  // namespace

Config ParseConfig(const std::string& json) {
  Config c;
  for (const auto& [key, value] : Parser(json).Object()) {
    if (value.kind == Value::kNull) continue;
    auto it = Setters().find(key);
    if (it == Setters().end())
      throw std::invalid_argument("config: unknown key \"" + key + "\"");
    it->second(c, key, value);
  }
  ApplyPreset(c);
  Check(c);
  return c;
}

std::string ArchString(const Config& c) {
  std::ostringstream o;
  o << "cams=" << c.cams << " height=" << c.height << " width=" << c.width
    << " n_obs=" << c.n_obs << " horizon=" << c.horizon
    << " state_dim=" << c.state_dim << " action_dim=" << c.action_dim
    << " encoder_width=" << c.encoder_width << " d_model=" << c.d_model
    << " depth=" << c.depth << " heads=" << c.heads
    << " mlp_ratio=" << c.mlp_ratio << " freq_dim=" << c.freq_dim
    << " diffusion_steps=" << c.diffusion_steps;
  return o.str();
}

std::string JSONQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string ConfigJSON(const Config& c) {
  std::ostringstream o;
  o.precision(17);
  o << "{\"preset\":" << JSONQuote(c.preset) << ",\"cams\":" << c.cams
    << ",\"height\":" << c.height << ",\"width\":" << c.width
    << ",\"n_obs\":" << c.n_obs << ",\"horizon\":" << c.horizon
    << ",\"state_dim\":" << c.state_dim << ",\"action_dim\":" << c.action_dim
    << ",\"encoder_width\":" << c.encoder_width << ",\"d_model\":" << c.d_model
    << ",\"depth\":" << c.depth << ",\"heads\":" << c.heads
    << ",\"mlp_ratio\":" << c.mlp_ratio << ",\"freq_dim\":" << c.freq_dim
    << ",\"diffusion_steps\":" << c.diffusion_steps
    << ",\"device\":" << JSONQuote(c.device)
    << ",\"precision\":" << JSONQuote(c.precision)
    << ",\"threads\":" << c.threads << ",\"seed\":" << c.seed
    << ",\"lr\":" << c.lr << ",\"weight_decay\":" << c.weight_decay
    << ",\"grad_clip\":" << c.grad_clip << ",\"beta1\":" << c.beta1
    << ",\"beta2\":" << c.beta2
    << ",\"encoder_weights\":" << JSONQuote(c.encoder_weights) << "}";
  return o.str();
}

}  // namespace pipetorch
