// SPDX-License-Identifier: Apache-2.0
// The built-in policy files, embedded at build time from policies/*.toml.
#pragma once

#include <string>
#include <vector>

namespace agentjail::policy {

struct EmbeddedPolicy {
    const char* name;  // file name without .toml
    const char* text;  // the TOML text
    // Read from the text at build time (cmake/embed_policies.cmake), so that listing
    // the built-ins or choosing an agent preset parses none of them:
    const char* description;     // the top-level `description`, "" if none
    const char* agent_commands;  // [agent] commands, space-separated, "" if none
};

const std::vector<EmbeddedPolicy>& embedded_policies();

}  // namespace agentjail::policy
