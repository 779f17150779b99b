// SPDX-License-Identifier: Apache-2.0
// Private to lib/policy: one parsed policy file (a Layer), the merge step and the
// value checks the parser and validate() share. No toml++ type appears here.
#pragma once

#include "policy/policy.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::policy::detail {

// One [limits] key as written, in its text form; set_limit() parses it when the
// layers merge (the parser already checked it, so that cannot fail there).
struct LimitSetting {
    std::string key;
    std::string value;
    Origin origin;
};

// One policy file as written: lists hold what this file adds, scalars are set
// only when the file names them (so a layer can leave its base's value alone).
struct Layer {
    std::string file;  // as it appears in messages: "default.toml" or the path
    std::optional<Located<std::string>> description;
    std::vector<Located<std::string>> extends;

    std::vector<MountRule> ro;
    std::vector<MountRule> rw;
    std::vector<TmpfsRule> tmpfs;
    std::vector<HideRule> hide;
    std::vector<SocketRule> sockets;
    std::optional<Located<WorkspaceAccess>> workspace;
    std::optional<Located<bool>> private_home;
    std::optional<Located<bool>> proc;
    std::optional<Located<bool>> dev;
    std::optional<Located<bool>> path_tools;

    std::optional<Located<WorkspaceMode>> workspace_mode;  // [workspace]
    std::optional<Located<WorkspaceView>> workspace_view;
    std::vector<ProtectRule> protect;
    std::vector<ProtectRule> unprotect;

    std::vector<Located<std::string>> env_allow;
    std::vector<Located<std::string>> env_deny;
    std::vector<EnvSet> env_set;
    std::vector<Located<std::string>> env_path;

    std::optional<Located<std::string>> hostname;
    std::optional<Located<std::string>> cwd;
    std::optional<Located<bool>> die_with_parent;
    std::optional<Located<bool>> allow_root;

    std::optional<Located<bool>> ns_net;
    std::optional<Located<bool>> ns_ipc;
    std::optional<Located<bool>> ns_uts;
    std::optional<Located<bool>> ns_cgroup;

    std::vector<LimitSetting> limits;  // [limits], in file order

    bool has_seccomp = false;
    std::optional<Located<std::string>> seccomp_default;
    std::optional<Located<bool>> seccomp_nested;
    std::optional<Located<std::string>> seccomp_log;
    std::vector<SeccompRule> seccomp_rules;

    std::optional<Located<bool>> log_in_sandbox;  // [log] allow_in_sandbox
    std::optional<Located<LandlockMode>> landlock;  // [isolation] landlock

    // [network] as written; apply_network() merges it (network.cc).
    std::optional<Located<NetMode>> net_mode;
    std::vector<HostRule> net_allow;
    std::vector<HostRule> net_deny;
    std::vector<HostPin> net_hosts;
    std::optional<Located<std::string>> net_log;
    std::optional<Located<std::uint64_t>> net_max_connections;
    std::vector<SecretRule> secrets;  // [secrets]
    std::vector<GatewayRule> net_gateways;
    std::vector<PublishRule> net_publish;

    // [agent]: scalars set when named; commands, args and notes replace the base's
    // when named (a preset extending another is a different agent).
    std::optional<Located<std::string>> agent_name;
    std::optional<std::vector<Located<std::string>>> agent_commands;
    std::optional<Located<std::string>> agent_state;
    std::optional<Located<bool>> agent_git_identity;
    std::optional<std::vector<Located<std::string>>> agent_args;
    std::vector<Located<std::string>> agent_notes;  // accumulate
};

// [network] of a layer on top of p (network.cc), and the value checks its parser
// and validate() share: "" when fine, else what is wrong.
void apply_network(Policy& p, const Layer& layer);
std::string check_host_pattern(std::string_view s);
std::string check_method(std::string_view s);     // a method of a host rule ("GET")
std::string check_path_glob(std::string_view s);  // a path glob of a host rule ("/simple/**")
std::string check_pin_name(std::string_view s);
std::string check_pin_address(std::string_view s);
std::string check_secret_source(std::string_view s);  // env:NAME, file:PATH, dotenv:FILE[#KEY], json:FILE#path
std::string check_secret_header(std::string_view s);  // a header name a secret may go in

// The keys of [limits] and whether each takes a boolean (limits.cc).
const std::vector<std::string_view>& limits_keys();
bool limit_is_boolean(std::string_view key);

// Parses one file's text (parse.cc). `file` is used in every message. Source::embedded:
// the text is one compiled into the binary, which a unit test holds to what the
// prescan checks (PolicyBuiltins.EveryEmbeddedTextPassesThePrescan), so the run does
// not scan it again; a user's file is always scanned.
enum class Source { file, embedded };
Result<Layer> parse_layer(std::string_view text, const std::string& file, Source source = Source::file);

// Applies a layer on top of p: lists accumulate, set scalars override (merge.cc).
void apply_layer(Policy& p, const Layer& layer);

// A Policy holding the built-in defaults, their origins saying so (merge.cc).
Policy default_policy();

// Value checks: "" when fine, otherwise what is wrong (no location) (checks.cc).
std::string check_path(std::string_view s);         // absolute, ~, {workspace}, {tmp}
// A [workspace] protect entry: relative to the workspace ("**/.git/hooks") or
// starting with {workspace}/, never leaving it.
std::string check_protect_pattern(std::string_view s);
std::string check_env_name(std::string_view s);     // [A-Za-z_][A-Za-z0-9_]*
std::string check_env_pattern(std::string_view s);  // a name that may hold * and ?
std::string check_hostname(std::string_view s);
std::string check_state_name(std::string_view s);   // [agent] state: one name, [A-Za-z0-9._-]     // RFC 1123, at most 64 characters

// The closest of `known` within edit distance 2, or "" (checks.cc).
std::string closest_key(std::string_view word, const std::vector<std::string_view>& known);

// "FILE:LINE:COL: KEY: message", or "command line: --ro: message" when the origin
// is not a file position.
using base::error_at;

// Reads a whole regular file of at most 1 MiB (load.cc). err is 0 on success,
// otherwise an errno value with `why` saying it in words.
struct ReadResult {
    std::string text;
    int err = 0;
    std::string why;
};
ReadResult read_small_file(const std::string& path);

// Built-in lookup (builtin.cc). find_builtin returns nullptr when unknown.
const Builtin* find_builtin(std::string_view name);
std::string builtin_names();  // "default, minimal"

}  // namespace agentjail::policy::detail
