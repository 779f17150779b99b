// SPDX-License-Identifier: Apache-2.0
// The TOML parser: one policy file's text into a Layer, checking every key and
// value against docs/policy-format.md. toml++ stays inside this file.
#include "policy/internal.hpp"

#include "base/units.hpp"

#include "net/secret_source.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace agentjail::policy::detail {
namespace {

const std::vector<std::string_view> filesystem_keys = {"ro",        "rw",   "tmpfs", "hide",
                                                       "workspace", "home", "proc",  "dev"};
const std::vector<std::string_view> environment_keys = {"allow", "deny", "set"};
const std::vector<std::string_view> process_keys = {"hostname", "cwd", "die_with_parent", "allow_root"};
const std::vector<std::string_view> namespaces_keys = {"net", "ipc", "uts", "cgroup"};
const std::vector<std::string_view> seccomp_keys = {"default", "nested_sandboxes", "log", "rule"};
const std::vector<std::string_view> log_keys = {"allow_in_sandbox"};
const std::vector<std::string_view> workspace_keys = {"mode", "protect", "unprotect"};
const std::vector<std::string_view> agent_keys = {"name", "commands", "state", "git_identity", "args", "notes"};
const std::vector<std::string_view> seccomp_rule_keys = {"syscalls", "action", "args", "why",
                                                         "unless",   "record"};
const std::pair<std::string_view, const std::vector<std::string_view>&> section_keys[] = {
    {"filesystem", filesystem_keys}, {"environment", environment_keys}, {"process", process_keys},
    {"namespaces", namespaces_keys}, {"seccomp", seccomp_keys},         {"log", log_keys},
    {"workspace", workspace_keys}, {"agent", agent_keys}};

std::string type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::table: return "a table";
        case toml::node_type::array: return "an array";
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a floating-point number";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        case toml::node_type::none: break;
    }
    return "nothing";
}

// A key and its value, in document order (toml::table is ordered by key name,
// and the first error a user sees should be the first one in the file).
struct Entry {
    const toml::key* key;
    const toml::node* node;
};

std::vector<Entry> entries(const toml::table& t) {
    std::vector<Entry> out;
    for (auto&& [k, v] : t) out.push_back({&k, &v});
    std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
        const auto& pa = a.key->source().begin;
        const auto& pb = b.key->source().begin;
        return std::pair(pa.line, pa.column) < std::pair(pb.line, pb.column);
    });
    return out;
}

class Parser {
public:
    Parser(const std::string& file, Layer& out) : file_(file), out_(out) {}

    // Each step returns false after recording the first error.
    bool root(const toml::table& t);
    std::optional<Error> take_error() { return std::move(error_); }

private:
    Origin origin(const toml::source_region& r, std::string key) const {
        return Origin{file_, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column),
                      std::move(key)};
    }
    bool fail(const toml::source_region& r, const std::string& key, const std::string& msg) {
        if (!error_) error_ = error_at(origin(r, key), msg);
        return false;
    }
    bool expected(const toml::node& n, const std::string& key, const std::string& what) {
        return fail(n.source(), key, "expected " + what + ", got " + type_name(n));
    }
    bool unknown_key(const Entry& e, const std::string& path,
                     const std::vector<std::string_view>& known) {
        std::string msg = "unknown key";
        std::string near = closest_key(e.key->str(), known);
        if (!near.empty()) {
            msg += "; did you mean '" + near + "'?";
        } else {
            msg += " (expected one of: ";
            for (size_t i = 0; i < known.size(); ++i)
                msg += (i ? ", " : "") + std::string(known[i]);
            msg += ")";
        }
        return fail(e.key->source(), path, msg);
    }

    bool table_of(const toml::node& n, const std::string& key, const toml::table*& t) {
        t = n.as_table();
        return t ? true : expected(n, key, "a table");
    }
    bool array_of(const toml::node& n, const std::string& key, const toml::array*& a) {
        a = n.as_array();
        return a ? true : expected(n, key, "an array");
    }
    bool boolean(const toml::node& n, const std::string& key, std::optional<Located<bool>>& out) {
        const auto* b = n.as_boolean();
        if (!b) return expected(n, key, "true or false");
        out = Located<bool>{b->get(), origin(n.source(), key)};
        return true;
    }
    bool string(const toml::node& n, const std::string& key, std::string& out) {
        const auto* s = n.as_string();
        if (!s) return expected(n, key, "a string");
        out = s->get();
        if (out.empty()) return fail(n.source(), key, "expected a non-empty string");
        return true;
    }
    bool checked(const toml::node& n, const std::string& key, std::string& out,
                 std::string (*check)(std::string_view)) {
        if (!string(n, key, out)) return false;
        std::string problem = check(out);
        return problem.empty() ? true : fail(n.source(), key, problem);
    }
    // A log file's path, checked like any path; "" is meaningful (no log file, the
    // attempts are still counted).
    bool log_path(const toml::node& n, const std::string& key, std::optional<Located<std::string>>& out) {
        const auto* str = n.as_string();
        if (!str) return expected(n, key, "a path string");
        if (!str->get().empty()) {
            std::string problem = check_path(str->get());
            if (!problem.empty()) return fail(n.source(), key, problem);
        }
        out = Located<std::string>{str->get(), origin(n.source(), key)};
        return true;
    }
    // A string that must be one of `choices`; returns its index through `which`.
    bool choice(const toml::node& n, const std::string& key,
                const std::vector<std::string_view>& choices, size_t& which) {
        std::string list;
        for (size_t i = 0; i < choices.size(); ++i) {
            if (i) list += (i + 1 == choices.size()) ? " or " : ", ";
            list += "\"" + std::string(choices[i]) + "\"";
        }
        const auto* s = n.as_string();
        if (!s) return expected(n, key, list);
        auto it = std::find(choices.begin(), choices.end(), std::string_view(s->get()));
        if (it == choices.end())
            return fail(n.source(), key, "expected " + list + ", got \"" + s->get() + "\"");
        which = static_cast<size_t>(it - choices.begin());
        return true;
    }

    bool extends(const toml::node& n);
    bool filesystem(const toml::table& t);
    bool mounts(const toml::node& n, const std::string& key, std::vector<MountRule>& out);
    bool mount_table(const toml::table& t, const std::string& key, MountRule& rule);
    bool tmpfs(const toml::node& n, const std::string& key);
    bool environment(const toml::table& t);
    bool patterns(const toml::node& n, const std::string& key,
                  std::vector<Located<std::string>>& out);
    bool process(const toml::table& t);
    bool namespaces(const toml::table& t);
    bool log(const toml::table& t);
    bool seccomp(const toml::table& t);
    bool seccomp_rule(const toml::node& n, const std::string& key);
    bool limits(const toml::table& t);
    bool workspace(const toml::table& t);
    bool protect_list(const toml::node& n, const std::string& key, std::vector<ProtectRule>& out);
    bool network(const toml::table& t);
    bool host_rule(const toml::node& n, const std::string& key, HostRule& rule);
    bool secrets(const toml::table& t);
    bool agent(const toml::table& t);
    bool strings(const toml::node& n, const std::string& key, std::vector<Located<std::string>>& out,
                 std::string (*check)(std::string_view));

    const std::string& file_;
    Layer& out_;
    std::optional<Error> error_;
};

bool Parser::root(const toml::table& t) {
    static const std::vector<std::string_view> known = {
        "description", "extends", "filesystem", "environment", "process", "namespaces",
        "seccomp",     "limits",  "network",    "workspace",   "secrets", "log", "agent"};
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        const toml::table* sub = nullptr;
        if (k == "description") {
            std::string s;
            if (!string(*e.node, "description", s)) return false;
            out_.description = Located<std::string>{s, origin(e.node->source(), "description")};
        } else if (k == "extends") {
            if (!extends(*e.node)) return false;
        } else if (k == "filesystem") {
            if (!table_of(*e.node, "filesystem", sub) || !filesystem(*sub)) return false;
        } else if (k == "environment") {
            if (!table_of(*e.node, "environment", sub) || !environment(*sub)) return false;
        } else if (k == "process") {
            if (!table_of(*e.node, "process", sub) || !process(*sub)) return false;
        } else if (k == "namespaces") {
            if (!table_of(*e.node, "namespaces", sub) || !namespaces(*sub)) return false;
        } else if (k == "seccomp") {
            if (!table_of(*e.node, "seccomp", sub) || !seccomp(*sub)) return false;
        } else if (k == "limits") {
            if (!table_of(*e.node, "limits", sub) || !limits(*sub)) return false;
        } else if (k == "network") {
            if (!table_of(*e.node, "network", sub) || !network(*sub)) return false;
        } else if (k == "secrets") {
            if (!table_of(*e.node, "secrets", sub) || !secrets(*sub)) return false;
        } else if (k == "log") {
            if (!table_of(*e.node, "log", sub) || !log(*sub)) return false;
        } else if (k == "agent") {
            if (!table_of(*e.node, "agent", sub) || !agent(*sub)) return false;
        } else if (k == "workspace") {
            if (!e.node->as_table())
                return fail(e.node->source(), "workspace",
                            "expected a table, got " + type_name(*e.node) +
                                " (the workspace's access is set with filesystem.workspace, its "
                                "mode with [workspace] mode)");
            if (!table_of(*e.node, "workspace", sub) || !workspace(*sub)) return false;
        } else {
            // A section's key written at the top level ("ro = [...]" without
            // [filesystem]) is a common slip; name where it belongs.
            for (const auto& [section, keys] : section_keys) {
                if (std::find(keys.begin(), keys.end(), k) != keys.end())
                    return fail(e.key->source(), std::string(k),
                                "unknown key; did you mean '" + std::string(section) + "." +
                                    std::string(k) + "'?");
            }
            return unknown_key(e, std::string(k), known);
        }
    }
    return true;
}

bool Parser::extends(const toml::node& n) {
    auto one = [&](const toml::node& v, const std::string& key) {
        std::string s;
        if (!v.is_string()) return expected(v, key, "a policy name or a path string");
        if (!string(v, key, s)) return false;
        out_.extends.push_back({s, origin(v.source(), key)});
        return true;
    };
    if (n.is_string()) return one(n, "extends");
    const auto* a = n.as_array();
    if (!a) return expected(n, "extends", "a policy name, a path or an array of them");
    for (size_t i = 0; i < a->size(); ++i)
        if (!one(*a->get(i), "extends[" + std::to_string(i) + "]")) return false;
    return true;
}

bool Parser::workspace(const toml::table& t) {
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "workspace." + std::string(k);
        const toml::node& n = *e.node;
        if (k == "mode") {
            size_t which = 0;
            if (!choice(n, key, {"direct", "clone", "overlay"}, which)) return false;
            static constexpr WorkspaceMode modes[] = {WorkspaceMode::direct, WorkspaceMode::clone,
                                                      WorkspaceMode::overlay};
            out_.workspace_mode = Located<WorkspaceMode>{modes[which], origin(n.source(), key)};
        } else if (k == "protect") {
            if (!protect_list(n, key, out_.protect)) return false;
        } else if (k == "unprotect") {
            if (!protect_list(n, key, out_.unprotect)) return false;
        } else {
            return unknown_key(e, key, workspace_keys);
        }
    }
    return true;
}

bool Parser::protect_list(const toml::node& n, const std::string& key, std::vector<ProtectRule>& out) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        std::string item_key = key + "[" + std::to_string(i) + "]";
        std::string s;
        if (!checked(*a->get(i), item_key, s, check_protect_pattern)) return false;
        out.push_back({s, origin(a->get(i)->source(), item_key)});
    }
    return true;
}

bool Parser::filesystem(const toml::table& t) {
    const auto& known = filesystem_keys;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "filesystem." + std::string(k);
        const toml::node& n = *e.node;
        size_t which = 0;
        if (k == "ro") {
            if (!mounts(n, key, out_.ro)) return false;
        } else if (k == "rw") {
            if (!mounts(n, key, out_.rw)) return false;
        } else if (k == "tmpfs") {
            if (!tmpfs(n, key)) return false;
        } else if (k == "hide") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                std::string item_key = key + "[" + std::to_string(i) + "]";
                std::string s;
                if (!checked(*a->get(i), item_key, s, check_path)) return false;
                out_.hide.push_back({s, origin(a->get(i)->source(), item_key)});
            }
        } else if (k == "workspace") {
            if (!choice(n, key, {"rw", "ro", "none"}, which)) return false;
            static constexpr WorkspaceAccess modes[] = {WorkspaceAccess::rw, WorkspaceAccess::ro,
                                                        WorkspaceAccess::none};
            out_.workspace = Located<WorkspaceAccess>{modes[which], origin(n.source(), key)};
        } else if (k == "home") {
            if (!choice(n, key, {"tmpfs", "none"}, which)) return false;
            out_.private_home = Located<bool>{which == 0, origin(n.source(), key)};
        } else if (k == "proc") {
            if (!boolean(n, key, out_.proc)) return false;
        } else if (k == "dev") {
            if (!choice(n, key, {"minimal", "none"}, which)) return false;
            out_.dev = Located<bool>{which == 0, origin(n.source(), key)};
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

bool Parser::mounts(const toml::node& n, const std::string& key, std::vector<MountRule>& out) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& item = *a->get(i);
        std::string item_key = key + "[" + std::to_string(i) + "]";
        MountRule rule;
        rule.origin = origin(item.source(), item_key);
        if (item.is_string()) {
            if (!checked(item, item_key, rule.src, check_path)) return false;
        } else if (const auto* t = item.as_table()) {
            if (!mount_table(*t, item_key, rule)) return false;
        } else {
            return expected(item, item_key, "a path string or a table");
        }
        out.push_back(std::move(rule));
    }
    return true;
}

bool Parser::mount_table(const toml::table& t, const std::string& key, MountRule& rule) {
    static const std::vector<std::string_view> known = {"path", "src", "dst", "optional"};
    const toml::key* path_key = nullptr;
    const toml::key* src_key = nullptr;
    const toml::key* dst_key = nullptr;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string sub = key + "." + std::string(k);
        if (k == "path" || k == "src") {
            if (!checked(*e.node, sub, rule.src, check_path)) return false;
            (k == "path" ? path_key : src_key) = e.key;
        } else if (k == "dst") {
            if (!checked(*e.node, sub, rule.dst, check_path)) return false;
            dst_key = e.key;
        } else if (k == "optional") {
            std::optional<Located<bool>> b;
            if (!boolean(*e.node, sub, b)) return false;
            rule.optional = b->value;
        } else {
            return unknown_key(e, sub, known);
        }
    }
    // `path` means "the same path inside"; mixing it with src/dst would leave
    // it unclear which of the two the user meant.
    if (path_key && src_key)
        return fail(src_key->source(), key + ".src", "give either 'path' or 'src', not both");
    if (path_key && dst_key)
        return fail(dst_key->source(), key + ".dst",
                    "'dst' goes with 'src' (use 'src' and 'dst' to bind elsewhere inside)");
    if (!path_key && !src_key)
        return fail(t.source(), key, "expected a table with 'path' or 'src' (and 'dst')");
    return true;
}

bool Parser::tmpfs(const toml::node& n, const std::string& key) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& item = *a->get(i);
        std::string item_key = key + "[" + std::to_string(i) + "]";
        TmpfsRule rule;
        rule.origin = origin(item.source(), item_key);
        if (item.is_string()) {
            if (!checked(item, item_key, rule.path, check_path)) return false;
        } else if (const auto* t = item.as_table()) {
            bool have_path = false;
            for (const auto& e : entries(*t)) {
                std::string_view k = e.key->str();
                std::string sub = item_key + "." + std::string(k);
                if (k == "path") {
                    if (!checked(*e.node, sub, rule.path, check_path)) return false;
                    have_path = true;
                } else if (k == "size") {
                    if (const auto* num = e.node->as_integer()) {
                        if (num->get() <= 0)
                            return fail(e.node->source(), sub, "expected a size greater than 0");
                        rule.size_bytes = static_cast<std::uint64_t>(num->get());
                    } else if (const auto* s = e.node->as_string()) {
                        auto size = units::parse_size(s->get());
                        if (!size) return fail(e.node->source(), sub, size.error().message());
                        if (*size == 0)
                            return fail(e.node->source(), sub, "expected a size greater than 0");
                        rule.size_bytes = *size;
                    } else {
                        return expected(*e.node, sub, "a size such as \"256M\" or a number of bytes");
                    }
                } else {
                    return unknown_key(e, sub, {"path", "size"});
                }
            }
            if (!have_path) return fail(t->source(), item_key, "expected a table with 'path'");
        } else {
            return expected(item, item_key, "a path string or a table");
        }
        out_.tmpfs.push_back(std::move(rule));
    }
    return true;
}

bool Parser::environment(const toml::table& t) {
    const auto& known = environment_keys;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "environment." + std::string(k);
        if (k == "allow") {
            if (!patterns(*e.node, key, out_.env_allow)) return false;
        } else if (k == "deny") {
            if (!patterns(*e.node, key, out_.env_deny)) return false;
        } else if (k == "set") {
            const toml::table* set = nullptr;
            if (!table_of(*e.node, key, set)) return false;
            for (const auto& v : entries(*set)) {
                std::string name(v.key->str());
                std::string sub = key + "." + name;
                std::string problem = check_env_name(name);
                if (!problem.empty()) return fail(v.key->source(), sub, problem);
                const auto* s = v.node->as_string();
                if (!s) return expected(*v.node, sub, "a string");
                // A NUL would silently cut the value short in the command's environ.
                if (s->get().find('\0') != std::string::npos)
                    return fail(v.node->source(), sub, "a value may not contain a NUL character");
                // An empty value is meaningful here (FOO= sets FOO to ""), so it is allowed.
                out_.env_set.push_back({name, s->get(), origin(v.node->source(), sub)});
            }
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

bool Parser::patterns(const toml::node& n, const std::string& key,
                      std::vector<Located<std::string>>& out) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        std::string item_key = key + "[" + std::to_string(i) + "]";
        std::string s;
        if (!checked(*a->get(i), item_key, s, check_env_pattern)) return false;
        out.push_back({s, origin(a->get(i)->source(), item_key)});
    }
    return true;
}

bool Parser::process(const toml::table& t) {
    const auto& known = process_keys;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "process." + std::string(k);
        std::string s;
        if (k == "hostname") {
            if (!checked(*e.node, key, s, check_hostname)) return false;
            out_.hostname = Located<std::string>{s, origin(e.node->source(), key)};
        } else if (k == "cwd") {
            if (!checked(*e.node, key, s, check_path)) return false;
            out_.cwd = Located<std::string>{s, origin(e.node->source(), key)};
        } else if (k == "die_with_parent") {
            if (!boolean(*e.node, key, out_.die_with_parent)) return false;
        } else if (k == "allow_root") {
            if (!boolean(*e.node, key, out_.allow_root)) return false;
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

bool Parser::strings(const toml::node& n, const std::string& key, std::vector<Located<std::string>>& out,
                     std::string (*check)(std::string_view)) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        std::string item_key = key + "[" + std::to_string(i) + "]";
        std::string s;
        if (!checked(*a->get(i), item_key, s, check)) return false;
        out.push_back({s, origin(a->get(i)->source(), item_key)});
    }
    return true;
}

// [agent] (docs/agents.md): the preset's agent, its state directory, the git identity.
bool Parser::agent(const toml::table& t) {
    auto command_name = [](std::string_view s) -> std::string {
        if (s.empty()) return "expected a command name, got an empty string";
        if (s.find('/') != std::string_view::npos || s == "." || s == "..")
            return "expected a command's name without a directory (\"claude\"), got '" + std::string(s) + "'";
        return {};
    };
    auto any_text = [](std::string_view s) -> std::string {
        if (s.find('\0') != std::string_view::npos) return "may not contain a NUL character";
        return {};
    };
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "agent." + std::string(k);
        const toml::node& n = *e.node;
        std::string s;
        if (k == "name") {
            if (!string(n, key, s)) return false;
            out_.agent_name = Located<std::string>{s, origin(n.source(), key)};
        } else if (k == "commands") {
            out_.agent_commands.emplace();
            if (!strings(n, key, *out_.agent_commands, +command_name)) return false;
        } else if (k == "state") {
            if (!checked(n, key, s, check_state_name)) return false;
            out_.agent_state = Located<std::string>{s, origin(n.source(), key)};
        } else if (k == "git_identity") {
            if (!boolean(n, key, out_.agent_git_identity)) return false;
        } else if (k == "args") {
            out_.agent_args.emplace();
            if (!strings(n, key, *out_.agent_args, +any_text)) return false;
        } else if (k == "notes") {
            if (!strings(n, key, out_.agent_notes, +any_text)) return false;
        } else {
            return unknown_key(e, key, agent_keys);
        }
    }
    return true;
}

// [log]: where the files agentjail writes on the host may be (sys/host_file.hpp).
bool Parser::log(const toml::table& t) {
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "log." + std::string(k);
        if (k == "allow_in_sandbox") {
            if (!boolean(*e.node, key, out_.log_in_sandbox)) return false;
        } else {
            return unknown_key(e, key, log_keys);
        }
    }
    return true;
}

bool Parser::namespaces(const toml::table& t) {
    const auto& known = namespaces_keys;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "namespaces." + std::string(k);
        if (k == "net") {
            if (!boolean(*e.node, key, out_.ns_net)) return false;
        } else if (k == "ipc") {
            if (!boolean(*e.node, key, out_.ns_ipc)) return false;
        } else if (k == "uts") {
            if (!boolean(*e.node, key, out_.ns_uts)) return false;
        } else if (k == "cgroup") {
            if (!boolean(*e.node, key, out_.ns_cgroup)) return false;
        } else if (k == "user" || k == "mount" || k == "pid") {
            // These three are what the sandbox is made of; turning one off is not
            // a policy choice agentjail offers.
            return fail(e.key->source(), key,
                        "the " + std::string(k) + " namespace is always new and cannot be configured");
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

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

// [limits]: sizes and durations as strings with units ("2G", "30m") or plain numbers
// (bytes, seconds), "max" to lift a limit of a base layer; set_limit() checks them.
bool Parser::limits(const toml::table& t) {
    for (const auto& e : entries(t)) {
        std::string k(e.key->str());
        std::string key = "limits." + k;
        const toml::node& n = *e.node;
        const auto& known = limits_keys();
        if (std::find(known.begin(), known.end(), k) == known.end()) return unknown_key(e, key, known);
        std::string text;
        if (limit_is_boolean(k)) {
            const auto* b = n.as_boolean();
            if (!b) return expected(n, key, "true or false");
            text = b->get() ? "true" : "false";
        } else if (const auto* s = n.as_string()) {
            text = s->get();
        } else if (const auto* i = n.as_integer()) {
            if (i->get() < 0) return fail(n.source(), key, "expected a value of 0 or more");
            text = std::to_string(i->get());
        } else if (const auto* f = n.as_floating_point()) {
            if (!(f->get() >= 0)) return fail(n.source(), key, "expected a value of 0 or more");
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.9g", f->get());
            text = buf;
        } else {
            return expected(n, key, "a string such as \"2G\" or \"30m\", a number, or \"max\"");
        }
        Origin o = origin(n.source(), key);
        Policy scratch;
        if (auto r = set_limit(scratch, k, text, o); !r) {
            if (!error_) error_ = std::move(r).error();
            return false;
        }
        out_.limits.push_back({k, text, o});
    }
    return true;
}

// [network]: the mode, host patterns (checked here, so `agentjail check` finds a
// bad one), pins, the log and the connection limit (docs/network.md).
bool Parser::network(const toml::table& t) {
    static const std::vector<std::string_view> known = {"mode", "allow", "deny", "hosts", "log",
                                                        "max_connections", "gateways", "publish"};
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "network." + std::string(k);
        const toml::node& n = *e.node;
        if (k == "mode") {
            size_t which = 0;
            if (!choice(n, key, {"none", "proxy", "host"}, which)) return false;
            static constexpr NetMode modes[] = {NetMode::none, NetMode::proxy, NetMode::host};
            out_.net_mode = Located<NetMode>{modes[which], origin(n.source(), key)};
        } else if (k == "allow" || k == "deny") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                std::string item_key = key + "[" + std::to_string(i) + "]";
                HostRule rule;
                if (!host_rule(*a->get(i), item_key, rule)) return false;
                (k == "allow" ? out_.net_allow : out_.net_deny).push_back(std::move(rule));
            }
        } else if (k == "hosts") {
            const toml::table* hosts = nullptr;
            if (!table_of(n, key, hosts)) return false;
            for (const auto& h : entries(*hosts)) {
                std::string name(h.key->str());
                std::string sub = key + "." + name;
                std::string problem = check_pin_name(name);
                if (!problem.empty()) return fail(h.key->source(), sub, problem);
                std::string address;
                if (!checked(*h.node, sub, address, check_pin_address)) return false;
                out_.net_hosts.push_back({name, address, origin(h.node->source(), sub)});
            }
        } else if (k == "log") {
            if (!log_path(n, key, out_.net_log)) return false;
        } else if (k == "gateways") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                GatewayRule g;
                std::string item_key = key + "[" + std::to_string(i) + "]";
                if (!checked(*a->get(i), item_key, g.var, check_env_name)) return false;
                g.origin = origin(a->get(i)->source(), item_key);
                out_.net_gateways.push_back(std::move(g));
            }
        } else if (k == "publish") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                std::string item_key = key + "[" + std::to_string(i) + "]";
                std::string spec;
                if (!string(*a->get(i), item_key, spec)) return false;
                PublishRule pr;
                std::string problem = parse_publish(spec, pr.port, pr.host_port);
                if (!problem.empty()) return fail(a->get(i)->source(), item_key, problem);
                pr.origin = origin(a->get(i)->source(), item_key);
                out_.net_publish.push_back(std::move(pr));
            }
        } else if (k == "max_connections") {
            const auto* i = n.as_integer();
            if (!i) return expected(n, key, "a number of connections");
            if (i->get() < 1 || i->get() > 65536)
                return fail(n.source(), key, "expected a number from 1 to 65536");
            out_.net_max_connections = Located<std::uint64_t>{static_cast<std::uint64_t>(i->get()),
                                                              origin(n.source(), key)};
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

// One allow/deny entry: a host pattern, or { host = PATTERN, methods = [...],
// paths = [...] } for a rule that applies to some requests only.
bool Parser::host_rule(const toml::node& n, const std::string& key, HostRule& rule) {
    rule.origin = origin(n.source(), key);
    if (!n.is_table()) return checked(n, key, rule.pattern, check_host_pattern);
    const toml::table& t = *n.as_table();
    for (const auto& f : entries(t)) {
        std::string_view k = f.key->str();
        std::string sub = key + "." + std::string(k);
        if (k == "host") {
            if (!checked(*f.node, sub, rule.pattern, check_host_pattern)) return false;
        } else if (k == "methods" || k == "paths") {
            const toml::array* a = nullptr;
            if (!array_of(*f.node, sub, a)) return false;
            if (a->empty()) return fail(f.node->source(), sub, "expected at least one entry (leave the key out for all)");
            for (size_t i = 0; i < a->size(); ++i) {
                std::string v;
                if (!checked(*a->get(i), sub + "[" + std::to_string(i) + "]", v,
                             k == "methods" ? check_method : check_path_glob))
                    return false;
                (k == "methods" ? rule.methods : rule.paths).push_back(v);
            }
        } else {
            return unknown_key(f, sub, {"host", "methods", "paths"});
        }
    }
    if (rule.pattern.empty()) return fail(n.source(), key, "expected a table with 'host' (and 'methods' or 'paths')");
    return true;
}

// [secrets]: NAME = { source = SOURCE | [SOURCE, ...], hosts = ["api.example.com"],
// headers = ["X-Goog-Api-Key"], optional = true, expires = "json.path", help = "..." }.
bool Parser::secrets(const toml::table& t) {
    for (const auto& e : entries(t)) {
        std::string name(e.key->str());
        std::string key = "secrets." + name;
        std::string problem = check_env_name(name);
        if (!problem.empty()) return fail(e.key->source(), key, problem);
        const toml::table* st = nullptr;
        if (!table_of(*e.node, key, st)) return false;
        SecretRule rule;
        rule.name = name;
        rule.origin = origin(e.node->source(), key);
        bool have_source = false;
        const toml::node* expires_node = nullptr;
        for (const auto& f : entries(*st)) {
            std::string_view k = f.key->str();
            std::string sub = key + "." + std::string(k);
            if (k == "source") {
                // One source, or alternatives tried in order.
                auto one = [&](const toml::node& n, const std::string& item) {
                    std::string src;
                    if (!checked(n, item, src, check_secret_source)) return false;
                    rule.sources.push_back({src, origin(n.source(), item)});
                    return true;
                };
                if (const auto* a = f.node->as_array()) {
                    if (a->empty()) return fail(f.node->source(), sub, "expected at least one source");
                    for (size_t i = 0; i < a->size(); ++i)
                        if (!one(*a->get(i), sub + "[" + std::to_string(i) + "]")) return false;
                } else if (!one(*f.node, sub)) {
                    return false;
                }
                have_source = true;
            } else if (k == "hosts") {
                const toml::array* a = nullptr;
                if (!array_of(*f.node, sub, a)) return false;
                if (a->empty()) return fail(f.node->source(), sub, "expected at least one host");
                for (size_t i = 0; i < a->size(); ++i) {
                    std::string h;
                    if (!checked(*a->get(i), sub + "[" + std::to_string(i) + "]", h, check_host_pattern))
                        return false;
                    rule.hosts.push_back(h);
                }
            } else if (k == "headers") {
                const toml::array* a = nullptr;
                if (!array_of(*f.node, sub, a)) return false;
                for (size_t i = 0; i < a->size(); ++i) {
                    std::string h;
                    if (!checked(*a->get(i), sub + "[" + std::to_string(i) + "]", h,
                                 check_secret_header))
                        return false;
                    rule.headers.push_back(h);
                }
            } else if (k == "optional") {
                std::optional<Located<bool>> b;
                if (!boolean(*f.node, sub, b)) return false;
                rule.optional = b->value;
            } else if (k == "expires") {
                if (!checked(*f.node, sub, rule.expires, net::check_json_path)) return false;
                expires_node = f.node;
            } else if (k == "help") {
                if (!string(*f.node, sub, rule.help)) return false;
                // Said on stderr in one line: no control characters.
                for (char c : rule.help)
                    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                        return fail(f.node->source(), sub, "expected one line of text (no control characters)");
            } else if (k == "base_url") {
                if (!checked(*f.node, sub, rule.base_url, check_env_name)) return false;
            } else {
                return unknown_key(f, sub, {"source", "hosts", "headers", "optional", "expires", "help", "base_url"});
            }
        }
        if (!have_source || (rule.hosts.empty() && rule.base_url.empty()))
            return fail(e.node->source(), key, "expected a table with 'source' and 'hosts' (or 'base_url')");
        if (expires_node != nullptr &&
            std::none_of(rule.sources.begin(), rule.sources.end(),
                         [](const Located<std::string>& s) { return s.value.rfind("json:", 0) == 0; }))
            return fail(expires_node->source(), key + ".expires",
                        "expires is a JSON path in the file of a json: source, and this secret has none");
        out_.secrets.push_back(std::move(rule));
    }
    return true;
}

// TOML (1.0) allows characters beyond ASCII only inside strings and comments. toml++
// 3.3 classifies such a character met elsewhere with a table that has holes, and
// reaching one is undefined behaviour (its TOML_UNREACHABLE: found by fuzz_policy with
// "a\xd2\x91" after a key, UBSan). So they are refused before toml++ sees the text,
// at the line and column they stand at.
std::optional<Error> non_ascii_outside_strings(std::string_view t, const std::string& file) {
    enum class In { code, comment, basic, basic_ml, literal, literal_ml };
    In in = In::code;
    int line = 1, column = 1;
    // The last character of code before this one, spaces and tabs aside ('\n' at a
    // line's start): a quote opens a string only where a key or a value may start.
    // Elsewhere ("-'x", a bare word's middle) toml++ reads on as a bare value and
    // meets what follows outside any string (found by fuzz_policy: "= -'...\xd2\x91").
    char prev = '\n';
    auto run = [&](size_t i, char q) {
        size_t n = 0;
        while (i + n < t.size() && t[i + n] == q) ++n;
        return n;
    };
    for (size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        const auto u = static_cast<unsigned char>(c);
        switch (in) {
        case In::code:
            if (c == '#') {
                in = In::comment;
            } else if ((c == '"' || c == '\'') && std::string_view("\n=[,{.").find(prev) == std::string_view::npos) {
                prev = c;  // no string starts here: the quote is code
            } else if (c == '"' || c == '\'') {
                size_t n = run(i, c);
                if (n >= 3) {
                    in = c == '"' ? In::basic_ml : In::literal_ml;
                    i += 2;
                    column += 2;
                } else if (n == 2) {  // an empty string
                    ++i;
                    ++column;
                } else {
                    in = c == '"' ? In::basic : In::literal;
                }
            } else if (u >= 0x80) {
                return Error{ErrorKind::invalid_input, 0,
                             file + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                 ": a character beyond ASCII outside a string or comment (TOML allows "
                                 "them only there; quote the key: \"...\" = )"};
            }
            if (in == In::code && c != ' ' && c != '\t') prev = c;
            if (in != In::code) prev = '"';  // a string is a value or a key: what follows is not a start
            break;
        case In::comment:
            if (c == '\n') {
                in = In::code;
                prev = '\n';
            }
            break;
        case In::basic:
        case In::literal:
            if (c == '\\' && in == In::basic && i + 1 < t.size() && t[i + 1] != '\n') {
                ++i;
                ++column;
            } else if ((c == '"' && in == In::basic) || (c == '\'' && in == In::literal) || c == '\n') {
                in = In::code;  // closed (or, at a newline, unterminated: toml++ says so)
            }
            break;
        case In::basic_ml:
        case In::literal_ml: {
            const char q = in == In::basic_ml ? '"' : '\'';
            if (c == '\\' && in == In::basic_ml && i + 1 < t.size()) {
                if (t[i + 1] == '\n') break;  // a line-ending backslash: the newline counts below
                ++i;
                ++column;
            } else if (c == q) {
                // Three to five quotes close the string (up to two of them are content).
                size_t n = run(i, q);
                if (n >= 3) in = In::code;
                i += n - 1;
                column += static_cast<int>(n) - 1;
            }
            break;
        }
        }
        if (c == '\n') {
            ++line;
            column = 1;
        } else if ((u & 0xc0) != 0x80) {
            ++column;  // columns count characters, as toml++'s do
        }
    }
    return std::nullopt;
}

}  // namespace

Result<Layer> parse_layer(std::string_view text, const std::string& file) {
    Layer layer;
    layer.file = file;
    if (auto e = non_ascii_outside_strings(text, file)) return std::move(*e);
    toml::table root;
    try {
        root = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
        const auto& pos = e.source().begin;
        return Error{ErrorKind::invalid_input, 0,
                     file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                         ": " + std::string(e.description())};
    } catch (const std::exception& e) {
        // toml++ may also throw std::bad_alloc and friends; they must not leave the module.
        return Error{ErrorKind::internal, 0, file + ": " + e.what()};
    }
    Parser parser(file, layer);
    if (!parser.root(root)) return std::move(*parser.take_error());
    return layer;
}

}  // namespace agentjail::policy::detail
