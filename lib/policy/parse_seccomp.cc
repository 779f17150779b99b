// SPDX-License-Identifier: Apache-2.0
// The TOML parser, [seccomp]: the default action, nested sandboxes, the log and each [[seccomp.rule]].
#include "policy/parser.hpp"

#include "base/units.hpp"

namespace agentjail::policy::detail {

// [seccomp]: only the shape is checked here; lib/seccomp resolves names, actions and
// conditions when it compiles the filter, and reports errors at the origins kept here.
bool Parser::seccomp(const toml::table& t) {
    out_.has_seccomp = true;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "seccomp." + std::string(k);
        const toml::node& n = *e.node;
        std::string s;
        if (k == "default") {
            if (!string(n, key, s)) return false;
            out_.seccomp_default = Located<std::string>{s, origin(n.source(), key)};
        } else if (k == "nested_sandboxes") {
            if (!boolean(n, key, out_.seccomp_nested)) return false;
        } else if (k == "log") {
            if (!log_path(n, key, out_.seccomp_log)) return false;
        } else if (k == "rule") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i)
                if (!seccomp_rule(*a->get(i), key + "[" + std::to_string(i) + "]")) return false;
        } else {
            return unknown_key(e, key, seccomp_keys);
        }
    }
    return true;
}

bool Parser::seccomp_rule(const toml::node& n, const std::string& key) {
    const toml::table* t = nullptr;
    if (!table_of(n, key, t)) return false;
    SeccompRule rule;
    rule.origin = origin(t->source(), key);
    bool have_syscalls = false, have_action = false;
    auto strings = [&](const toml::node& v, const std::string& sub,
                       std::vector<Located<std::string>>& out, bool need_one) {
        const toml::array* a = nullptr;
        if (!array_of(v, sub, a)) return false;
        if (need_one && a->empty()) return fail(v.source(), sub, "expected at least one system call");
        for (size_t i = 0; i < a->size(); ++i) {
            std::string item_key = sub + "[" + std::to_string(i) + "]";
            std::string s;
            if (!string(*a->get(i), item_key, s)) return false;
            out.push_back({s, origin(a->get(i)->source(), item_key)});
        }
        return true;
    };
    for (const auto& e : entries(*t)) {
        std::string_view k = e.key->str();
        std::string sub = key + "." + std::string(k);
        const toml::node& v = *e.node;
        std::string s;
        if (k == "syscalls") {
            if (!strings(v, sub, rule.syscalls, true)) return false;
            have_syscalls = true;
        } else if (k == "action") {
            if (!string(v, sub, s)) return false;
            rule.action = Located<std::string>{s, origin(v.source(), sub)};
            have_action = true;
        } else if (k == "args") {
            if (!strings(v, sub, rule.args, false)) return false;
        } else if (k == "why") {
            if (!string(v, sub, rule.why)) return false;
        } else if (k == "unless") {
            size_t which = 0;
            if (!choice(v, sub, {"nested_sandboxes"}, which)) return false;
            rule.unless_nested = true;
        } else if (k == "record") {
            std::optional<Located<bool>> b;
            if (!boolean(v, sub, b)) return false;
            rule.record = b->value;
            rule.record_origin = b->origin;
        } else {
            return unknown_key(e, sub, seccomp_rule_keys);
        }
    }
    if (!have_syscalls) return fail(t->source(), key, "expected a rule with 'syscalls' and 'action'");
    if (!have_action) return fail(t->source(), key, "expected a rule with 'syscalls' and 'action'");
    out_.seccomp_rules.push_back(std::move(rule));
    return true;
}

}  // namespace agentjail::policy::detail
