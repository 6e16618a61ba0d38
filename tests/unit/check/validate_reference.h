// The pre-streaming in-memory validator, kept as a test oracle
// (validate_reference.cc).
#pragma once

#include <vector>

#include "check/validate.h"

namespace sc::testing::reference {

ValidationReport validate_traces(const std::vector<DecodedTrace>& ranks, const GroupTable& groups,
                                 const ValidateOptions& options = {});

}  // namespace sc::testing::reference
