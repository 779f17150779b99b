// SPDX-License-Identifier: Apache-2.0
// Where a value came from (a policy file's line and column, a flag, the API, a
// built-in) and the one form of an error about it: "FILE:LINE:COL: KEY: message".
#pragma once

#include "base/error.hpp"

#include <string>

namespace agentjail {

// Where a value came from: a policy file position, a flag, or a built-in.
struct Origin {
    std::string file;  // "default.toml" for built-ins, a path, or "command line"
    int line = 0;      // 0 when not from a file
    int column = 0;
    std::string key;   // key path, e.g. "filesystem.ro[2]" or "--ro"

    // "file:line:column (key)" or "command line (--ro)".
    std::string describe() const;
};

template <class T>
struct Located {
    T value{};
    Origin origin{};
};

namespace base {
// "FILE:LINE:COL: KEY: message" (or "command line: KEY: message"), invalid input.
Error error_at(const Origin& o, const std::string& message);
}  // namespace base

}  // namespace agentjail
