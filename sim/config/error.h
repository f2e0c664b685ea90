// The one exception type for bad input files and --set values. The CLI prints what() and exits
// with status 2, so what() carries everything a user needs to find the mistake.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "sim/config/source_loc.h"

namespace p2psim::config {

class error : public std::runtime_error {
 public:
  error(source_loc where, std::string key_name, std::string text)
      : std::runtime_error(compose(where, key_name, text)),
        loc(std::move(where)),
        key(std::move(key_name)),
        message(std::move(text)) {}

  source_loc loc;       // where the offending value is (or "--set a.b=c" for an override)
  std::string key;      // the offending key; may be empty
  std::string message;  // what is wrong, without location and key

  // "FILE:LINE:COL: error: KEY: MESSAGE", leaving out the pieces that are empty.
  static std::string compose(const source_loc& where, const std::string& key_name,
                             const std::string& text) {
    std::string out;
    std::string place = where.str();
    if (!place.empty()) out += place + ": ";
    out += "error: ";
    if (!key_name.empty()) out += key_name + ": ";
    return out + text;
  }
};

}  // namespace p2psim::config
