// Whether text is valid UTF-8 (implemented beside echo_text, base/status.cc).
#pragma once

#include <string_view>

namespace sc {

// No overlong forms, surrogates or code points past U+10FFFF: what a JSON
// string may hold.
bool valid_utf8(std::string_view s);

}  // namespace sc
