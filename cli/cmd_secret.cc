// SPDX-License-Identifier: Apache-2.0
// `agentjail secret set|list|rm`: secrets kept outside every sandbox, in
// $XDG_CONFIG_HOME/agentjail/secrets (default ~/.config/agentjail/secrets): NAME holds
// the value, NAME.hosts the hosts it is for, one per line, both mode 0600 in a
// directory of the caller's own (0700). A run in proxy mode that allows one of
// those hosts gets $NAME as a placeholder, and the proxy puts the value in requests
// to them (lib/plan/network.cc, SecretRule::stored); nothing else changes.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "policy/internal.hpp"
#include "sys/fd.hpp"
#include "sys/state_dir.hpp"
#include "util/strings.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace agentjail::cli {

namespace {

constexpr std::size_t kMaxValue = 64 * 1024;

// The store's directory, "" when neither XDG_CONFIG_HOME nor HOME is known.
std::string store_dir() {
    const std::string dir = policy::user_config_dir();
    return dir.empty() ? dir : dir + "/secrets";
}

// The store opened (made when `make`), never through a link, the caller's own and
// closed to others.
Result<sys::UniqueFd> open_store(bool make) {
    const std::string dir = store_dir();
    if (dir.empty())
        return Error(ErrorKind::invalid_input, ENOENT, "secret: no configuration directory (set HOME or XDG_CONFIG_HOME)");
    const std::string base = dir.substr(0, dir.rfind("/agentjail/secrets"));
    return sys::open_own_state_dir(base, {"agentjail", "secrets"}, make ? sys::StateDir::create : sys::StateDir::existing);
}

std::string check_name(const std::string& name) {
    if (auto why = policy::detail::check_env_name(name); !why.empty()) return "secret " + name + ": " + why;
    if (name.size() > 128) return "secret " + name.substr(0, 20) + "...: longer than 128 characters";
    return {};
}

// The value from the terminal (not echoed) or, piped, from stdin whole.
Result<std::string> read_value(const std::string& name) {
    std::string value;
    if (::isatty(STDIN_FILENO)) {
        std::fprintf(stderr, "value of %s (not shown): ", name.c_str());
        std::fflush(stderr);
        termios old {};
        const bool term = ::tcgetattr(STDIN_FILENO, &old) == 0;
        if (term) {
            termios quiet = old;
            quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
            ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        }
        std::getline(std::cin, value);
        if (term) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        std::fputc('\n', stderr);
    } else {
        std::ostringstream all;
        all << std::cin.rdbuf();
        value = all.str();
        if (!value.empty() && value.back() == '\n') value.pop_back();
        if (!value.empty() && value.back() == '\r') value.pop_back();
    }
    if (value.empty()) return Error(ErrorKind::invalid_input, EINVAL, "secret " + name + ": the value is empty");
    if (value.size() > kMaxValue) return Error(ErrorKind::invalid_input, E2BIG, "secret " + name + ": the value is over 64 KiB");
    if (value.find('\n') != std::string::npos || value.find('\0') != std::string::npos)
        return Error(ErrorKind::invalid_input, EINVAL, "secret " + name + ": the value holds a line break or a NUL byte");
    return value;
}

const char kHelp[] =
    "agentjail secret: secrets kept outside every sandbox, put into requests to their\n"
    "hosts by the proxy. A run through the proxy that allows one of a secret's hosts\n"
    "(--allow-host, a preset, the policy) sees $NAME as a placeholder, and the proxy\n"
    "swaps in the value only in requests to those hosts; a stored secret allows no\n"
    "host by itself, and a policy's own [secrets] NAME or --secret NAME wins over it.\n"
    "They live in $XDG_CONFIG_HOME/agentjail/secrets (default ~/.config/agentjail/secrets),\n"
    "mode 0600, hidden inside every sandbox.\n"
    "\nUsage:\n"
    "  agentjail secret set NAME --host HOST [--host HOST]...   value from a prompt or stdin\n"
    "  agentjail secret list                                     names and hosts, never values\n"
    "  agentjail secret rm NAME\n"
    "\nExamples:\n"
    "  agentjail secret set OPENAI_API_KEY --host api.openai.com\n"
    "  pass show openai | agentjail secret set OPENAI_API_KEY --host api.openai.com\n"
    "  agentjail --allow-host api.openai.com -- python agent.py\n";

// args: what follows "set"; hosts: the --host values.
int secret_set(const std::vector<std::string>& args, const std::vector<std::string>& host_flags) {
    std::string name;
    std::vector<std::string> hosts;
    for (const auto& h : host_flags) {
        if (h.empty()) return usage_error("secret set: --host needs a host name");
        if (auto why = policy::detail::check_host_pattern(h); !why.empty())
            return usage_error("secret set: --host " + h + ": " + why);
        if (h.find('*') != std::string::npos)
            return usage_error("secret set: --host " + h + ": give host names, not patterns (a stored secret goes "
                               "only where a run allows the host by name)");
        hosts.push_back(h);
    }
    if (args.size() > 1)
        return usage_error("secret set: one NAME at a time (the value is read from a prompt or stdin, never "
                           "from an argument)");
    if (!args.empty()) name = args.front();
    if (name.empty()) return usage_error("secret set: which NAME? agentjail secret set NAME --host HOST");
    if (auto why = check_name(name); !why.empty()) return usage_error(why);
    if (hosts.empty()) return usage_error("secret set " + name + ": which hosts is it for? add --host HOST");
    auto value = read_value(name);
    if (!value) return report(value.error());
    auto dir = open_store(true);
    if (!dir) return report(dir.error());
    std::string host_lines;
    for (const auto& h : hosts) host_lines += h + "\n";
    const std::string where = store_dir() + "/" + name;
    if (auto r = sys::replace_file_at(dir->get(), name.c_str(), *value, 0600, "secret " + where); !r)
        return report(r.error());
    std::fill(value->begin(), value->end(), '\0');
    if (auto r = sys::replace_file_at(dir->get(), (name + ".hosts").c_str(), host_lines, 0600, "secret " + where);
        !r)
        return report(r.error());
    std::fprintf(stderr, "agentjail: secret %s kept for %zu host%s\n", name.c_str(), hosts.size(),
                 hosts.size() == 1 ? "" : "s");
    return 0;
}

}  // namespace

std::vector<StoredSecret> stored_secrets() {
    std::vector<StoredSecret> out;
    auto dir = open_store(false);
    if (!dir) return out;
    sys::UniqueFd list(::openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR* d = list ? ::fdopendir(list.release()) : nullptr;
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.size() <= 6 || n.substr(n.size() - 6) != ".hosts") continue;
        StoredSecret s;
        s.name = n.substr(0, n.size() - 6);
        if (!check_name(s.name).empty()) continue;
        auto hosts = read_regular_at(dir->get(), n, kMaxValue);
        struct stat st {};
        if (!hosts || ::fstatat(dir->get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        std::istringstream in(*hosts);
        for (std::string h; std::getline(in, h);)
            if (!h.empty() && policy::detail::check_host_pattern(h).empty() && h.find('*') == std::string::npos)
                s.hosts.push_back(h);
        if (s.hosts.empty()) continue;
        s.path = store_dir() + "/" + s.name;
        out.push_back(std::move(s));
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

void apply_stored_secrets(policy::Policy& p) {
    for (auto& s : stored_secrets()) {
        if (std::any_of(p.network.secrets.begin(), p.network.secrets.end(),
                        [&](const policy::SecretRule& r) { return r.name == s.name; }))
            continue;
        policy::SecretRule rule;
        rule.name = s.name;
        rule.origin = Origin{"stored secret", 0, 0, "agentjail secret set " + s.name};
        rule.sources.push_back(Located<std::string>{"file:" + s.path, rule.origin});
        rule.hosts = std::move(s.hosts);
        rule.stored = true;
        p.network.secrets.push_back(std::move(rule));
    }
}

std::string secret_help() { return kHelp; }

int cmd_secret(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::fputs(kHelp, stderr);
        return 125;
    }
    VerbArgs parsed;
    if (auto status = parse_or_exit("secret", kHelp, args, parsed)) return *status;
    if (parsed.operands.empty()) return usage_error("secret: which one? set, list or rm (see agentjail secret --help)");
    const std::string& sub = parsed.operands[0];
    const std::vector<std::string> rest(parsed.operands.begin() + 1, parsed.operands.end());
    const std::vector<std::string> host_flags = parsed.values("host");
    if (sub != "set" && !host_flags.empty()) return usage_error("secret " + sub + ": --host is for secret set");
    if (sub == "set") return secret_set(rest, host_flags);
    if (sub == "list") {
        if (!rest.empty()) return usage_error("secret list takes no arguments");
        for (const auto& s : stored_secrets()) {
            std::string hosts;
            for (const auto& h : s.hosts) hosts += (hosts.empty() ? "" : ",") + h;
            std::printf("%s  %s\n", s.name.c_str(), hosts.c_str());
        }
        return 0;
    }
    if (sub == "rm") {
        if (rest.size() != 1) return usage_error("secret rm NAME: one name");
        if (auto why = check_name(rest[0]); !why.empty()) return usage_error(why);
        auto dir = open_store(false);
        if (!dir) return report(dir.error());
        const bool had = ::unlinkat(dir->get(), rest[0].c_str(), 0) == 0;
        const bool had_hosts = ::unlinkat(dir->get(), (rest[0] + ".hosts").c_str(), 0) == 0;
        if (!had && !had_hosts) return report(Error(ErrorKind::invalid_input, ENOENT, "secret " + rest[0] + ": none is kept"));
        return 0;
    }
    return usage_error("secret: unknown subcommand '" + sub + "' (set, list or rm)");
}

}  // namespace agentjail::cli
