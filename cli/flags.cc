// SPDX-License-Identifier: Apache-2.0
// The run and explain flags (see flags.hpp): names, values, help, and what each
// does to the policy, through policy/overrides' setters.
#include "flags.hpp"

#include "base/units.hpp"
#include "util/strings.hpp"

#include <boost/program_options.hpp>

#include <cerrno>
#include <cstring>

namespace po = boost::program_options;

namespace agentjail::cli {

namespace {

using policy::Origin;
using policy::Policy;

Error invalid(const std::string& message) { return Error(ErrorKind::invalid_input, EINVAL, message); }

// Splits "SRC:DST" at the last ':' that starts an absolute destination, so a
// source path holding ':' still works when no destination is given.
std::pair<std::string, std::string> split_mount(const std::string& v) {
    size_t colon = v.rfind(':');
    if (colon != std::string::npos && colon > 0 && colon + 1 < v.size() &&
        (v[colon + 1] == '/' || v[colon + 1] == '~' || v[colon + 1] == '{'))
        return {v.substr(0, colon), v.substr(colon + 1)};
    return {v, ""};
}

bool is_env_name(const std::string& s) {
    if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
    for (char c : s)
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return false;
    return true;
}

// --ro and --rw: SRC[:DST], each a path from the caller's directory or home.
template <void (*Add)(Policy&, std::string, std::string, Origin)>
Result<void> bind(Policy& p, const std::string& v, const Context& ctx, const Origin& o) {
    auto [src, dst] = split_mount(v);
    Add(p, resolve_path(src, ctx), dst.empty() ? "" : resolve_path(dst, ctx), o);
    return {};
}

Result<void> apply_tmpfs(Policy& p, const std::string& v, const Context& ctx, const Origin& o) {
    std::string path = v;
    std::uint64_t size = 0;
    size_t colon = v.rfind(':');
    if (colon != std::string::npos) {
        auto sz = units::parse_size(v.substr(colon + 1));
        if (!sz) return invalid(o.key + " " + v + ": " + sz.error().message());
        if (*sz == 0) return invalid(o.key + " " + v + ": a size of 0 bytes (leave out :SIZE for the default)");
        size = *sz;
        path = v.substr(0, colon);
    }
    if (path.empty()) return invalid(o.key + " " + v + ": no path");
    policy::add_tmpfs(p, resolve_path(path, ctx), size, o);
    return {};
}

Result<void> apply_env(Policy& p, const std::string& v, const Context&, const Origin& o) {
    size_t eq = v.find('=');
    std::string name = v.substr(0, eq);
    if (!is_env_name(name)) return invalid(o.key + " " + v + ": '" + name + "' is not a variable name");
    if (eq == std::string::npos)
        // Named exactly by the user: this lifts the secret filter for this name only.
        policy::pass_env(p, name, o);
    else
        policy::set_env(p, name, v.substr(eq + 1), o);
    return {};
}

// A file source's path relative to the caller's directory (or ~), like every other
// path flag; a dotenv: or json: path ends at its last '#'.
Result<void> apply_secret(Policy& p, const std::string& v, const Context& ctx, const Origin& o) {
    std::string spec = v;
    size_t eq = spec.find('=');
    size_t at = spec.rfind('@');
    size_t end = at != std::string::npos && eq != std::string::npos && at > eq ? at : spec.size();
    for (const char* kind : {"file:", "dotenv:", "json:"}) {
        size_t len = std::strlen(kind);
        if (eq == std::string::npos || spec.compare(eq + 1, len, kind) != 0) continue;
        size_t from = eq + 1 + len;
        size_t to = end;
        if (std::strcmp(kind, "file:") != 0) {
            size_t hash = spec.rfind('#', end == spec.size() ? std::string::npos : end);
            if (hash != std::string::npos && hash >= from) to = hash;
        }
        if (to > from) spec = spec.substr(0, from) + resolve_path(spec.substr(from, to - from), ctx) + spec.substr(to);
    }
    return policy::add_secret(p, spec, o);
}

// A setter of the policy as a flag's apply: one that checks its value (and says
// why not), one that cannot fail, and one whose value is a path from the caller's
// directory or home.
template <Result<void> (*Set)(Policy&, const std::string&, Origin)>
Result<void> checked(Policy& p, const std::string& v, const Context&, const Origin& o) {
    return Set(p, v, o);
}
template <void (*Set)(Policy&, std::string, Origin)>
Result<void> plain(Policy& p, const std::string& v, const Context&, const Origin& o) {
    Set(p, v, o);
    return {};
}
template <void (*Set)(Policy&, std::string, Origin)>
Result<void> path(Policy& p, const std::string& v, const Context& ctx, const Origin& o) {
    Set(p, resolve_path(v, ctx), o);
    return {};
}
// The workspace: a relative -C DIR from the directory as the shell names it. In a
// directory reached through a link (`cd build`, build -> ~ planted by an earlier run
// in the project), `-C .` then names the link, which the plan refuses as a spelling
// of the home, instead of naming the home as itself (issue 26, advisory 5).
Result<void> workspace_path(Policy& p, const std::string& v, const Context& ctx, const Origin& o) {
    Context logical = ctx;
    if (!ctx.pwd.empty()) logical.cwd = ctx.pwd;
    policy::set_workspace(p, resolve_path(v, logical), o);
    return {};
}

constexpr auto O = FlagGroup::options;
constexpr auto T = FlagGroup::terminal;
constexpr auto R = FlagGroup::record;
constexpr auto both = FlagVerbs::both;
constexpr auto run = FlagVerbs::run;

// One Flag per line of --help; the first group's flags are run's and explain's.
std::vector<Flag> make_table() {
    using C = const Context&;
    using Or = const Origin&;
    std::vector<Flag> t = {
        {"help", 'h', nullptr, false, both, O, "show this help and exit"},
        {"policy", 'p', "NAME|FILE", false, both, O,
         "the policy: a built-in name (see 'agentjail policies') or a TOML file; default: the "
         "agent preset named like the command (claude, codex, gemini, aider), else default; "
         "--policy default turns the preset off",
         nullptr, nullptr, nullptr, FlagValue::policy},
        {"workspace", 'C', "DIR", false, both, O,
         "the workspace (default: the current directory), bound read-write at the same path; "
         "naming it here also allows / or the home directory (hidden paths stay hidden)",
         nullptr, workspace_path},
        {"workspace-mode", 0, "MODE", false, both, O,
         "direct (default): the agent writes the workspace itself, what runs on the host "
         "later (.git/hooks, .git/config, editor and agent settings) read-only; clone: it "
         "works in a private git clone whose commits come back as the branch "
         "agentjail/RUN; overlay: its writes go to a layer kept aside, shown at exit and "
         "applied with 'agentjail apply RUN' (docs/workspace.md)",
         nullptr, checked<policy::set_workspace_mode>, nullptr, FlagValue::words, "direct clone overlay"},
        {"no-commit-uncommitted", 0, nullptr, false, both, O,
         "clone mode: bring back only the agent's own commits; its uncommitted work stays "
         "in the run's clone (default: one extra commit by agentjail holds it)",
         nullptr, [](Policy& p, const std::string&, C, Or o) -> Result<void> {
             policy::set_commit_uncommitted(p, false, o);
             return {};
         }},
        {"protect", 0, "PATH", true, both, O,
         "also make PATH (relative to the workspace, ** allowed) read-only inside, and "
         "uncreatable if missing; repeatable",
         nullptr, checked<policy::add_protect>},
        {"unprotect", 0, "PATH", true, both, O,
         "let the agent write PATH, one of the policy's protected paths as 'explain' lists "
         "them (e.g. .vscode); repeatable",
         nullptr, checked<policy::remove_protect>},
        {"ro", 0, "SRC[:DST]", true, both, O,
         "bind SRC read-only at the absolute path DST (default: the same path); repeatable", nullptr, bind<policy::add_ro>},
        {"rw", 0, "SRC[:DST]", true, both, O,
         "bind SRC read-write at the absolute path DST (default: the same path); repeatable", nullptr, bind<policy::add_rw>},
        {"hide", 0, "PATH", true, both, O, "hide PATH (globs * ? allowed) whatever else binds it; repeatable",
         nullptr, path<policy::add_hide>},
        {"allow-socket", 0, "PATH", true, both, O,
         "let the command connect to the Unix socket at PATH inside (its real path, no links); "
         "others in bound directories are refused unless a process inside listens on them; "
         "repeatable",
         nullptr, path<policy::add_socket>},
        {"tmpfs", 0, "PATH[:SIZE]", true, both, O, "a fresh tmpfs at PATH, SIZE like 256M; repeatable", nullptr,
         apply_tmpfs},
        {"env", 'e', "NAME[=VALUE]", true, both, O,
         "set NAME=VALUE, or pass the caller's NAME by exact name (even one that looks "
         "like a secret); repeatable",
         nullptr, apply_env},
        {"env-file", 0, "FILE", true, both, O, "set the NAME=VALUE lines of FILE; repeatable", nullptr,
         [](Policy& p, const std::string& v, C ctx, Or) { return policy::load_env_file(p, resolve_path(v, ctx)); }},
        {"hostname", 0, "NAME", false, both, O, "the hostname inside (default: agentjail)", nullptr,
         plain<policy::set_hostname>},
        {"cwd", 0, "DIR", false, both, O, "the command's working directory inside (default: the workspace)",
         nullptr, path<policy::set_cwd>},
        {"memory", 'm', "SIZE", false, both, O,
         "memory limit (cgroup), e.g. 512M or 2G; no swap unless --swap; max: none", "memory"},
        {"swap", 0, "SIZE", false, both, O, "swap allowed on top of --memory (default 0)", "swap"},
        {"cpus", 0, "N", false, both, O, "CPU limit (cgroup quota), e.g. 0.5 or 1.5", "cpus"},
        {"pids", 0, "N", false, both, O, "at most N processes and threads at once (cgroup)", "pids"},
        {"timeout", 't', "DURATION", false, both, O,
         "wall-clock limit, e.g. 90s, 30m, 1h: then SIGTERM, SIGKILL after --kill-grace; "
         "exit status 124",
         "timeout"},
        {"kill-grace", 0, "DURATION", false, both, O,
         "time between SIGTERM and SIGKILL, on timeout and when agentjail gets SIGTERM, "
         "SIGHUP or (without a pty) SIGINT (default 5s)",
         "kill_grace"},
        {"cpu-time", 0, "DURATION", false, both, O, "CPU time per process (RLIMIT_CPU), e.g. 10m", "cpu_time"},
        {"nofile", 0, "N", false, both, O, "open files per process (RLIMIT_NOFILE)", "nofile"},
        {"fsize", 0, "SIZE", false, both, O, "largest file a process may write (RLIMIT_FSIZE), e.g. 1G", "fsize"},
        {"tmpfs-size", 0, "SIZE", false, both, O, "size of tmpfs mounts that give none (default 1G)",
         "tmpfs_size"},
        {"allow-degraded", 0, nullptr, false, both, O,
         "run with rlimits only when no cgroup can be made for the limits (reported in the result)", nullptr,
         [](Policy& p, const std::string&, C, Or o) { return policy::set_limit(p, "allow_degraded", "true", o); }},
        {"view", 0, "HOW", false, both, O,
         "how direct mode guards what runs on the host: fuse (default: the project served "
         "through FUSE, each name judged when the agent asks: nothing made in the project, no "
         "window after a host-side save; needs /dev/fuse) or mounts (read-only binds over "
         "protected names, placeholders for missing ones; docs/workspace.md)",
         nullptr, checked<policy::set_workspace_view>, nullptr, FlagValue::words, "mounts fuse"},
        {"landlock", 0, "MODE", false, both, O,
         "Landlock, a second wall behind the mounts: best-effort (default: applied where the "
         "kernel has it, said in the result where not), required (refuse to run without it), "
         "off (docs/landlock.md)",
         nullptr, checked<policy::set_landlock_mode>, nullptr, FlagValue::words, "best-effort required off"},
        {"seccomp-log", 0, "FILE", false, both, O,
         "write one JSON line per refused system call (time, pid, syscall, arch, args, rule, action)", nullptr,
         path<policy::set_seccomp_log>},
        {"net", 0, "none|proxy|host", false, both, O,
         "the network: none (loopback only, the default), proxy (only the hosts allowed, through "
         "agentjail's proxy), host (the host's network, unfiltered)",
         nullptr, checked<policy::set_net_mode>},
        {"allow-host", 0, "PATTERN", true, both, O,
         "allow NAME, *.DOMAIN or * through the proxy, on ports 80 and 443 or NAME:PORT "
         "(NAME:* any port); implies --net proxy; repeatable",
         nullptr, checked<policy::add_allow_host>},
        {"deny-host", 0, "PATTERN", true, both, O,
         "deny a host pattern (every port unless :PORT); deny wins over allow; repeatable", nullptr,
         checked<policy::add_deny_host>},
        {"net-preset", 0, "NAME", true, both, O,
         "add a network preset on top of the policy: balanced (package registries, GitHub, "
         "model APIs), open (any public host), locked (nothing but an agent preset's own model "
         "API and what --allow-host adds); repeatable",
         nullptr, checked<policy::apply_net_preset>, nullptr, FlagValue::net_preset},
        {"secret", 0, "NAME=SOURCE[@HOSTS]", true, both, O,
         "$NAME holds a placeholder (stable across runs); the proxy puts the real value in "
         "requests to HOSTS (comma-separated) and sends them on over TLS. SOURCE: env:VAR, "
         "file:PATH, dotenv:FILE (NAME from a .env file; FILE#KEY another key) or "
         "json:FILE#dotted.path (a string field). Without @HOSTS: the hosts of the policy's own "
         "[secrets] NAME. Implies --net proxy and allows HOSTS; repeatable",
         nullptr, apply_secret},
        {"publish", 0, "PORT[:HOSTPORT]", true, both, O,
         "make a server the command runs inside on 127.0.0.1:PORT reachable from the host at "
         "127.0.0.1:HOSTPORT (default: the same port), e.g. --publish 3000 for a dev server, "
         "--publish 8080:18080 to use another port on the host; only the host's loopback "
         "listens, while the command runs; any network mode but host; repeatable",
         nullptr, checked<policy::add_publish>},
        {"net-log", 0, "FILE", false, both, O,
         "write one JSON line per connection attempt (time, host, port, method, decision, "
         "rule, bytes)",
         nullptr, path<policy::set_net_log>},
        {"verbose", 'v', nullptr, false, both, O, "print the plan's summary and notes to stderr before running",
         nullptr, nullptr, &Invocation::verbose},
        {"json", 0, nullptr, false, FlagVerbs::explain, O, "print the plan as JSON", nullptr, nullptr,
         &Invocation::json},
        // Only for run: how the command's terminal and stdio are relayed.
        {"tty-filter", 0, "WHEN", false, run, T,
         "where the output filter drops the escape sequences that act on your machine (OSC 52 "
         "clipboard, file:// links, title and colour reports, DCS/APC passthrough, and their C1 "
         "forms): terminal (the default: what the command writes to its terminal), always (its "
         "output pipes too, for `agentjail ... | tee log` on a terminal; a pipe's binary data "
         "would be changed) or never (as --tty-raw)",
         nullptr, nullptr, nullptr, FlagValue::words, "terminal always never"},
        {"tty-raw", 0, nullptr, false, run, T,
         "pass every escape sequence the command writes to your terminal (--tty-filter never)",
         nullptr, nullptr, &Invocation::tty_raw},
        {"no-tty", 0, nullptr, false, run, T,
         "give the command pipes even when run from a terminal (it then sees no tty)", nullptr, nullptr,
         &Invocation::no_tty},
        {"quiet", 'q', nullptr, false, run, T,
         "print no summary of what was refused after the run (`agentjail log` still has it)", nullptr,
         nullptr, &Invocation::quiet},
        {"apply", 0, nullptr, false, run, T,
         "overlay mode: apply the run's changes to the workspace when it ends, as "
         "`agentjail apply RUN` does (protected paths and conflicts are left for it)",
         nullptr, nullptr, &Invocation::apply},
        // Only for run: where the result record goes.
        {"result-file", 0, "FILE", false, run, R,
         "write the result record (JSON: status, times, memory, limits) to FILE, also when "
         "agentjail itself fails"},
        {"json", 0, nullptr, false, run, R,
         "after the command ended, write the result record on stderr: its last line, "
         "after a line \"--- agentjail result ---\" (accept it only there; see --json-fd)",
         nullptr, nullptr, &Invocation::json},
        {"json-fd", 0, "N", false, run, R,
         "write the result record as one JSON line to file descriptor N (3 or more, open "
         "for writing, never given to the command): the channel a CI job can trust"},
    };
    return t;
}

bool for_verb(const Flag& f, Verb verb) {
    return f.verbs == FlagVerbs::both || (f.verbs == FlagVerbs::run) == (verb == Verb::run);
}

}  // namespace

const std::vector<Flag>& flags() {
    static const std::vector<Flag> table = make_table();
    return table;
}

const Flag* find_flag(const std::string& name, Verb verb) {
    for (const auto& f : flags())
        if (name == f.name && for_verb(f, verb)) return &f;
    return nullptr;
}

policy::Origin flag_origin(const std::string& name) { return policy::Origin{"command line", 0, 0, "--" + name}; }

const char* group_title(FlagGroup group) {
    static const char* const titles[] = {"Options", "Terminal", "Result record"};
    return titles[static_cast<int>(group)];
}

po::options_description flag_options(Verb verb, FlagGroup group) {
    po::options_description d(group_title(group));
    // No option takes more than one token: a multitoken option would swallow the
    // command that follows it.
    for (const auto& f : flags()) {
        if (f.group != group || !for_verb(f, verb)) continue;
        const std::string names = std::string(f.name) + (f.short_name ? std::string(",") + f.short_name : "");
        if (f.value_name == nullptr)
            d.add_options()(names.c_str(), f.help);
        else if (f.repeatable)
            d.add_options()(names.c_str(), po::value<std::vector<std::string>>()->value_name(f.value_name), f.help);
        else
            d.add_options()(names.c_str(), po::value<std::string>()->value_name(f.value_name), f.help);
    }
    return d;
}

}  // namespace agentjail::cli
