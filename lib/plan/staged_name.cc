// SPDX-License-Identifier: Apache-2.0
// The form of a placeholder's staged name (staged_name.hpp).
#include "plan/staged_name.hpp"

namespace agentjail::plan {

namespace {

constexpr std::string_view kPrefix = ".agentjail-";

}  // namespace

std::string staged_name(const std::string& tag, std::size_t i) {
    return std::string(kPrefix) + tag + "-" + std::to_string(i);
}

bool is_staged_name(std::string_view name) {
    if (name.substr(0, kPrefix.size()) != kPrefix) return false;
    int fields = 0;
    bool digit = false;
    for (char c : name.substr(kPrefix.size())) {
        if (c >= '0' && c <= '9') {
            digit = true;
        } else if (c == '-' && digit) {
            ++fields;
            digit = false;
        } else {
            return false;
        }
    }
    return digit && fields == 3;
}

}  // namespace agentjail::plan
