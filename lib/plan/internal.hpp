// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the plan module's files (path expansion, host lookups, the
// inside-path resolver); private to lib/plan.
#pragma once

#include "plan/host_view.hpp"
#include "plan/plan.hpp"

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::plan::detail {

// What path expansion needs: the caller's home, the canonical workspace (empty
// when there is none) and the caller's $TMPDIR.
struct ExpandContext {
    std::string home;
    std::string workspace;
    std::string tmp;
    std::string state;  // the agent's state directory ([agent] state), "" when none
    // The host as the planner reads it where the run's host actions make names
    // (the agent's state): never null inside build().
    HostView* view = nullptr;
};

// "~", "~/x", "{workspace}", "{workspace}/x", "{tmp}", "{tmp}/x" expanded, then
// lexically normalised. Errors (relative path, ~user, {workspace} without one)
// start with the origin.
Result<std::string> expand(const std::string& raw, const ExpandContext& ctx,
                           const policy::Origin& origin);

// The same expansion for a hide pattern, as a glob(3) pattern: the substituted
// home/workspace/tmp path is escaped (a "[" in a directory name must not turn
// into a character class and make the rule match nothing), and so are "[",
// "]" and "\\" in the rule itself: only "*" and "?" are wildcards.
Result<std::string> expand_glob(const std::string& raw, const ExpandContext& ctx,
                                const policy::Origin& origin);

// True when raw uses {workspace} (such a hide rule is moot without a workspace).
bool uses_workspace(const std::string& raw);

// The value of NAME in a NAME=VALUE list, or nullopt.
std::optional<std::string> env_lookup(const std::vector<std::string>& env, const std::string& name);

// "origin: message", or just the message when the origin says nothing.
std::string with_origin(const std::string& why, const std::string& message);
std::string describe(const policy::Origin& origin);
// An invalid_input error whose message starts with `why` (the mount and workspace rules).
inline Error invalid(const std::string& why, const std::string& message, int code = EINVAL) {
    return Error(ErrorKind::invalid_input, code, with_origin(why, message));
}

// Number of components: "/" is 0, "/usr" 1, "/usr/lib" 2.
int depth(const std::string& path);

// The part of `path` below `dir` ("" when equal); both normalised, path within dir.
std::string relative_to(const std::string& path, const std::string& dir);
// dir + "/" + rel without doubling slashes ("/" + "x" -> "/x"; rel "" -> dir).
std::string join(const std::string& dir, const std::string& rel);

// The index of the op that decides what `path` is inside the sandbox: the last op
// in `mounts` whose dst is path or an ancestor of it; nullopt when only the new
// root (an empty tmpfs) is there.
std::optional<size_t> covering_op(const std::vector<MountOp>& mounts, const std::string& path);

// The host path that `path` inside the sandbox shows, when a bind decides it.
std::optional<std::string> host_path(const std::vector<MountOp>& mounts, const std::string& path);

// Resolves symlinks of an inside path as the sandbox would see them: symlink ops
// and symlinks met on the host below a bind. nullopt on a loop (more than 40 links).
std::optional<std::string> resolve_inside(const std::vector<MountOp>& mounts, const std::string& path,
                                          const HostView& view);

// A host path a hide rule found (mounts.cc, workspace.cc).
struct Hidden {
    std::string path;  // canonical
    bool is_dir = false;
    std::string pattern;  // the rule as written
    std::string why;
    dev_t dev = 0;  // identity at plan time (lstat of path)
    ino_t ino = 0;
    nlink_t nlink = 0;
    bool regular = false;
    std::string link_of;  // set for another name of a hidden file (a hard link)
};

// A workspace path bound read-only over itself in direct mode (workspace.cc).
struct Protected {
    std::string path;  // host path inside the workspace, reached through no symlink
    bool is_dir = false;
    bool placeholder = false;  // missing: the launcher makes an empty file or directory
    bool socket = false;       // a placeholder here is an inert socket file (Guard::socket)
    dev_t dev = 0;
    ino_t ino = 0;
    std::string pattern;
    std::string why;
    std::string link_of;  // set for another name of a protected file (a hard link)
};

// What the workspace rules add to the mount list: hides from `**` patterns and
// hard links, protected paths, and the directories between the workspace root and
// a hidden or protected name, bound over themselves so they cannot be renamed.
struct WorkspaceFindings {
    std::vector<Protected> protect;
    std::vector<std::string> ancestors;  // canonical, each once, shallow first
};

// Runs the workspace rules (workspace.cc). `hidden` holds what glob(3) found and
// gets the `**` matches and hard-link names appended. Protected paths and
// ancestors only in direct mode. Scans the workspace once, only when a rule needs it.
Result<WorkspaceFindings> plan_workspace(const policy::Policy& policy, const ExpandContext& ctx,
                                         std::vector<Hidden>& hidden, Plan& plan);

// True when a hide rule uses `**` (matched by lib/base/pattern, not glob(3)).
bool uses_globstar(const std::string& raw);

// A hide rule split into the literal directory it starts at and the pattern below it
// (workspace.cc).
struct Split {
    std::string base;  // absolute, normalised, no wildcard
    std::string rest;  // relative pattern ("**/.env*")
};
Result<Split> split_rule(const std::string& raw, const ExpandContext& ctx, const policy::Origin& origin);
// A [workspace] protect pattern as a workspace-relative one ("{workspace}/x" is "x";
// workspace_protect.cc).
Result<std::string> protect_rel(const std::string& raw, const policy::Origin& origin);

// [workspace] view = "fuse" (view.cc): the workspace's bind becomes the view, and the
// masks, read-only binds, placeholders and guards below it become its rules.
Result<void> serve_workspace(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan);

// Builds the mount list (everything in plan.mounts; notes appended). `ctx` has
// the workspace already decided; plan.workspace and plan.home are set.
Result<void> build_mounts(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan);
// [agent] (agent.cc): the state directory, the mount points of the binds aimed into
// it and the git identity file, listed as host actions (and so seen by ctx.view as
// made); ctx.state set; before build_mounts.
// The name of a project's agent state, below the agent's: the workspace's name
// (letters, digits, - _ ., at most 32) and 12 hex digits of a SHA-256 of its path;
// "no-workspace" without one (agent.cc).
std::string project_key(const std::string& workspace);
Result<void> plan_agent_state(const policy::Policy& policy, const HostFacts& host, ExpandContext& ctx, Plan& plan);
// [agent] after build_env: GIT_CONFIG_GLOBAL for the identity file plan_agent_state
// listed, the preset's notes, and the agent's own arguments after the command's name.
Result<void> plan_agent_exec(const policy::Policy& policy, Plan& plan, std::vector<std::string>& argv);

// [workspace] mode = "overlay": the workspace's bind becomes an overlay with the
// workspace as its lower layer (overlay.cc); after build_mounts and the host-file rules.
Result<void> overlay_workspace(const policy::Policy& policy, Plan& plan);
// plan.landlock from the final mounts (landlock.cc); refuses a required Landlock the
// kernel or the policy cannot give.
Result<void> plan_landlock(const policy::Policy& policy, const HostFacts& host, Plan& plan);
// explain's Landlock section, and its rights in words ("read write make remove").
std::string landlock_text(const Plan& plan);
std::string landlock_rights(std::uint64_t access);
// Clone and overlay modes: the run's id and state directory, and what the sandbox
// gets from there: the overlay's upper and work layers, or the clone bound at the
// workspace's path (whose guards then have nothing to guard) (overlay.cc).
Result<void> run_state(const HostFacts& host, const HostView& view, Plan& plan);

// Fills plan.env and plan.exec_candidates (plan.home and plan.cwd are set).
// The caller's tools (toolchain.cc): read-only rules for the installation roots the
// caller's PATH, its links and the command (with its #! interpreters) resolve to
// where the sandbox would not show them (under the home, /nix, Homebrew's), and a
// note for each. Empty unless [filesystem] path_tools and a private home.
struct Toolchains {
    std::vector<policy::MountRule> ro;
    std::vector<std::string> notes;
};
Toolchains find_toolchains(const policy::Policy& policy, const HostFacts& host, const ExpandContext& ctx,
                           const std::vector<std::string>& argv);
// PATH inside, after build_env and the mounts: the caller's entries that are
// directories inside (a link the sandbox lacks replaced by its target), the
// policy's [environment] path in front, the system's when nothing is left. A PATH
// the policy or `-e` sets is kept as given.
void inside_path(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan);

Result<void> build_env(const policy::Policy& policy, const HostFacts& host, Plan& plan);
Result<void> build_exec(const std::vector<std::string>& argv, Plan& plan);
// [limits] -> plan.limits, plan.rlimits, plan.timeout_s, plan.kill_grace_s (limits.cc).
Result<void> build_limits(const policy::Policy& policy, const HostFacts& host, Plan& plan);
// One line for explain: "memory 2G (no swap), cpus 1.5, pids 256, timeout 30m ..." (limits.cc).
std::string limits_summary(const Plan& plan);
// "RLIMIT_NOFILE" (limits.cc).
std::string rlimit_name(int resource);

// [network] -> plan.net_mode, plan.net, plan.proxy_port, the proxy variables in
// plan.env and CLONE_NEWNET (network.cc); after clone_flags and env are set.
// `key`: the placeholder key (placeholder.cc), or its why_not.
struct PlaceholderKey;
Result<void> build_network(const policy::Policy& policy, const HostFacts& host, const ExpandContext& ctx,
                           const PlaceholderKey& key, Plan& plan);
// The network part of explain, as text lines and as a JSON object text (network.cc).
std::string network_text(const Plan& plan);
std::string network_json(const Plan& plan);

// The per-user key of stable secret placeholders (placeholder.cc): where it lives
// ("" when there is no state directory), its 32 bytes ("" when it cannot be had),
// and why not (the run then falls back to placeholders random per run).
struct PlaceholderKey {
    std::string path;
    std::string key;
    std::string why_not;
    bool made_by_run = false;  // none yet: the plan lists the host action that makes it
};
// Why agentjail must not make its state under `base` (the state home): a root run
// with another user's HOME; "" when it may.
std::string foreign_state_home(const HostView& view, const std::string& base);
// Where the workspace's walk is kept between runs (Plan::kept_scan; placeholder.cc).
Plan::KeptScan kept_scan_place(const HostFacts& host, const HostView& view, const std::string& workspace);
// The largest kept walk read back (a walk's own bounds make about 110 MiB at most).
inline constexpr std::size_t kKeptScanMax = 128u << 20;
// <state home>/agentjail/placeholder.key, or "" (pure).
std::string placeholder_key_path(const HostFacts& host);
// Reads the key; on first use (none yet) a fresh one, with the host action that
// makes it listed in the plan. Never an error: why_not says why there is none.
PlaceholderKey placeholder_key(const HostFacts& host, const HostView& view, Plan& plan);
// "agentjail-secret-placeholder-NAME-<32 hex>": HMAC-SHA256 under key over the
// scope (the agent's state directory, "" for none), the name and the sources.
std::string stable_placeholder(const std::string& key, const std::string& scope, const std::string& name,
                               const std::vector<std::string>& sources);

// A placeholder unique to this run (no placeholder key): "agentjail-secret-placeholder-NAME-<hex>".
std::string make_placeholder(const std::string& name);

// The sandbox's view of the project's .env files (dotenv.cc, issue 27 item 3): each
// hidden `.env` or `.env.*` of the workspace (direct mode) shows its keys, each value
// a placeholder, instead of an empty mode-000 file. In proxy mode (`s` given) a key a
// known provider reads (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) becomes a secret the
// proxy puts in for that provider's host; any other placeholder is never swapped.
// A policy's own secret of the same name lends its placeholder.
void dotenv_views(const ExpandContext& ctx, const PlaceholderKey& key, Plan& plan, net::Settings* s);

// Name of a mount kind, as in the JSON ("bind", "mask_dir", ...).
const char* kind_name(MountKind kind);

}  // namespace agentjail::plan::detail
