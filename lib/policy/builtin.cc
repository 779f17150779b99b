// SPDX-License-Identifier: Apache-2.0
// The built-in policies: the files of policies/ embedded at build time, listed
// with the description each file gives itself.
#include "policy/embedded.hpp"
#include "policy/internal.hpp"
#include "util/strings.hpp"

namespace agentjail::policy {

const std::vector<Builtin>& builtins() {
    // Built once; the embedded texts never change at run time. A built-in that does
    // not parse gets no description here and fails loudly in load() (and in the
    // unit tests that load every built-in).
    static const std::vector<Builtin> all = [] {
        std::vector<Builtin> out;
        for (const auto& e : embedded_policies()) {
            // policies/net-*.toml are network presets (--net-preset), not policies.
            if (std::string_view(e.name).substr(0, 4) == "net-") continue;
            Builtin b{e.name, {}, e.text, {}};
            auto layer = detail::parse_layer(b.text, b.name + ".toml");
            if (layer && layer->description) b.description = layer->description->value;
            if (layer && layer->agent_commands)
                for (const auto& c : *layer->agent_commands) b.agent_commands.push_back(c.value);
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
