// SPDX-License-Identifier: Apache-2.0
// ASCII helpers of the HTTP and WebSocket code: header names and tokens compare
// without regard to case (RFC 9110 section 5.1), and only in ASCII.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace agentjail::net {

inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace agentjail::net
