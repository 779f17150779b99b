// SPDX-License-Identifier: Apache-2.0
// The result record that `agentjail --json` prints as the last line of stdout, parsed
// for the limits tests (a null json when there is none or it does not parse).
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

namespace ajit {

inline nlohmann::json record_of(const ajtest::RunOutput& r) {
    auto ls = ajtest::lines(r.out);
    if (ls.empty()) return nlohmann::json();
    auto j = nlohmann::json::parse(ls.back(), nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j;
}

}  // namespace ajit
