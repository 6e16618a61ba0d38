// Architecture of a decoder-only transformer, as published numbers.
// Pure data: the builder (model/transformer.h) turns it into a graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace sc {

enum class NormKind { kLayerNorm, kRMSNorm };
enum class MlpKind { kGelu, kSwiGLU };
enum class PositionKind { kLearned, kRope };

struct ModelConfig {
  std::string name;            // preset name or "custom"/"hf:<model_type>"
  int64_t num_layers = 0;      // L
  int64_t hidden = 0;          // h
  int64_t num_heads = 0;       // a
  int64_t num_kv_heads = 0;    // kv (== a: MHA, 1: MQA, else GQA)
  int64_t head_dim = 0;        // d (usually h / a)
  int64_t ffn_hidden = 0;      // f (4h for GPT, SwiGLU width for Llama)
  int64_t vocab = 0;           // V
  int64_t max_positions = 0;   // learned position table rows (GPT)
  NormKind norm = NormKind::kLayerNorm;
  MlpKind mlp = MlpKind::kGelu;
  PositionKind position = PositionKind::kLearned;
  bool tied_embeddings = true;  // output layer reuses the token embedding
  bool linear_bias = true;      // biases on the linear layers (GPT: yes)
  bool dropout = true;          // hidden + attention dropout (GPT: 0.1)
  bool flash_attention = false; // fused attention: no s^2 activations saved
};

// Names of all presets, sorted.
std::vector<std::string> preset_names();

// Published architecture for a preset name (exact match), or an error that
// lists the known names. path is used for the error ("model.preset").
Result<ModelConfig> model_preset(const std::string& name,
                                 const std::string& path = "model.preset");

// Parses a Hugging Face config.json text (llama/mistral/gpt2/... model_type).
// Unknown HF keys are ignored (HF configs carry many); missing required
// keys and bad values are errors that name the key.
Result<ModelConfig> model_from_hf_config(const std::string& json_text,
                                         const std::string& path = "model.hf_config");

// Checks internal consistency (positive sizes, heads * head_dim relation,
// kv divides heads, absurd sizes). path prefixes field names ("model").
Status validate_model(const ModelConfig& m, const std::string& path = "model");

// Exact parameter count by closed form (embedding, layers, final norm, and
// output layer when untied). Independent of the graph so tests can compare
// the graph's count against it.
int64_t closed_form_parameters(const ModelConfig& m);

}  // namespace sc
