// SPDX-License-Identifier: Apache-2.0
// The built-in policies: the files of policies/ embedded at build time, listed
// with the description each file gives itself.
#include "policy/embedded.hpp"
#include "policy/internal.hpp"
#include "util/strings.hpp"

namespace agentjail::policy {

const std::vector<Builtin>& builtins() {
    // Built once, from what the build read off each file: no TOML is parsed here, so
    // a run parses only the policy it loads and its `extends` chain. A built-in that
    // does not parse fails loudly in load() and in the unit tests that load every one
    // (which also check these fields against the parser's).
    static const std::vector<Builtin> all = [] {
        std::vector<Builtin> out;
        for (const auto& e : embedded_policies()) {
            // policies/net-*.toml are network presets (--net-preset), not policies.
            if (std::string_view(e.name).substr(0, 4) == "net-") continue;
            Builtin b{e.name, e.description, e.text, {}};
            std::string_view cmds = e.agent_commands;
            while (!cmds.empty()) {
                size_t sp = cmds.find(' ');
                b.agent_commands.emplace_back(cmds.substr(0, sp));
                cmds = sp == std::string_view::npos ? std::string_view() : cmds.substr(sp + 1);
            }
            out.push_back(std::move(b));
        }
        return out;
    }();
    return all;
}

const Builtin* preset_for_command(const std::string& command) {
    std::string_view base = util::base_name(command);
    if (base.empty()) return nullptr;
    for (const auto& b : builtins())
        for (const auto& c : b.agent_commands)
            if (c == base) return &b;
    return nullptr;
}

namespace detail {

const Builtin* find_builtin(std::string_view name) {
    for (const auto& b : builtins())
        if (b.name == name) return &b;
    return nullptr;
}

std::string builtin_names() {
    std::string s;
    for (const auto& b : builtins()) s += (s.empty() ? "" : ", ") + b.name;
    return s;
}

}  // namespace detail
}  // namespace agentjail::policy
