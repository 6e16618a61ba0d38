// Published architectures. GPT rows: Megatron-LM (Narayanan et al. 2021,
// arXiv 2104.04473) Table 1, plus GPT-3 175B (Brown et al. 2020); all use
// V = 51200, s = 2048, GeLU MLP with f = 4h, LayerNorm, learned positions,
// tied embeddings, biases and dropout. Llama rows: the models' HF
// config.json files (RMSNorm, SwiGLU, RoPE, untied, no bias, no dropout).
#include <algorithm>

#include "model/model_config.h"

namespace sc {
namespace {

struct GptRow { const char* name; int64_t h, a, L; };
constexpr GptRow kGpt[] = {
    {"gpt3-1.7b", 2304, 24, 24},    {"gpt3-3.6b", 3072, 32, 30},
    {"gpt3-7.5b", 4096, 32, 36},    {"gpt3-18b", 6144, 48, 40},
    {"gpt3-39b", 8192, 64, 48},     {"gpt3-76b", 10240, 80, 60},
    {"gpt3-145b", 12288, 96, 80},   {"gpt3-175b", 12288, 96, 96},
    {"gpt3-310b", 16384, 128, 96},  {"gpt3-530b", 20480, 128, 105},
    {"gpt3-1t", 25600, 160, 128},
};

struct LlamaRow { const char* name; int64_t h, L, a, kv, f, V, positions; };
constexpr LlamaRow kLlama[] = {
    {"llama2-7b", 4096, 32, 32, 32, 11008, 32000, 4096},
    {"llama2-13b", 5120, 40, 40, 40, 13824, 32000, 4096},
    {"llama2-70b", 8192, 80, 64, 8, 28672, 32000, 4096},
    {"llama3-8b", 4096, 32, 32, 8, 14336, 128256, 8192},
    {"llama3-70b", 8192, 80, 64, 8, 28672, 128256, 8192},
    // Only released as Llama 3.1 (131072-token RoPE context).
    {"llama3-405b", 16384, 126, 128, 8, 53248, 128256, 131072},
};

ModelConfig gpt(const GptRow& r) {
  ModelConfig m;
  m.name = r.name;
  m.num_layers = r.L;
  m.hidden = r.h;
  m.num_heads = r.a;
  m.num_kv_heads = r.a;
  m.head_dim = r.h / r.a;
  m.ffn_hidden = 4 * r.h;
  m.vocab = 51200;
  m.max_positions = 2048;
  m.norm = NormKind::kLayerNorm;
  m.mlp = MlpKind::kGelu;
  m.position = PositionKind::kLearned;
  m.tied_embeddings = true;
  m.linear_bias = true;
  m.dropout = true;
  return m;
}

ModelConfig llama(const LlamaRow& r) {
  ModelConfig m;
  m.name = r.name;
  m.num_layers = r.L;
  m.hidden = r.h;
  m.num_heads = r.a;
  m.num_kv_heads = r.kv;
  m.head_dim = r.h / r.a;
  m.ffn_hidden = r.f;
  m.vocab = r.V;
  m.max_positions = r.positions;
  m.norm = NormKind::kRMSNorm;
  m.mlp = MlpKind::kSwiGLU;
  m.position = PositionKind::kRope;
  m.tied_embeddings = false;
  m.linear_bias = false;
  m.dropout = false;
  return m;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const GptRow& r : kGpt) names.emplace_back(r.name);
  for (const LlamaRow& r : kLlama) names.emplace_back(r.name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelConfig> model_preset(const std::string& name, const std::string& path) {
  for (const GptRow& r : kGpt) {
    if (name == r.name) return gpt(r);
  }
  for (const LlamaRow& r : kLlama) {
    if (name == r.name) return llama(r);
  }
  std::string list;
  for (const std::string& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown model preset \"" + name + "\" (known: " + list + ")", path);
}

}  // namespace sc
