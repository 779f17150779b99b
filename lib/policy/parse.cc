// SPDX-License-Identifier: Apache-2.0
// The TOML parser: one policy file's text into a Layer, checking every key and
// value against docs/policy-format.md; the root, [process], [environment], [agent],
// [log], [namespaces] and [limits] here, the other sections beside it (parse_*.cc).
// toml++ stays inside lib/policy's parse files.
#include "policy/parser.hpp"

#include "base/units.hpp"


#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace agentjail::policy::detail {

bool Parser::root(const toml::table& t) {
    static const std::vector<std::string_view> known = {
        "description", "extends", "filesystem", "environment", "process", "namespaces",
        "seccomp",     "limits",  "network",    "workspace",   "secrets", "log", "agent", "isolation"};
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
        } else if (k == "isolation") {
            if (!table_of(*e.node, "isolation", sub) || !isolation(*sub)) return false;
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
        } else if (k == "view") {
            size_t which = 0;
            if (!choice(n, key, {"mounts", "fuse"}, which)) return false;
            out_.workspace_view =
                Located<WorkspaceView>{which == 0 ? WorkspaceView::mounts : WorkspaceView::fuse, origin(n.source(), key)};
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






bool Parser::environment(const toml::table& t) {
    const auto& known = environment_keys;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "environment." + std::string(k);
        if (k == "allow") {
            if (!patterns(*e.node, key, out_.env_allow)) return false;
        } else if (k == "deny") {
            if (!patterns(*e.node, key, out_.env_deny)) return false;
        } else if (k == "path") {
            if (!path_list(*e.node, key, out_.env_path)) return false;
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

// [isolation]: the walls besides the namespaces (docs/landlock.md).
bool Parser::isolation(const toml::table& t) {
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "isolation." + std::string(k);
        if (k == "landlock") {
            size_t which = 0;
            if (!choice(*e.node, key, {"best-effort", "required", "off"}, which)) return false;
            static constexpr LandlockMode modes[] = {LandlockMode::best_effort, LandlockMode::required,
                                                     LandlockMode::off};
            out_.landlock = Located<LandlockMode>{modes[which], origin(e.node->source(), key)};
        } else {
            return unknown_key(e, key, isolation_keys);
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





Result<Layer> parse_layer(std::string_view text, const std::string& file, Source source) {
    Layer layer;
    layer.file = file;
    if (source == Source::file)
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
