// Section parsers shared by the job/*.cc files. Internal to core/job.
#pragma once

#include <optional>
#include <string>

#include "job/job.h"
#include "base/json_fields.h"

namespace sc::job_internal {

// The "model" section: a preset name string, or an object with preset |
// hf_config | explicit fields, plus overrides. max_positions is left 0 when
// an explicit model does not give it (parse_job resolves it to seq_len).
Result<ModelConfig> parse_model_section(const jsonf::Json& v, const std::string& path);

// The "hardware" section: a preset name string, or an object with an
// optional "preset" and overrides of any HardwareProfile field.
Result<HardwareProfile> parse_hardware_section(const jsonf::Json& v, const std::string& path);
// The "network" section (job_network.cc); errors name the field.
Result<NetworkConfig> parse_network_section(const jsonf::Json& v, const std::string& path);
Status validate_hardware(const HardwareProfile& hw, const std::string& path);

const char* norm_name(NormKind k);          // "layernorm" | "rmsnorm"
const char* mlp_name(MlpKind k);            // "gelu" | "swiglu" | "relu2"
const char* position_name(PositionKind k);  // "learned" | "rope" | "none"
const char* optimizer_name(OptimizerKind k);  // "adam" | "adamw" | "sgd"
std::optional<OptimizerKind> parse_optimizer(const std::string& s);

// Default optimizer state bytes per parameter: Adam(W) keeps an fp32
// master copy and two fp32 moments (12); SGD a master copy and momentum (8).
int64_t default_optimizer_bytes(OptimizerKind k);

// Inference jobs (job_serving.cc): the "serving" section and the
// training-only fields an inference job refuses; the resolved internal
// training settings; the canonical form's serving part.
Status parse_serving(const jsonf::Json& root, Job* job);
void resolve_serving(Job* job);
void serving_canonical(const Job& job, jsonf::Json* root);

}  // namespace sc::job_internal

namespace sc {
// validate_job for an inference job: the serving fields, then each pool's
// layout by `validate_layout` (the training checks of the layout).
Status validate_serving(const Job& job, Status (*validate_layout)(const Job&));
}  // namespace sc
