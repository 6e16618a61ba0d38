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

// A model-field error (validate_model's, path model.<field>) of the config
// `obj` at `path`, renamed to the config key the field was read from
// (model.hf_config.num_key_value_heads), the field named in the message;
// a field no key of `obj` maps to keeps its path (hf_config.cc).
Error hf_error(Error e, const jsonf::Json& obj, const std::string& path);

}  // namespace sc::model_internal
