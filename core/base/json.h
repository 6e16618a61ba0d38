// The one JSON writer for text the engine assembles by hand (envelopes,
// manifests): a string literal with JSON's escapes, written by nlohmann's
// serializer so that every JSON string the project emits is escaped the
// same way. Documents with structure are built as nlohmann::json and
// dumped; this is for splicing one string into text built around it.
#pragma once

#include <string>
#include <string_view>

namespace sc {

// "text" with quotes; '"', '\\' and control characters escaped (\n, \t, ...,
// \u00xx); other bytes as they are (UTF-8 in, UTF-8 out; an invalid UTF-8
// sequence becomes U+FFFD rather than an abort).
std::string json_quote(std::string_view text);

}  // namespace sc
