// SPDX-License-Identifier: Apache-2.0
// `agentjail policies`: lists the built-in policies with their descriptions.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "policy/policy.hpp"
#include "util/strings.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>

namespace agentjail::cli {

std::string policies_help() {
    return "agentjail policies: list the built-in policies and yours (use one with --policy\n"
           "NAME; 'agentjail explain --policy NAME' shows what it does). Yours are the\n"
           "NAME.toml files in $XDG_CONFIG_HOME/agentjail/policies (default\n"
           "~/.config/agentjail/policies), found by name by --policy and extends.\n"
           "\nUsage:\n  agentjail policies\n\nExamples:\n  agentjail policies\n"
           "  agentjail explain --policy minimal -- /bin/true\n";
}

int cmd_policies(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("policies", policies_help(), args, parsed, 0)) return *status;
    size_t width = 0;
    for (const auto& b : policy::builtins()) width = std::max(width, b.name.size());
    for (const auto& b : policy::builtins())
        std::printf("%-*s  %s\n", static_cast<int>(width), b.name.c_str(), b.description.c_str());
    // Yours, by name like the built-ins (a built-in's name stays the built-in).
    const std::string dir = policy::user_policy_dir();
    std::vector<std::string> mine;
    if (DIR* d = dir.empty() ? nullptr : ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n.size() > 5 && n.substr(n.size() - 5) == ".toml" && policy::user_policy_file(n.substr(0, n.size() - 5)))
                mine.push_back(n.substr(0, n.size() - 5));
        }
        ::closedir(d);
    }
    std::sort(mine.begin(), mine.end());
    if (!mine.empty()) std::printf("\nyours (%s):\n", util::printable(dir).c_str());
    for (const auto& n : mine) {
        bool shadowed = std::any_of(policy::builtins().begin(), policy::builtins().end(),
                                    [&](const policy::Builtin& b) { return b.name == n; });
        std::printf("%s%s\n", util::printable(n).c_str(),
                    shadowed ? "  (not used: the built-in of this name is; rename yours)" : "");
    }
    return 0;
}

}  // namespace agentjail::cli
