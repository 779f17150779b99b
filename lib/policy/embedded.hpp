// SPDX-License-Identifier: Apache-2.0
// The built-in policy files, embedded at build time from policies/*.toml.
#pragma once

#include <string>
#include <vector>

namespace agentjail::policy {

struct EmbeddedPolicy {
    const char* name;  // file name without .toml
    const char* text;  // the TOML text
};

const std::vector<EmbeddedPolicy>& embedded_policies();

}  // namespace agentjail::policy
