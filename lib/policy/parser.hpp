// SPDX-License-Identifier: Apache-2.0
// The TOML parser's shared part (parse.cc and its sections, parse_*.cc): the known
// keys, the reader of a table in document order, and the Parser class. Only the
// parse files include it: toml++ stays inside them.
#pragma once

#include "policy/internal.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::policy::detail {


inline const std::vector<std::string_view> filesystem_keys = {"ro",   "rw",   "tmpfs", "hide",   "workspace",
                                                              "home", "proc", "dev",   "sockets", "path_tools"};
inline const std::vector<std::string_view> environment_keys = {"allow", "deny", "set", "path"};
inline const std::vector<std::string_view> process_keys = {"hostname", "cwd", "die_with_parent", "allow_root"};
inline const std::vector<std::string_view> namespaces_keys = {"net", "ipc", "uts", "cgroup"};
inline const std::vector<std::string_view> seccomp_keys = {"default", "nested_sandboxes", "log", "rule"};
inline const std::vector<std::string_view> log_keys = {"allow_in_sandbox"};
inline const std::vector<std::string_view> isolation_keys = {"landlock"};
inline const std::vector<std::string_view> workspace_keys = {"mode", "view", "protect", "unprotect"};
inline const std::vector<std::string_view> agent_keys = {"name", "commands", "state", "git_identity", "args", "notes"};
inline const std::vector<std::string_view> seccomp_rule_keys = {"syscalls", "action", "args", "why",
                                                         "unless",   "record"};
inline const std::pair<std::string_view, const std::vector<std::string_view>&> section_keys[] = {
    {"filesystem", filesystem_keys}, {"environment", environment_keys}, {"process", process_keys},
    {"namespaces", namespaces_keys}, {"seccomp", seccomp_keys},         {"log", log_keys}, {"isolation", isolation_keys},
    {"workspace", workspace_keys}, {"agent", agent_keys}};

inline std::string type_name(const toml::node& n) {
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

inline std::vector<Entry> entries(const toml::table& t) {
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
    bool isolation(const toml::table& t);
    bool seccomp(const toml::table& t);
    bool seccomp_rule(const toml::node& n, const std::string& key);
    bool limits(const toml::table& t);
    bool workspace(const toml::table& t);
    bool protect_list(const toml::node& n, const std::string& key, std::vector<ProtectRule>& out);
    template <class Rule>
    bool path_list(const toml::node& n, const std::string& key, std::vector<Rule>& out);
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

// TOML allows characters beyond ASCII only inside strings and comments; the rest is
// refused before toml++ sees the text (parse_prescan.cc).
std::optional<Error> non_ascii_outside_strings(std::string_view t, const std::string& file);

}  // namespace agentjail::policy::detail
