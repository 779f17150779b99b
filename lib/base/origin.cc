// SPDX-License-Identifier: Apache-2.0
// Describing where a value came from, and errors that point there.
#include "base/origin.hpp"

namespace agentjail {

std::string Origin::describe() const {
    if (line > 0) {
        std::string s = file + ":" + std::to_string(line) + ":" + std::to_string(column);
        if (!key.empty()) s += " (" + key + ")";
        return s;
    }
    std::string s = file.empty() ? "command line" : file;
    if (!key.empty()) s += " (" + key + ")";
    return s;
}

namespace base {

Error error_at(const Origin& o, const std::string& message) {
    std::string where;
    if (o.line > 0)
        where = o.file + ":" + std::to_string(o.line) + ":" + std::to_string(o.column);
    else
        where = o.file.empty() ? "command line" : o.file;
    if (!o.key.empty()) where += ": " + o.key;
    return Error{ErrorKind::invalid_input, 0, where + ": " + message};
}

}  // namespace base
}  // namespace agentjail
