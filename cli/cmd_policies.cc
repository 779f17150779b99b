// SPDX-License-Identifier: Apache-2.0
// `agentjail policies`: lists the built-in policies with their descriptions.
#include "commands.hpp"
#include "options.hpp"

#include "policy/policy.hpp"

#include <cstdio>

namespace agentjail::cli {

int cmd_policies(const std::vector<std::string>& args) {
    std::vector<std::string> operands;
    auto help = parse_simple("policies", args, "", operands);
    if (!help) return report(help.error());
    if (*help) {
        std::fputs(
            "agentjail policies: list the built-in policies (use one with --policy NAME;\n"
            "'agentjail explain --policy NAME' shows what it does).\n"
            "\nUsage:\n  agentjail policies\n\nExamples:\n  agentjail policies\n"
            "  agentjail explain --policy minimal -- /bin/true\n",
            stdout);
        return 0;
    }
    size_t width = 0;
    for (const auto& b : policy::builtins()) width = std::max(width, b.name.size());
    for (const auto& b : policy::builtins())
        std::printf("%-*s  %s\n", static_cast<int>(width), b.name.c_str(), b.description.c_str());
    return 0;
}

}  // namespace agentjail::cli
