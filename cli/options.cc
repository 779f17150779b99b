// SPDX-License-Identifier: Apache-2.0
// Turns run/explain flags into overrides on the loaded policy, each with the
// origin "command line (--flag)", and holds the help texts and error reporting.
#include "options.hpp"

#include "flags.hpp"

#include "sys/caller.hpp"
#include "util/strings.hpp"
#include "base/text.hpp"
#include "plan/limits.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace po = boost::program_options;

namespace agentjail::cli {

namespace {

Error invalid(const std::string& message) {
    return Error(ErrorKind::invalid_input, EINVAL, message);
}

// Reaches error_with_option_name's protected substitutions (what the user typed, put
// into the message's %placeholders%) through a pointer to member; never instantiated.
struct SubstitutionsOf : po::error_with_option_name {
    static std::map<std::string, std::string> po::error_with_option_name::*member() {
        return &SubstitutionsOf::m_substitutions;
    }
};

// Boost's message for a parse error, with "did you mean --X?" for an option nobody
// has, the closest long option within a few edits (as policy keys get).
std::string parse_error_text(po::error& e, const po::options_description& desc) {
    std::string msg = error_text(e);
    const auto* unknown = dynamic_cast<const po::unknown_option*>(&e);
    if (unknown == nullptr) return msg;
    std::string given = unknown->get_option_name();
    while (!given.empty() && given[0] == '-') given.erase(0, 1);
    if (const size_t eq = given.find('='); eq != std::string::npos) given.resize(eq);
    if (given.size() < 2) return msg;
    std::string best;
    std::size_t best_d = given.size() <= 4 ? 2 : 3;
    for (const auto& o : desc.options()) {
        const std::string name = o->long_name();
        if (name.empty()) continue;
        const std::size_t d = base::edit_distance(given, name);
        if (d < best_d) {
            best_d = d;
            best = name;
        }
    }
    return best.empty() ? msg : msg + "; did you mean --" + best + "?";
}

}  // namespace

std::string error_text(po::error& e) {
    // Boost fills %original_token% and the like by replacing each until none is left,
    // so an argument that itself holds "%original_token%" loops forever (found by
    // fuzz_cli). Each '%' the user gave is shown as U+FF05, which no placeholder
    // matches; the message is otherwise Boost's.
    if (auto* named = dynamic_cast<po::error_with_option_name*>(&e)) {
        const auto given = named->*SubstitutionsOf::member();
        for (const auto& [name, value] : given) {
            if (value.find('%') == std::string::npos) continue;
            std::string shown;
            for (const char c : value) shown += c == '%' ? std::string("\uFF05") : std::string(1, c);
            named->set_substitute(name, shown);
        }
    }
    return e.what();
}

Result<Context> current_context() {
    // The planner's rule (sys/caller.hpp): a flag's ~ and relative paths mean what the
    // plan's do.
    Context c;
    auto cwd = sys::caller_cwd();
    if (!cwd) return std::move(cwd).error();
    c.cwd = *cwd;
    c.pwd = sys::caller_pwd(c.cwd);
    c.home = sys::caller_home();
    if (c.home.empty()) c.home = "/";
    c.config = policy::user_config_file();
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
    po::options_description desc = flag_options(verb, FlagGroup::options);
    if (verb == Verb::run) {
        desc.add(flag_options(verb, FlagGroup::terminal));
        desc.add(flag_options(verb, FlagGroup::record));
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
    } catch (po::error& e) {
        return invalid(parse_error_text(e, desc) + " (see agentjail " +
                       (verb == Verb::explain ? "explain " : "") + "--help)");
    }
    if (vm.count("help")) {
        inv.help = true;
        return inv;
    }
    for (const auto& f : flags())
        if (f.sets != nullptr && find_flag(f.name, verb) == &f && vm.count(f.name)) inv.*f.sets = true;
    if (vm.count("tty-filter")) {
        const std::string& when = vm["tty-filter"].as<std::string>();
        if (when == "always")
            inv.filter_pipes = true;
        else if (when == "never")
            inv.tty_raw = true;
        else if (when != "terminal")
            return invalid("--tty-filter " + when + ": expected terminal, always or never");
        if (when != "never" && vm.count("tty-raw"))
            return invalid("--tty-filter " + when + " and --tty-raw disagree: give one of them");
    }
    if (vm.count("json-fd")) {
        const std::string& v = vm["json-fd"].as<std::string>();
        char* end = nullptr;
        errno = 0;
        long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno != 0 || n < 0 || n > 1 << 20)
            return invalid("--json-fd " + v + ": not a file descriptor number");
        inv.json_fd = static_cast<int>(n);
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

    // The user's defaults (config.toml), read before anything else is decided.
    policy::UserConfig config;
    if (!ctx.config.empty()) {
        auto c = policy::read_user_config(ctx.config);
        if (!c) return std::move(c).error();
        config = std::move(*c);
    }
    const policy::ConfigSetting* config_policy = nullptr;
    for (const auto& s : config.settings)
        if (s.key == "policy") config_policy = &s;
    if (config_policy != nullptr && (config_policy->is_switch || config_policy->values.size() != 1))
        return base::error_at(config_policy->origin, "policy: expected one policy name or file");

    // No --policy: the project's own agentjail.toml once you trusted it as it is, then
    // an agent preset when the command is an agent it knows (`agentjail -- claude` is
    // `agentjail --policy claude -- claude`), else the config's policy, else default.
    std::string policy_name = "default";
    std::string chosen_by;
    const policy::Builtin* preset = inv.command.empty() ? nullptr : policy::preset_for_command(inv.command.front());
    std::optional<std::string> project;
    if (!vm.count("policy") && !ctx.config.empty()) project = project_policy_file(ctx);
    const std::optional<std::string> project_text = project ? trusted_project_policy(*project) : std::nullopt;
    const bool project_trusted = project_text.has_value();
    if (project && !project_trusted)
        inv.warnings.push_back(util::printable(*project) +
                               " is not used: the agent can write the project, so it is used only once you "
                               "trusted it as it is (`agentjail trust` shows it and asks)");
    if (vm.count("policy")) {
        policy_name = vm["policy"].as<std::string>();
    } else if (project_trusted) {
        policy_name = *project;
        chosen_by = "the project's file, trusted as it is (agentjail trust)";
    } else if (preset != nullptr) {
        policy_name = preset->name;
        chosen_by = "the command's name (" + inv.command.front() + ")";
    } else if (config_policy != nullptr) {
        policy_name = config_policy->values.front();
        // A file named relative to the config file's own directory.
        if (policy_name.find('/') != std::string::npos && policy_name[0] != '/' && policy_name[0] != '~')
            policy_name = config.file.substr(0, config.file.rfind('/') + 1) + policy_name;
        else if (policy_name[0] == '~')
            policy_name = resolve_path(policy_name, ctx);
        chosen_by = config_policy->origin.describe();
    }
    auto pol = project_text ? load_project_policy(*project_text, *project)
                                                   : agentjail::Policy::load(policy_name);
    if (!pol) return std::move(pol).error();
    policy::Policy& p = pol->raw();
    p.chosen_by = chosen_by;

    // The config's settings first, each as its flag would (a relative path from the
    // config file's directory), so that the command line's land on top.
    Context config_ctx = ctx;
    config_ctx.cwd = config.file.substr(0, config.file.rfind('/'));
    for (const auto& s : config.settings) {
        if (&s == config_policy) continue;
        std::string name = s.key;
        std::replace(name.begin(), name.end(), '_', '-');
        const Flag* f = find_flag(name, verb);
        // A setting of run's alone (quiet, tty) is not explain's business.
        if (f == nullptr && verb != Verb::run && find_flag(name, Verb::run) != nullptr) continue;
        if (f == nullptr || (f->limit == nullptr && f->apply == nullptr && f->sets == nullptr)) {
            std::vector<std::string> names{"policy"};
            for (const auto& fl : flags())
                if (fl.limit != nullptr || fl.apply != nullptr || fl.sets != nullptr) names.emplace_back(fl.name);
            std::vector<std::string_view> views(names.begin(), names.end());
            const std::string near = base::closest(name, views);
            return base::error_at(s.origin, "no such setting (a setting is a flag's long name, as `" +
                                                          std::string("agentjail --help` lists them)") +
                                                          (near.empty() ? "" : "; did you mean '" + near + "'?"));
        }
        if ((f->value_name == nullptr) != s.is_switch)
            return base::error_at(s.origin, f->value_name == nullptr
                                                          ? "expected true or false (--" + name + " takes no value)"
                                                          : "expected the value of --" + name + " (" + f->value_name + ")");
        if (!f->repeatable && s.values.size() > 1)
            return base::error_at(s.origin, "--" + name + " takes one value, not a list");
        if (s.is_switch) {
            if (!s.on) continue;
            if (f->sets != nullptr) {
                inv.*(f->sets) = true;
                continue;
            }
        }
        const std::vector<std::string> values = s.is_switch ? std::vector<std::string>{""} : s.values;
        for (const auto& value : values) {
            if (f->value_name != nullptr && value.empty()) return base::error_at(s.origin, "empty value");
            auto r = f->limit != nullptr ? policy::set_limit(p, f->limit, value, s.origin)
                                         : f->apply(p, value, config_ctx, s.origin);
            if (!r) return std::move(r).error();
        }
    }
    // Overrides in command-line order, so a later flag lands on top of an earlier one.
    for (const po::option& o : parsed.options) {
        const Flag* f = find_flag(o.string_key, verb);
        if (f == nullptr || (f->limit == nullptr && f->apply == nullptr)) continue;
        const std::string value = o.value.empty() ? "" : o.value.front();
        if (f->value_name != nullptr && value.empty()) return invalid("--" + o.string_key + ": empty value");
        const policy::Origin origin = flag_origin(f->name);
        auto r = f->limit != nullptr ? policy::set_limit(p, f->limit, value, origin) : f->apply(p, value, ctx, origin);
        if (!r) return std::move(r).error();
    }
    // The flags may break a rule the files kept (a relative --cwd, a bad hostname):
    // report it now, naming the flag, before anything is planned.
    if (auto v = policy::validate(p); !v) return std::move(v).error();
    inv.policy = std::move(*pol);
    return inv;
}

std::vector<std::string> describe_overrides(const policy::Policy& p) {
    std::vector<std::string> out;
    auto from_cli = [](const policy::Origin& o) { return o.file == "command line"; };
    if (p.workspace_path && from_cli(p.workspace_path->origin))
        out.push_back(p.workspace_path->origin.key + " " + p.workspace_path->value);
    for (const auto& m : p.ro)
        if (from_cli(m.origin))
            out.push_back(m.origin.key + " " + m.src + (m.dst.empty() ? "" : " -> " + m.dst));
    for (const auto& m : p.rw)
        if (from_cli(m.origin))
            out.push_back(m.origin.key + " " + m.src + (m.dst.empty() ? "" : " -> " + m.dst));
    for (const auto& h : p.hide)
        if (from_cli(h.origin)) out.push_back(h.origin.key + " " + h.pattern);
    if (from_cli(p.landlock.origin))
        out.push_back(p.landlock.origin.key + " " + policy::landlock_mode_name(p.landlock.value));
    if (from_cli(p.workspace_view.origin))
        out.push_back(p.workspace_view.origin.key + " " + policy::workspace_view_name(p.workspace_view.value));
    if (from_cli(p.workspace_mode.origin))
        out.push_back(p.workspace_mode.origin.key + " " + policy::workspace_mode_name(p.workspace_mode.value));
    for (const auto& r : p.protect)
        if (from_cli(r.origin)) out.push_back(r.origin.key + " " + r.pattern);
    for (const auto& u : p.unprotect)
        if (from_cli(u.origin)) out.push_back(u.origin.key + " " + u.pattern);
    for (const auto& t : p.tmpfs)
        if (from_cli(t.origin))
            out.push_back(t.origin.key + " " + t.path +
                          (t.size_bytes ? " (" + std::to_string(t.size_bytes) + " bytes)" : ""));
    for (const auto& a : p.env_allow)
        if (from_cli(a.origin)) out.push_back(a.origin.key + " " + a.value + " (passed from the caller)");
    for (const auto& e : p.env_set)
        if (from_cli(e.origin)) out.push_back(e.origin.key + " " + e.name + "=" + e.value);
    if (from_cli(p.limits.allow_degraded.origin)) out.push_back(p.limits.allow_degraded.origin.key);
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
        out.push_back(p.limits.cpus.origin.key + " " + (p.limits.cpus.value ? units::format_number(*p.limits.cpus.value) : "max"));
    count(p.limits.pids);
    secs(p.limits.timeout);
    if (from_cli(p.limits.kill_grace.origin))
        out.push_back(p.limits.kill_grace.origin.key + " " + units::format_duration(p.limits.kill_grace.value));
    secs(p.limits.cpu_time);
    count(p.limits.nofile);
    size(p.limits.fsize);
    size(p.limits.tmpfs_size);
    if (from_cli(p.network.mode.origin))
        out.push_back(p.network.mode.origin.key + " (network mode " +
                      policy::net_mode_name(p.network.mode.value) + ")");
    for (const auto& r : p.network.allow)
        if (from_cli(r.origin)) out.push_back(r.origin.key + " " + r.pattern);
    for (const auto& r : p.network.deny)
        if (from_cli(r.origin)) out.push_back(r.origin.key + " " + r.pattern);
    if (from_cli(p.network.log.origin)) out.push_back(p.network.log.origin.key + " " + p.network.log.value);
    for (const auto& r : p.network.publish)
        if (from_cli(r.origin))
            out.push_back(r.origin.key + " " + std::to_string(r.port) + ":" + std::to_string(r.host_port));
    if (from_cli(p.hostname.origin)) out.push_back(p.hostname.origin.key + " " + p.hostname.value);
    if (from_cli(p.cwd.origin)) out.push_back(p.cwd.origin.key + " " + p.cwd.value);
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
          "  agentjail log [RUN]         what the last run (or RUN) was refused, and what would allow it\n"
          "  agentjail learn [OPTIONS] [--] COMMAND...   run it, then propose the policy lines it lacked\n"
          "  agentjail secret set|list|rm   secrets kept outside, put in where a run allows their hosts\n"
          "  agentjail trust [FILE]      use the project's agentjail.toml, as it is now\n"
          "  agentjail completion bash|zsh|fish   print the shell's completion script\n"
          "  agentjail --version         the version, the commit and what the build holds\n"
          "\n"
          "The first word that is not an option ends the options ('agentjail ls -l' runs\n"
          "'ls -l'); '--' ends them too. Relative paths are taken from the current\n"
          "directory and ~ is the home directory. Each subcommand takes --help.\n"
          "\n"
       << flag_options(Verb::run, FlagGroup::options) << "\n"
       << flag_options(Verb::run, FlagGroup::terminal) << "\n"
       << flag_options(Verb::run, FlagGroup::record)
       << "\n"
          "Reading the record: with --json it is the last line of stderr, and only when the\n"
          "line before it is exactly '--- agentjail result ---' (the command can print that\n"
          "too, but never after agentjail's); with --json-fd N it is the one line on N, which\n"
          "the command never had. No record there: agentjail was killed before writing it.\n"
          "Logs and the result file inside what the sandbox can write (the workspace, --rw)\n"
          "are written once the sandbox is gone, never while it runs ([log]\n"
          "allow_in_sandbox = true: as the run goes).\n"
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
       << flag_options(Verb::explain, FlagGroup::options)
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
