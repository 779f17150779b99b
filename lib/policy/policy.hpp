// SPDX-License-Identifier: Apache-2.0
// The Policy: plain data parsed from TOML layers and CLI overrides, with the
// origin (file:line:column) of every value so later errors can point at it.
#pragma once

#include "base/error.hpp"
#include "base/origin.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::policy {

using agentjail::Located;
using agentjail::Origin;

// A bind of a host path. dst empty: the same path inside.
struct MountRule {
    std::string src;
    std::string dst;
    bool optional = false;  // missing source: skipped, instead of an error
    Origin origin;
};

struct TmpfsRule {
    std::string path;
    std::uint64_t size_bytes = 0;  // 0: the built-in default
    Origin origin;
};

// A path or glob (`{workspace}/.env*`) to hide; deny wins over every bind.
struct HideRule {
    std::string pattern;
    Origin origin;
};

// A Unix socket the sandbox may connect to ([filesystem] sockets, --allow-socket):
// its path inside, resolved without links at each connect (docs/seccomp.md).
struct SocketRule {
    std::string path;
    Origin origin;
};

struct EnvSet {
    std::string name;
    std::string value;
    Origin origin;
};

enum class WorkspaceAccess { rw, ro, none };

// [workspace] mode (docs/workspace.md): where the agent's writes go.
enum class WorkspaceMode {
    direct,   // the workspace itself, with what runs on the host later read-only
    clone,    // a private git clone; commits come back as the branch agentjail/<run-id>
    overlay,  // an overlay over the workspace; the upper layer is applied on request
};

// [workspace] view (docs/workspace.md, "The view"): how direct mode keeps what runs
// on the host out of the agent's reach.
enum class WorkspaceView {
    mounts,  // read-only binds over protected names, placeholders for missing ones
    fuse,    // the project served through FUSE by the supervisor, each name judged when asked
};

// [isolation] landlock (docs/landlock.md): Landlock as a second wall behind the
// mounts, built from the plan on the final tree.
enum class LandlockMode {
    best_effort,  // applied where the kernel has Landlock ABI 2 or later; said when not
    required,     // refused (exit 125) where it cannot be applied
    off,
};

// [workspace] protect: a path or glob under the workspace (`.git/hooks`,
// `**/.git/config`, `.claude/settings*.json`) that is read-only inside, and
// protected against creation when it does not exist yet.
struct ProtectRule {
    std::string pattern;
    Origin origin;
    bool matched = true;  // unprotect: it took an entry out of a layer below
    // false ({ path = "...", placeholder = false }): read-only when it exists, but a
    // missing name gets no placeholder (a tool inside would fail on one where an
    // absent file is fine); one the run makes is flagged by the check after it.
    bool placeholder = true;
};

// One [[seccomp.rule]] as written. lib/seccomp resolves the names, the action and
// the conditions, and reports their errors at these origins (docs/seccomp.md).
struct SeccompRule {
    std::vector<Located<std::string>> syscalls;  // names or @groups
    Located<std::string> action;                 // allow | errno:NAME | kill | log | notify
    std::vector<Located<std::string>> args;      // conditions ("arg1 == TIOCSTI"), ANDed
    std::string why;
    // unless = "nested_sandboxes": the rule is left out when seccomp.nested_sandboxes is true.
    bool unless_nested = false;
    // record = false: answered by the kernel, not logged or counted (see seccomp::Action).
    bool record = true;
    Origin record_origin;
    Origin origin;  // the rule's table
    // The seccomp.default in effect in the layer that declared the rule (set when the
    // layers merge): a rule that only repeats it does nothing, which is an error there.
    Located<std::string> declared_default;
};

// [seccomp] as merged: all lib/seccomp is given (seccomp::compile). Rules
// accumulate base first; default, nested_sandboxes and log are scalars.
struct Seccomp {
    bool present = false;  // some layer has a [seccomp] section, so a filter is built
    Located<std::string> default_action{"allow", {}};
    Located<bool> nested{false, {}};
    Located<std::string> log{"", {}};  // "": refused calls are counted only
    std::vector<SeccompRule> rules;
};

// [limits] as merged: an empty optional is "no limit" (also what "max" writes, so a
// layer can lift its base's limit). The values are checked when set (set_limit).
struct LimitsPolicy {
    Located<std::optional<std::uint64_t>> memory;  // bytes
    Located<std::optional<std::uint64_t>> swap;    // bytes; with memory: default 0
    Located<std::optional<double>> cpus;
    Located<std::optional<std::uint64_t>> pids;
    Located<std::optional<double>> timeout;   // seconds of wall clock
    Located<std::optional<double>> cpu_time;  // seconds, RLIMIT_CPU
    Located<std::optional<std::uint64_t>> nofile;
    Located<std::optional<std::uint64_t>> fsize;       // bytes, RLIMIT_FSIZE
    Located<std::optional<std::uint64_t>> tmpfs_size;  // default size of a tmpfs without one
    Located<double> kill_grace{5, {}};                 // seconds between SIGTERM and SIGKILL
    Located<double> setup_timeout{60, {}};             // seconds the launcher waits for the setup
    Located<bool> allow_degraded{false, {}};           // no cgroup possible: rlimits only
};

// [network]: the mode, the host rules and the proxy's settings (docs/network.md).
enum class NetMode {
    none,   // a network namespace with only loopback
    proxy,  // the same, plus agentjail's proxy on 127.0.0.1:port inside
    host,   // no network namespace: the host's network (degraded isolation)
};

// An allow or deny entry: "api.example.com", "*.npmjs.org", "github.com:22", "*".
// A table entry { host = "...", methods = [...], paths = [...] } restricts the
// rule to those requests (docs/network.md).
struct HostRule {
    std::string pattern;
    Origin origin;
    std::vector<std::string> methods;  // empty: every method
    std::vector<std::string> paths;    // path globs; empty: every path
};

// [network.hosts] "example.test" = "127.0.0.1": the proxy connects there for that name.
struct HostPin {
    std::string host;
    std::string address;
    Origin origin;
};

// [secrets] NAME = { source = SOURCE | [SOURCE, ...], hosts = [...], headers = [...],
// optional = BOOL, expires = "json.path", help = "..." } and --secret NAME=SOURCE[@HOST,...]:
// the command's NAME holds a placeholder; the proxy puts the real value in place of it
// in requests to those hosts only. SOURCE: env:VAR, file:PATH, dotenv:FILE[#KEY],
// json:FILE#dotted.path (net/secret_source.hpp).
struct SecretRule {
    std::string name;
    // Alternatives, in order: the first one available when the run is planned wins.
    std::vector<Located<std::string>> sources;
    std::vector<std::string> hosts;  // host patterns
    // Request headers the value may go in besides Authorization and x-api-key.
    std::vector<std::string> headers;
    // No source available: the secret is left out (NAME unset inside), not an error.
    bool optional = false;
    // A JSON path, in the chosen json: source's file, to the token's expiry (seconds
    // or milliseconds since the epoch): past it, the run is warned (with help).
    std::string expires;
    std::string help;
    // base_url = "ANTHROPIC_BASE_URL": when that variable is set, the value is also
    // put in at the origin it names (a model gateway, see NetworkPolicy::gateways).
    std::string base_url;
    // Kept with `agentjail secret set` (not the policy's): put in only where the run
    // allows its hosts otherwise, and never allows one itself.
    bool stored = false;
    Origin origin;
};

// [network] gateways = ["ANTHROPIC_BASE_URL"]: a variable naming a model gateway's
// URL; the variable passes in unchanged and exactly its origin is reachable.
struct GatewayRule {
    std::string var;
    Origin origin;
};

// [network] publish = ["3000", "8080:18080"] and --publish PORT[:HOSTPORT]: a server
// inside on 127.0.0.1:port reachable from the host's 127.0.0.1:host_port.
struct PublishRule {
    std::uint16_t port = 0;
    std::uint16_t host_port = 0;
    Origin origin;
};

struct NetworkPolicy {
    Located<NetMode> mode{NetMode::none, {"built-in default", 0, 0, "network.mode"}};
    std::vector<HostRule> allow;  // accumulate over layers
    std::vector<HostRule> deny;   // deny wins over allow
    std::vector<HostPin> hosts;   // a later pin of one name replaces the earlier
    Located<std::string> log{"", {}};  // one JSON line per attempt; "": none
    Located<std::uint64_t> max_connections{256, {}};
    std::vector<SecretRule> secrets;  // a later entry of one name replaces the earlier
    std::vector<GatewayRule> gateways;  // accumulate over layers (one entry per variable)
    std::vector<PublishRule> publish;   // accumulate over layers and flags
    // What a network preset did to the rules below it (`--net-preset locked` under an
    // agent preset), said by explain and -v.
    std::vector<std::string> notes;
};

// [agent] (docs/agents.md): what an agent preset adds to its policy. A preset is
// chosen by the command's name when no --policy is given (`agentjail -- claude`).
struct AgentPolicy {
    Located<std::string> name{"", {}};            // shown by explain and -v ("Claude Code")
    std::vector<Located<std::string>> commands;   // command names (basenames) that choose this policy
    // The agent's persistent state, owned by agentjail: $XDG_STATE_HOME/agentjail/<state>,
    // created on first use, read-write inside at the same path, and "{state}" in
    // [filesystem] paths and [environment] set values. "": none.
    Located<std::string> state{"", {}};
    // The caller's git user.name and user.email (nothing else of the git config) as
    // GIT_AUTHOR_* and GIT_COMMITTER_* inside, so commits work.
    Located<bool> git_identity{false, {}};
    // Arguments put right after the command's name when the command is one of
    // `commands` (the flag that turns the agent's own sandbox off, say).
    std::vector<Located<std::string>> args;
    std::vector<Located<std::string>> notes;  // said by explain (and -v): what the preset cannot do
};

struct Policy {
    std::string name;                 // what the user asked for: "default" or a path
    std::string chosen_by;            // "" when named; how the CLI chose an agent preset
    std::vector<std::string> layers;  // the resolved extends chain, base first
    std::string description;

    // [filesystem]  Lists accumulate over layers; scalars are overridden.
    std::vector<MountRule> ro;
    std::vector<MountRule> rw;
    std::vector<TmpfsRule> tmpfs;
    std::vector<HideRule> hide;
    std::vector<SocketRule> sockets;
    Located<WorkspaceAccess> workspace{WorkspaceAccess::rw, {}};
    Located<bool> private_home{true, {}};  // home = "tmpfs" | "none"
    Located<bool> proc{true, {}};          // proc = true: a fresh procfs
    Located<bool> dev{true, {}};           // dev = "minimal" | "none"
    // path_tools = true: the toolchains the caller's PATH and the command resolve to
    // under the home (an nvm node, a pyenv, ~/.local/bin, ...), read-only inside
    // (lib/plan/toolchain.cc).
    Located<bool> path_tools{false, {}};

    // [workspace]  protect accumulates over layers; unprotect drops entries of it
    // (by the pattern as written) from every layer below.
    Located<WorkspaceMode> workspace_mode{WorkspaceMode::direct, {}};
    Located<WorkspaceView> workspace_view{WorkspaceView::fuse, {}};
    std::vector<ProtectRule> protect;
    std::vector<ProtectRule> unprotect;
    // Clone mode: the work tree's uncommitted changes come back as one extra commit
    // (--no-commit-uncommitted: left in the run's clone).
    Located<bool> workspace_commit_uncommitted{true, {}};

    // [environment]
    std::vector<Located<std::string>> env_allow;  // names or globs (LC_*)
    std::vector<Located<std::string>> env_deny;   // secret patterns; exact allow names win
    std::vector<EnvSet> env_set;                  // NAME = VALUE, last wins
    // Directories put at the front of PATH inside when they exist there and PATH
    // lacks them ("~/.local/bin" for an agent its installer puts there).
    std::vector<Located<std::string>> env_path;

    // [process]
    Located<std::string> hostname{"agentjail", {}};
    Located<std::string> cwd{"", {}};  // empty: the workspace (or / without one)
    Located<bool> die_with_parent{true, {}};
    // A root caller of the library may run the command as root (uid 0 outside, in its
    // own user namespace, every capability dropped) without naming a uid/gid. Off: an
    // embedder that runs as root must say which identity the command gets, so a job
    // never owns root's files by accident. The CLI, run by a person, is not asked.
    Located<bool> allow_root{false, {}};

    // [namespaces]  user, mount and pid are always on.
    Located<bool> ns_net{true, {}};
    Located<bool> ns_ipc{true, {}};
    Located<bool> ns_uts{true, {}};
    Located<bool> ns_cgroup{true, {}};

    // [seccomp], what lib/seccomp compiles (see Seccomp).
    Seccomp seccomp;

    // [log]  true: the logs and the result file may lie inside a path the sandbox
    // can write (refused by default: the sandbox could plant a link there).
    Located<bool> log_in_sandbox{false, {}};

    // [isolation]
    Located<LandlockMode> landlock{LandlockMode::best_effort, {}};

    // [limits]
    LimitsPolicy limits;

    // [network]
    NetworkPolicy network;

    // [agent]
    AgentPolicy agent;

    // Run parameters, set by -C / the API. workspace_explicit: named by the user,
    // which is what allows a workspace that is / or the home directory.
    std::optional<Located<std::string>> workspace_path;
    bool workspace_explicit = false;
};

// Loads a built-in name or a file path, resolving `extends` (cycles are errors),
// merging layers base first, and validating the result.
Result<Policy> load(const std::string& name_or_path);

// Your own policies, found by name like the built-ins (`-p mine`, `extends = "mine"`):
// $XDG_CONFIG_HOME/agentjail/policies (an absolute XDG_CONFIG_HOME), else
// ~/.config/agentjail/policies; "" without HOME. A built-in's name always means the
// built-in. Every sandbox hides ~/.config/agentjail (default.toml), so no agent can
// plant or change one.
std::string user_policy_dir();
// $XDG_CONFIG_HOME/agentjail (absolute), else ~/.config/agentjail; "" when neither is
// known. Holds policies/ and secrets/ (`agentjail secret`).
std::string user_config_dir();

// The user's defaults for run and explain: <user_config_dir()>/config.toml ("" when
// there is no configuration directory). Each top-level key is a flag's long name
// (`net-preset`, `ro`, `memory`; `_` for `-` too) with the flag's value, a list for a
// repeatable flag, or true/false for a switch; `policy` is the policy for commands
// no agent preset is for. The CLI applies them before the command line's own flags,
// which come after and so win.
struct ConfigSetting {
    std::string key;                  // as written
    std::vector<std::string> values;  // one per flag use
    bool is_switch = false;           // true/false given
    bool on = false;
    Origin origin;                    // config.toml:LINE:COL (key)
};
struct UserConfig {
    std::string file;
    std::vector<ConfigSetting> settings;  // in the file's order
};
std::string user_config_file();
// Reads the file; none there is an empty config. Errors carry file:line:column.
Result<UserConfig> read_user_config(const std::string& path);
// <user_policy_dir()>/NAME.toml when NAME is a plain name and that file exists.
std::optional<std::string> user_policy_file(const std::string& name);

// Parses one layer from text, as if read from `file`; resolves its extends chain
// through `load`. Used by load() and by tests.
Result<Policy> load_text(const std::string& text, const std::string& file);

// Built-in policies compiled into the binary: name, description, TOML text, and the
// command names its [agent] section claims (an agent preset).
struct Builtin {
    std::string name;
    std::string description;
    std::string text;
    std::vector<std::string> agent_commands;
};
const std::vector<Builtin>& builtins();

// The built-in agent preset whose [agent] commands name `command`'s last path
// component ("claude", "/usr/local/bin/claude"), or nullptr.
const Builtin* preset_for_command(const std::string& command);

// Checks cross-field rules after merging and after overrides.
Result<void> validate(const Policy& p);

// Overrides that the CLI and the APIs share (origin says which flag).
void add_ro(Policy& p, std::string src, std::string dst, Origin origin);
void add_rw(Policy& p, std::string src, std::string dst, Origin origin);
void add_hide(Policy& p, std::string pattern, Origin origin);
void add_socket(Policy& p, std::string path, Origin origin);
void add_tmpfs(Policy& p, std::string path, std::uint64_t size, Origin origin);
void set_env(Policy& p, std::string name, std::string value, Origin origin);
void pass_env(Policy& p, std::string name, Origin origin);
// Sets one [limits] key from its text form ("2G", "90s", "1.5", "max", "true"), as
// the parser, the CLI flags and the APIs do; the error names origin and key.
// Keys: memory swap cpus pids timeout cpu_time nofile fsize tmpfs_size kill_grace setup_timeout
// allow_degraded.
Result<void> set_limit(Policy& p, const std::string& key, const std::string& value, Origin origin);
// [network] overrides (lib/policy/network.cc): the mode ("none", "proxy", "host"),
// allow/deny entries (checked: errors name origin), and a built-in preset such as
// "balanced" (policies/net-balanced.toml) whose [network] is merged on top.
Result<void> set_net_mode(Policy& p, const std::string& mode, Origin origin);
Result<void> add_allow_host(Policy& p, const std::string& pattern, Origin origin);
Result<void> add_deny_host(Policy& p, const std::string& pattern, Origin origin);
Result<void> apply_net_preset(Policy& p, const std::string& name, Origin origin);
// "NAME=SOURCE@HOST[,HOST...]" (SOURCE: env:VAR, file:PATH, dotenv:FILE[#KEY],
// json:FILE#path); implies proxy mode. "NAME=SOURCE" without hosts replaces the source
// of the policy's own [secrets] NAME (its hosts and headers stay); without such an
// entry it is an error that says which hosts to add.
Result<void> add_secret(Policy& p, const std::string& spec, Origin origin);
// "PORT[:HOSTPORT]" (--publish, [network] publish): publish a port of the sandbox's
// loopback on the host's 127.0.0.1:HOSTPORT (default PORT).
Result<void> add_publish(Policy& p, const std::string& spec, Origin origin);
// "" when spec is PORT or PORT:HOSTPORT (1-65535 each), else why not.
std::string parse_publish(const std::string& spec, std::uint16_t& port, std::uint16_t& host_port);
const char* net_mode_name(NetMode m);
// [workspace] overrides: the mode ("direct", "clone", "overlay"); a protected path
// added; a protected path of the policy taken out (an error if it has none such).
Result<void> set_workspace_mode(Policy& p, const std::string& mode, Origin origin);
const char* workspace_mode_name(WorkspaceMode m);
Result<void> set_workspace_view(Policy& p, const std::string& view, Origin origin);
const char* workspace_view_name(WorkspaceView v);
// "best-effort", "required", "off" (--landlock, [isolation] landlock).
Result<void> set_landlock_mode(Policy& p, const std::string& mode, Origin origin);
const char* landlock_mode_name(LandlockMode m);
Result<void> add_protect(Policy& p, const std::string& pattern, Origin origin);
Result<void> remove_protect(Policy& p, const std::string& pattern, Origin origin);
// Reads NAME=VALUE lines (# comments, blank lines); errors name file:line.
Result<void> load_env_file(Policy& p, const std::string& path);
// The single-valued fields a flag or an API call names: the workspace (named so, it
// may be / or the home directory), clone mode's extra commit, the hostname, the
// command's directory, and the two logs. validate() checks what needs the whole.
void set_workspace(Policy& p, std::string dir, Origin origin);
void set_commit_uncommitted(Policy& p, bool commit, Origin origin);
void set_hostname(Policy& p, std::string name, Origin origin);
void set_cwd(Policy& p, std::string dir, Origin origin);
void set_net_log(Policy& p, std::string path, Origin origin);
void set_seccomp_log(Policy& p, std::string path, Origin origin);

}  // namespace agentjail::policy
