// Input files are text: YAML and NCCL's XML are Unicode, read here as UTF-8. A NUL byte or a
// byte sequence that is not UTF-8 means a binary or mis-encoded file; letting it through would
// put the bytes into reports, JSON (which refuses them) and generated YAML.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sim/config/source_loc.h"

namespace p2psim::config {

// 1-based line and column (counted in bytes) of byte `offset` of `text`.
source_loc loc_at(std::string_view text, size_t offset, const std::string& file);

// Throws config::error at the first NUL byte or invalid UTF-8 sequence of `text`; `format`
// ("YAML", "XML") says what the file should have been.
void check_text(std::string_view text, const std::string& file, const std::string& format);

}  // namespace p2psim::config
