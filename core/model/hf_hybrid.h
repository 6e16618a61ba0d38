// Hugging Face readers for the hybrid families (nemotron_h, jamba), called
// by model_from_hf_config (hf_config.cc) once the file is parsed.
#pragma once

#include <string>

#include "base/json_fields.h"
#include "model/model_config.h"

namespace sc::model_internal {

bool is_hybrid_hf_family(const std::string& model_type);

// The model of a parsed config.json of a hybrid family, with hf_family,
// hf_features (nonstandard_numbers: Infinity/NaN read as null) and, when
// not strict, hf_warnings; validated.
Result<ModelConfig> hybrid_from_hf_config(const jsonf::Json& obj, const std::string& path,
                                          const std::string& model_type, bool strict, int nonstandard_numbers);

}  // namespace sc::model_internal
