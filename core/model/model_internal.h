// Shared by the model files (not part of the public API): the closed-form
// parameter count in 128 bits, which validation also uses for its cap.
#pragma once

#include "model/model_config.h"

namespace sc::model_internal {

struct WideCount {
  __int128 total = 0;
  __int128 inactive = 0;  // routed experts a token is not sent to
};

WideCount parameters_wide(const ModelConfig& m);

}  // namespace sc::model_internal
