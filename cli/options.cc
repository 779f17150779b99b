// SPDX-License-Identifier: Apache-2.0
// Turns run/explain flags into overrides on the loaded policy, each with the
// origin "command line (--flag)", and holds the help texts and error reporting.
#include "options.hpp"

#include "sys/caller.hpp"
#include "util/strings.hpp"
#include "plan/limits.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace po = boost::program_options;

namespace agentjail::cli {

namespace {

Error invalid(const std::string& message) {
    return Error(ErrorKind::invalid_input, EINVAL, message);
}

policy::Origin flag_origin(const std::string& flag) {
    return policy::Origin{"command line", 0, 0, flag};
}

po::options_description run_options() {
    po::options_description d("Options");
    // No option takes more than one token: a multitoken option would swallow the
    // command that follows it.
    // clang-format off
    d.add_options()
        ("help,h", "show this help and exit")
        ("policy,p", po::value<std::string>()->value_name("NAME|FILE"),
         "the policy: a built-in name (see 'agentjail policies') or a TOML file; default: the "
         "agent preset named like the command (claude, codex, gemini, aider), else default; "
         "--policy default turns the preset off")
        ("workspace,C", po::value<std::string>()->value_name("DIR"),
         "the workspace (default: the current directory), bound read-write at the same path; "
         "naming it here also allows / or the home directory (hidden paths stay hidden)")
        ("workspace-mode", po::value<std::string>()->value_name("MODE"),
         "direct (default): the agent writes the workspace itself, what runs on the host "
         "later (.git/hooks, .git/config, editor and agent settings) read-only; clone: it "
         "works in a private git clone whose commits come back as the branch "
         "agentjail/RUN; overlay: its writes go to a layer kept aside, shown at exit and "
         "applied with 'agentjail apply RUN' (docs/workspace.md)")
        ("no-commit-uncommitted",
         "clone mode: bring back only the agent's own commits; its uncommitted work stays "
         "in the run's clone (default: one extra commit by agentjail holds it)")
        ("protect", po::value<std::vector<std::string>>()->value_name("PATH"),
         "also make PATH (relative to the workspace, ** allowed) read-only inside, and "
         "uncreatable if missing; repeatable")
        ("unprotect", po::value<std::vector<std::string>>()->value_name("PATH"),
         "let the agent write PATH, one of the policy's protected paths as 'explain' lists "
         "them (e.g. .vscode); repeatable")
        ("ro", po::value<std::vector<std::string>>()->value_name("SRC[:DST]"),
         "bind SRC read-only at the absolute path DST (default: the same path); repeatable")
        ("rw", po::value<std::vector<std::string>>()->value_name("SRC[:DST]"),
         "bind SRC read-write at the absolute path DST (default: the same path); repeatable")
        ("hide", po::value<std::vector<std::string>>()->value_name("PATH"),
         "hide PATH (globs * ? allowed) whatever else binds it; repeatable")
        ("tmpfs", po::value<std::vector<std::string>>()->value_name("PATH[:SIZE]"),
         "a fresh tmpfs at PATH, SIZE like 256M; repeatable")
        ("env,e", po::value<std::vector<std::string>>()->value_name("NAME[=VALUE]"),
         "set NAME=VALUE, or pass the caller's NAME by exact name (even one that looks "
         "like a secret); repeatable")
        ("env-file", po::value<std::vector<std::string>>()->value_name("FILE"),
         "set the NAME=VALUE lines of FILE; repeatable")
        ("hostname", po::value<std::string>()->value_name("NAME"),
         "the hostname inside (default: agentjail)")
        ("cwd", po::value<std::string>()->value_name("DIR"),
         "the command's working directory inside (default: the workspace)")
        ("memory,m", po::value<std::string>()->value_name("SIZE"),
         "memory limit (cgroup), e.g. 512M or 2G; no swap unless --swap; max: none")
        ("swap", po::value<std::string>()->value_name("SIZE"),
         "swap allowed on top of --memory (default 0)")
        ("cpus", po::value<std::string>()->value_name("N"),
         "CPU limit (cgroup quota), e.g. 0.5 or 1.5")
        ("pids", po::value<std::string>()->value_name("N"),
         "at most N processes and threads at once (cgroup)")
        ("timeout,t", po::value<std::string>()->value_name("DURATION"),
         "wall-clock limit, e.g. 90s, 30m, 1h: then SIGTERM, SIGKILL after --kill-grace; "
         "exit status 124")
        ("kill-grace", po::value<std::string>()->value_name("DURATION"),
         "time between SIGTERM and SIGKILL, on timeout and when agentjail gets SIGTERM, "
         "SIGHUP or (without a pty) SIGINT (default 5s)")
        ("cpu-time", po::value<std::string>()->value_name("DURATION"),
         "CPU time per process (RLIMIT_CPU), e.g. 10m")
        ("nofile", po::value<std::string>()->value_name("N"),
         "open files per process (RLIMIT_NOFILE)")
        ("fsize", po::value<std::string>()->value_name("SIZE"),
         "largest file a process may write (RLIMIT_FSIZE), e.g. 1G")
        ("tmpfs-size", po::value<std::string>()->value_name("SIZE"),
         "size of tmpfs mounts that give none (default 1G)")
        ("allow-degraded",
         "run with rlimits only when no cgroup can be made for the limits (reported in the result)")
        ("seccomp-log", po::value<std::string>()->value_name("FILE"),
         "write one JSON line per refused system call (time, pid, syscall, arch, args, rule, action)")
        ("net", po::value<std::string>()->value_name("none|proxy|host"),
         "the network: none (loopback only, the default), proxy (only the hosts allowed, through "
         "agentjail's proxy), host (the host's network, unfiltered)")
        ("allow-host", po::value<std::vector<std::string>>()->value_name("PATTERN"),
         "allow NAME, *.DOMAIN or * through the proxy, on ports 80 and 443 or NAME:PORT "
         "(NAME:* any port); implies --net proxy; repeatable")
        ("deny-host", po::value<std::vector<std::string>>()->value_name("PATTERN"),
         "deny a host pattern (every port unless :PORT); deny wins over allow; repeatable")
        ("net-preset", po::value<std::vector<std::string>>()->value_name("NAME"),
         "add a network preset on top of the policy: balanced (package registries, GitHub, "
         "model APIs), open (any public host), locked (nothing); repeatable")
        ("secret", po::value<std::vector<std::string>>()->value_name("NAME=SOURCE[@HOSTS]"),
         "$NAME holds a placeholder (stable across runs); the proxy puts the real value in "
         "requests to HOSTS (comma-separated) and sends them on over TLS. SOURCE: env:VAR, "
         "file:PATH, dotenv:FILE (NAME from a .env file; FILE#KEY another key) or "
         "json:FILE#dotted.path (a string field). Without @HOSTS: the hosts of the policy's own "
         "[secrets] NAME. Implies --net proxy and allows HOSTS; repeatable")
        ("publish", po::value<std::vector<std::string>>()->value_name("PORT[:HOSTPORT]"),
         "make a server the command runs inside on 127.0.0.1:PORT reachable from the host at "
         "127.0.0.1:HOSTPORT (default: the same port), e.g. --publish 3000 for a dev server, "
         "--publish 8080:18080 to use another port on the host; only the host's loopback "
         "listens, while the command runs; any network mode but host; repeatable")
        ("net-log", po::value<std::string>()->value_name("FILE"),
         "write one JSON line per connection attempt (time, host, port, method, decision, "
         "rule, bytes)")
        ("verbose,v", "print the plan's summary and notes to stderr before running");
    // clang-format on
    return d;
}

// Only for run: how the command's terminal and stdio are relayed.
po::options_description terminal_options() {
    po::options_description d("Terminal");
    // clang-format off
    d.add_options()
        ("tty-raw",
         "pass every escape sequence the command writes to your terminal; by default those "
         "that act on your machine (OSC 52 clipboard, file:// links, title and colour "
         "reports, DCS/APC passthrough) are dropped")
        ("no-tty",
         "give the command pipes even when run from a terminal (it then sees no tty)")
        ("apply",
         "overlay mode: apply the run's changes to the workspace when it ends, as "
         "`agentjail apply RUN` does (protected paths and conflicts are left for it)");
    // clang-format on
    return d;
}

// Only for run: where the result record goes.
po::options_description record_options() {
    po::options_description d("Result record");
    // clang-format off
    d.add_options()
        ("result-file", po::value<std::string>()->value_name("FILE"),
         "write the result record (JSON: status, times, memory, limits) to FILE, also when "
         "agentjail itself fails")
        ("json", "after the command ended, write the result record on stderr: its last line, "
         "after a line \"--- agentjail result ---\" (accept it only there; see --json-fd)")
        ("json-fd", po::value<int>()->value_name("N"),
         "write the result record as one JSON line to file descriptor N (3 or more, open "
         "for writing, never given to the command): the channel a CI job can trust");
    // clang-format on
    return d;
}

// Flags that set a [limits] key, and the key.
const char* limit_key(const std::string& flag) {
    static const std::pair<const char*, const char*> map[] = {
        {"memory", "memory"},      {"swap", "swap"},         {"cpus", "cpus"},
        {"pids", "pids"},          {"timeout", "timeout"},   {"kill-grace", "kill_grace"},
        {"cpu-time", "cpu_time"},  {"nofile", "nofile"},     {"fsize", "fsize"},
        {"tmpfs-size", "tmpfs_size"}};
    for (const auto& [f, k] : map)
        if (flag == f) return k;
    return nullptr;
}

po::options_description explain_options() {
    po::options_description d = run_options();
    d.add_options()("json", "print the plan as JSON");
    return d;
}

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
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return false;
    return true;
}

Result<void> apply_one(policy::Policy& p, const std::string& key, const std::string& value,
                       const Context& ctx) {
    if (value.empty()) return invalid("--" + key + ": empty value");
    if (const char* limit = limit_key(key)) return policy::set_limit(p, limit, value, flag_origin("--" + key));
    if (key == "ro" || key == "rw") {
        auto [src, dst] = split_mount(value);
        std::string s = resolve_path(src, ctx);
        std::string d = dst.empty() ? "" : resolve_path(dst, ctx);
        if (key == "ro")
            policy::add_ro(p, s, d, flag_origin("--ro"));
        else
            policy::add_rw(p, s, d, flag_origin("--rw"));
    } else if (key == "hide") {
        policy::add_hide(p, resolve_path(value, ctx), flag_origin("--hide"));
    } else if (key == "tmpfs") {
        std::string path = value;
        std::uint64_t size = 0;
        size_t colon = value.rfind(':');
        if (colon != std::string::npos) {
            auto sz = units::parse_size(value.substr(colon + 1));
            if (!sz)
                return invalid("--tmpfs " + value + ": " + sz.error().message());
            if (*sz == 0) return invalid("--tmpfs " + value + ": a size of 0 bytes (leave out :SIZE for the default)");
            size = *sz;
            path = value.substr(0, colon);
        }
        if (path.empty()) return invalid("--tmpfs " + value + ": no path");
        policy::add_tmpfs(p, resolve_path(path, ctx), size, flag_origin("--tmpfs"));
    } else if (key == "env") {
        size_t eq = value.find('=');
        std::string name = value.substr(0, eq);
        if (!is_env_name(name))
            return invalid("--env " + value + ": '" + name + "' is not a variable name");
        if (eq == std::string::npos)
            // Named exactly by the user: this lifts the secret filter for this name only.
            policy::pass_env(p, name, flag_origin("--env"));
        else
            policy::set_env(p, name, value.substr(eq + 1), flag_origin("--env"));
    } else if (key == "env-file") {
        if (auto r = policy::load_env_file(p, resolve_path(value, ctx)); !r) return r;
    } else if (key == "workspace") {
        p.workspace_path =
            policy::Located<std::string>{resolve_path(value, ctx), flag_origin("--workspace")};
        // Named by the user: the only way a workspace may be / or the home directory.
        p.workspace_explicit = true;
    } else if (key == "workspace-mode") {
        if (auto r = policy::set_workspace_mode(p, value, flag_origin("--workspace-mode")); !r)
            return r;
    } else if (key == "protect") {
        if (auto r = policy::add_protect(p, value, flag_origin("--protect")); !r) return r;
    } else if (key == "unprotect") {
        if (auto r = policy::remove_protect(p, value, flag_origin("--unprotect")); !r) return r;
    } else if (key == "net") {
        if (auto r = policy::set_net_mode(p, value, flag_origin("--net")); !r) return r;
    } else if (key == "allow-host") {
        if (auto r = policy::add_allow_host(p, value, flag_origin("--allow-host")); !r) return r;
    } else if (key == "publish") {
        if (auto r = policy::add_publish(p, value, flag_origin("--publish")); !r) return r;
    } else if (key == "deny-host") {
        if (auto r = policy::add_deny_host(p, value, flag_origin("--deny-host")); !r) return r;
    } else if (key == "net-preset") {
        if (auto r = policy::apply_net_preset(p, value, flag_origin("--net-preset")); !r) return r;
    } else if (key == "secret") {
        std::string spec = value;
        // A file source's path relative to the caller's directory (or ~), like every
        // other path flag; a dotenv: or json: path ends at its last '#'.
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
        if (auto r = policy::add_secret(p, spec, flag_origin("--secret")); !r) return r;
    } else if (key == "net-log") {
        p.network.log = policy::Located<std::string>{resolve_path(value, ctx), flag_origin("--net-log")};
    } else if (key == "seccomp-log") {
        p.seccomp_log = policy::Located<std::string>{resolve_path(value, ctx), flag_origin("--seccomp-log")};
    } else if (key == "hostname") {
        p.hostname = policy::Located<std::string>{value, flag_origin("--hostname")};
    } else if (key == "cwd") {
        p.cwd = policy::Located<std::string>{resolve_path(value, ctx), flag_origin("--cwd")};
    }
    return {};
}

}  // namespace

Result<Context> current_context() {
    // The planner's rule (sys/caller.hpp): a flag's ~ and relative paths mean what the
    // plan's do.
    Context c;
    auto cwd = sys::caller_cwd();
    if (!cwd) return std::move(cwd).error();
    c.cwd = *cwd;
    c.home = sys::caller_home();
    if (c.home.empty()) c.home = "/";
    return c;
}

std::string resolve_path(const std::string& path, const Context& ctx) {
    if (path.empty() || path[0] == '{') return path;
    if (path == "~" || util::starts_with(path, "~/"))
        return util::normalize_path(ctx.home + "/" + path.substr(1));
    if (path[0] == '/') return util::normalize_path(path);
    return util::normalize_path(ctx.cwd + "/" + path);
}

Result<Invocation> parse_invocation(Verb verb, const std::vector<std::string>& args,
                                    const Context& ctx) {
    Invocation inv;
    po::options_description desc = verb == Verb::explain ? explain_options() : run_options();
    if (verb == Verb::run) {
        desc.add(terminal_options());
        desc.add(record_options());
    }
    po::parsed_options parsed(&desc);
    po::variables_map vm;
    // The first word that is not an option (or "--") ends the options and starts
    // the command: `agentjail ls -l` runs `ls -l`. Boost cannot stop there by
    // itself, so the split is found first, asking desc which options take a value.
    size_t split = args.size();
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            inv.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
            split = i;
            break;
        }
        if (a.size() < 2 || a[0] != '-') {
            inv.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
            split = i;
            break;
        }
        auto takes_value = [&desc](const std::string& name) {
            const po::option_description* o = desc.find_nothrow(name, false);
            return o != nullptr && o->semantic()->max_tokens() > 0;
        };
        if (a[1] == '-') {
            // --name=value carries its value; --name value takes the next word.
            if (a.find('=') == std::string::npos && takes_value(a.substr(2))) ++i;
            continue;
        }
        // A group of short options (-vp minimal, -vpminimal): the first one that
        // takes a value takes the rest of the group, or the next word.
        for (size_t j = 1; j < a.size(); ++j) {
            if (!takes_value(std::string("-") + a[j])) continue;
            if (j + 1 == a.size()) ++i;
            break;
        }
    }
    std::vector<std::string> option_args(args.begin(),
                                         args.begin() + static_cast<std::ptrdiff_t>(split));
    try {
        parsed = po::command_line_parser(option_args)
                     .options(desc)
                     // No abbreviations: `--pol` must not silently mean --policy.
                     .style(po::command_line_style::default_style &
                            ~po::command_line_style::allow_guessing)
                     .run();
        po::store(parsed, vm);
    } catch (const po::error& e) {
        return invalid(std::string(e.what()) + " (see agentjail " +
                       (verb == Verb::explain ? "explain " : "") + "--help)");
    }
    if (vm.count("help")) {
        inv.help = true;
        return inv;
    }
    inv.verbose = vm.count("verbose") > 0;
    inv.json = vm.count("json") > 0;
    inv.tty_raw = vm.count("tty-raw") > 0;
    inv.no_tty = vm.count("no-tty") > 0;
    inv.apply = vm.count("apply") > 0;
    if (vm.count("json-fd")) {
        inv.json_fd = vm["json-fd"].as<int>();
        // 0, 1 and 2 are the command's streams as well: a record there can be forged.
        if (inv.json_fd < 3)
            return invalid(
                "--json-fd " + std::to_string(inv.json_fd) +
                ": must be 3 or more (0-2 are the command's streams, which it can write a fake "
                "record to; use --json for stderr)");
    }
    if (vm.count("result-file")) {
        inv.result_file = resolve_path(vm["result-file"].as<std::string>(), ctx);
        if (vm["result-file"].as<std::string>().empty()) return invalid("--result-file: empty value");
    }

    // No --policy: an agent preset when the command is an agent it knows
    // (`agentjail -- claude` is `agentjail --policy claude -- claude`), else default.
    std::string policy_name = "default";
    std::string chosen_by;
    if (vm.count("policy")) {
        policy_name = vm["policy"].as<std::string>();
    } else if (!inv.command.empty()) {
        if (const auto* preset = policy::preset_for_command(inv.command.front())) {
            policy_name = preset->name;
            chosen_by = "the command's name (" + inv.command.front() + ")";
        }
    }
    auto pol = agentjail::Policy::load(policy_name);
    if (!pol) return std::move(pol).error();
    policy::Policy& p = pol->raw();
    p.chosen_by = chosen_by;

    // Overrides in command-line order, so a later flag lands on top of an earlier one.
    for (const po::option& o : parsed.options) {
        if (o.string_key == "policy" || o.string_key == "help" || o.string_key == "verbose" ||
            o.string_key == "json" || o.string_key == "json-fd" || o.string_key == "result-file" ||
            o.string_key == "tty-raw" || o.string_key == "no-tty" || o.string_key == "apply")
            continue;
        if (o.string_key == "no-commit-uncommitted") {
            p.workspace_commit_uncommitted = {false, flag_origin("--no-commit-uncommitted")};
            continue;
        }
        if (o.string_key == "allow-degraded") {
            if (auto r = policy::set_limit(p, "allow_degraded", "true", flag_origin("--allow-degraded")); !r)
                return std::move(r).error();
            continue;
        }
        if (o.value.empty()) continue;
        if (auto r = apply_one(p, o.string_key, o.value.front(), ctx); !r)
            return std::move(r).error();
    }
    // The flags may break a rule the files kept (a relative --cwd, a bad hostname):
    // report it now, naming the flag, before anything is planned.
    if (auto v = policy::validate(p); !v) return std::move(v).error();
    inv.policy = std::move(*pol);
    return inv;
}

Result<bool> parse_simple(const std::string& verb, const std::vector<std::string>& args,
                          const std::string& operand_name, std::vector<std::string>& operands) {
    po::options_description desc;
    desc.add_options()("help,h", "show help");
    po::options_description hidden;
    hidden.add_options()("operand", po::value<std::vector<std::string>>());
    po::options_description all;
    all.add(desc).add(hidden);
    po::positional_options_description pos;
    pos.add("operand", -1);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args)
                      .options(all)
                      .positional(pos)
                      .style(po::command_line_style::default_style &
                             ~po::command_line_style::allow_guessing)
                      .run(),
                  vm);
    } catch (const po::error& e) {
        return invalid(std::string(e.what()) + " (see agentjail " + verb + " --help)");
    }
    if (vm.count("help")) return true;
    if (vm.count("operand")) {
        operands = vm["operand"].as<std::vector<std::string>>();
        if (operand_name.empty())
            return invalid(verb + " takes no arguments, got '" + operands.front() +
                           "' (see agentjail " + verb + " --help)");
    }
    return false;
}

std::vector<std::string> describe_overrides(const policy::Policy& p) {
    std::vector<std::string> out;
    auto from_cli = [](const policy::Origin& o) { return o.file == "command line"; };
    if (p.workspace_path && from_cli(p.workspace_path->origin))
        out.push_back("--workspace " + p.workspace_path->value);
    for (const auto& m : p.ro)
        if (from_cli(m.origin))
            out.push_back("--ro " + m.src + (m.dst.empty() ? "" : " -> " + m.dst));
    for (const auto& m : p.rw)
        if (from_cli(m.origin))
            out.push_back("--rw " + m.src + (m.dst.empty() ? "" : " -> " + m.dst));
    for (const auto& h : p.hide)
        if (from_cli(h.origin)) out.push_back("--hide " + h.pattern);
    if (from_cli(p.workspace_mode.origin))
        out.push_back(std::string("--workspace-mode ") +
                      policy::workspace_mode_name(p.workspace_mode.value));
    for (const auto& r : p.protect)
        if (from_cli(r.origin)) out.push_back("--protect " + r.pattern);
    for (const auto& u : p.unprotect)
        if (from_cli(u.origin)) out.push_back("--unprotect " + u.pattern);
    for (const auto& t : p.tmpfs)
        if (from_cli(t.origin))
            out.push_back("--tmpfs " + t.path +
                          (t.size_bytes ? " (" + std::to_string(t.size_bytes) + " bytes)" : ""));
    for (const auto& a : p.env_allow)
        if (from_cli(a.origin)) out.push_back("--env " + a.value + " (passed from the caller)");
    for (const auto& e : p.env_set)
        if (from_cli(e.origin)) out.push_back("--env " + e.name + "=" + e.value);
    if (from_cli(p.limits.allow_degraded.origin)) out.push_back("--allow-degraded");
    auto size = [&](const policy::Located<std::optional<std::uint64_t>>& f) {
        if (from_cli(f.origin))
            out.push_back(f.origin.key + " " + (f.value ? units::format_size(*f.value) : "max"));
    };
    auto count = [&](const policy::Located<std::optional<std::uint64_t>>& f) {
        if (from_cli(f.origin))
            out.push_back(f.origin.key + " " + (f.value ? std::to_string(*f.value) : "max"));
    };
    auto secs = [&](const policy::Located<std::optional<double>>& f) {
        if (from_cli(f.origin))
            out.push_back(f.origin.key + " " + (f.value ? units::format_duration(*f.value) : "max"));
    };
    size(p.limits.memory);
    size(p.limits.swap);
    if (from_cli(p.limits.cpus.origin))
        out.push_back("--cpus " + (p.limits.cpus.value ? units::format_number(*p.limits.cpus.value) : "max"));
    count(p.limits.pids);
    secs(p.limits.timeout);
    if (from_cli(p.limits.kill_grace.origin))
        out.push_back("--kill-grace " + units::format_duration(p.limits.kill_grace.value));
    secs(p.limits.cpu_time);
    count(p.limits.nofile);
    size(p.limits.fsize);
    size(p.limits.tmpfs_size);
    if (from_cli(p.network.mode.origin))
        out.push_back(p.network.mode.origin.key + " (network mode " +
                      policy::net_mode_name(p.network.mode.value) + ")");
    for (const auto& r : p.network.allow)
        if (from_cli(r.origin)) out.push_back("--allow-host " + r.pattern);
    for (const auto& r : p.network.deny)
        if (from_cli(r.origin)) out.push_back("--deny-host " + r.pattern);
    if (from_cli(p.network.log.origin)) out.push_back("--net-log " + p.network.log.value);
    for (const auto& r : p.network.publish)
        if (from_cli(r.origin))
            out.push_back("--publish " + std::to_string(r.port) + ":" + std::to_string(r.host_port));
    if (from_cli(p.hostname.origin)) out.push_back("--hostname " + p.hostname.value);
    if (from_cli(p.cwd.origin)) out.push_back("--cwd " + p.cwd.value);
    return out;
}

std::string global_help() {
    std::ostringstream os;
    os << "agentjail " << AGENTJAIL_VERSION
       << ": run a command in a Linux sandbox (user, mount, pid, net, ipc, uts and cgroup\n"
          "namespaces) whose filesystem, environment and network a policy describes.\n"
          "\n"
          "Usage:\n"
          "  agentjail [OPTIONS] [--] COMMAND [ARGS...]   run COMMAND in a sandbox\n"
          "  agentjail run [OPTIONS] [--] COMMAND [ARGS...]   the same\n"
          "  agentjail explain [OPTIONS] [--json] [--] [COMMAND...]   print what run would do\n"
          "  agentjail check FILE...     validate policy files\n"
          "  agentjail doctor            check what this host's kernel supports\n"
          "  agentjail policies          list the built-in policies\n"
          "  agentjail gc                remove the cgroups of killed runs\n"
          "  agentjail apply RUN         write an overlay run's changes into its workspace\n"
          "  agentjail runs [--json]     the clone and overlay runs kept, with branch and flags\n"
          "  agentjail discard RUN...    remove a run's branch (clone mode) and its state\n"
          "  agentjail --version\n"
          "\n"
          "The first word that is not an option ends the options ('agentjail ls -l' runs\n"
          "'ls -l'); '--' ends them too. Relative paths are taken from the current\n"
          "directory and ~ is the home directory. Each subcommand takes --help.\n"
          "\n"
       << run_options() << "\n"
       << terminal_options() << "\n"
       << record_options()
       << "\n"
          "Reading the record: with --json it is the last line of stderr, and only when the\n"
          "line before it is exactly '--- agentjail result ---' (the command can print that\n"
          "too, but never after agentjail's); with --json-fd N it is the one line on N, which\n"
          "the command never had. No record there: agentjail was killed before writing it.\n"
          "Logs and the result file are refused inside what the sandbox can write (the\n"
          "workspace, --rw) unless the policy says [log] allow_in_sandbox = true.\n"
          "\n"
          "Exit status: the command's own; 128+N when it died of signal N; 124 when the\n"
          "--timeout ran out; 137 when the memory limit's OOM killer ended it; 125 when\n"
          "agentjail itself failed; 126 when the command is not executable; 127 when it is\n"
          "not found.\n"
          "\n"
          "Examples:\n"
          "  agentjail -- claude\n"
          "  agentjail --policy minimal -- /bin/true\n"
          "  agentjail -m 2G --cpus 1.5 --pids 256 -t 30m --result-file /tmp/result.json -- npm "
          "test\n"
          "  agentjail -C ~/project --ro ~/datasets --hide ~/project/secrets -e FOO=bar -- make "
          "test\n"
          "  agentjail explain -- claude\n"
          "  agentjail check my.toml\n"
          "  agentjail doctor\n";
    return os.str();
}

std::string explain_help() {
    std::ostringstream os;
    os << "agentjail explain: print the effective policy (its layers and the overrides of\n"
          "the command line) and the plan: every mount, the environment, the namespaces.\n"
          "It prints exactly what 'agentjail run' with the same arguments would do, and runs\n"
          "nothing. Without a command it explains $SHELL (or sh).\n"
          "\n"
          "Usage:\n"
          "  agentjail explain [OPTIONS] [--json] [--] [COMMAND [ARGS...]]\n"
          "\n"
       << explain_options()
       << "\n"
          "Examples:\n"
          "  agentjail explain -- claude\n"
          "  agentjail explain --policy minimal --json -- /bin/true\n"
          "  agentjail explain -C ~/project --ro ~/datasets -- make test\n";
    return os.str();
}

std::string gc_help() {
    return "agentjail gc: remove the cgroups left behind by agentjail runs that were killed\n"
           "(SIGKILL, a crash) before they could clean up, killing anything still in them.\n"
           "A group is stale when the agentjail whose pid its name carries\n"
           "(agentjail-<pid>-<n>) is gone; only such groups are touched, in the places\n"
           "agentjail itself creates them for this caller. Every run does this too.\n"
           "Such runs may also have left empty placeholder files in a workspace (for\n"
           "protected names like .envrc) and the proxy's CA directory in TMPDIR; each\n"
           "run writes down what it made (~/.local/state/agentjail/leftovers/), and gc\n"
           "(and every run) removes what a run that is gone left, when it is still\n"
           "exactly what that run made (the same empty file, the same directory).\n"
           "\n"
           "Usage:\n"
           "  agentjail gc\n"
           "\n"
           "Prints one line per group or file removed; exit status 1 when a group could not\n"
           "be removed.\n"
           "\n"
           "Examples:\n"
           "  agentjail gc\n"
           "  sudo agentjail gc      # the groups of runs made as root\n";
}

int report(const Error& e) {
    // Messages name files and hosts; none may act on the user's terminal.
    say(e.message());
    switch (e.kind()) {
    case ErrorKind::command_not_found: return 127;
    case ErrorKind::command_not_executable: return 126;
    default: return exit_agentjail_error;
    }
}

int usage_error(const std::string& message) {
    say(message);
    return exit_agentjail_error;
}

void say(const std::string& line) { std::fprintf(stderr, "agentjail: %s\n", util::printable(line).c_str()); }

void say_bare(const std::string& line) { std::fprintf(stderr, "%s\n", util::printable(line).c_str()); }

}  // namespace agentjail::cli
