// SPDX-License-Identifier: Apache-2.0
// A project's own policy file (agentjail.toml at the top of the project) and
// `agentjail trust`: the file is used only once the user approved its content. The
// agent can write the project, so the name alone proves nothing; the approval is the
// file's SHA-256 with its path, kept in <config>/agentjail/trusted (hidden inside every
// sandbox with the rest of the configuration), and a file changed since is not used.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "sys/state_dir.hpp"
#include "util/strings.hpp"

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

namespace agentjail::cli {

namespace {

constexpr std::size_t kMaxPolicy = 1 << 20;

std::optional<std::string> read_policy_text(const std::string& path) { return read_regular_at(AT_FDCWD, path, kMaxPolicy); }

std::string sha256_hex(const std::string& text) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
    return util::hex(md, len);
}

std::string trusted_list() {
    const std::string dir = policy::user_config_dir();
    return dir.empty() ? dir : dir + "/trusted";
}

// "HASH PATH" lines.
bool is_trusted(const std::string& path, const std::string& hash) {
    const std::string list = trusted_list();
    if (list.empty() || hash.empty()) return false;
    auto text = read_policy_text(list);
    if (!text) return false;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);)
        if (line == hash + " " + path) return true;
    return false;
}

}  // namespace

std::optional<std::string> read_regular_at(int dirfd, const std::string& name, std::size_t max) {
    sys::UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(max)) return std::nullopt;
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    ssize_t n = ::read(fd.get(), text.data(), text.size());
    if (n < 0) return std::nullopt;
    text.resize(static_cast<std::size_t>(n));
    return text;
}

std::optional<std::string> project_policy_file(const Context& ctx) {
    std::string dir = ctx.cwd;
    for (int depth = 0; depth < 64 && !dir.empty(); ++depth) {
        struct stat st {};
        const std::string file = (dir == "/" ? "" : dir) + "/agentjail.toml";
        if (::lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return file;
        // The project's top (a repository's) or the home: no further.
        if (dir == "/" || dir == ctx.home || ::lstat((dir + "/.git").c_str(), &st) == 0) break;
        dir = dir.substr(0, std::max<std::size_t>(dir.rfind('/'), 1));
    }
    return std::nullopt;
}

std::optional<std::string> trusted_project_policy(const std::string& path) {
    auto text = read_policy_text(path);
    if (!text || !is_trusted(path, sha256_hex(*text))) return std::nullopt;
    return text;
}

Result<agentjail::Policy> load_project_policy(const std::string& text, const std::string& path) {
    auto pol = agentjail::Policy::load_text(text, path);
    if (!pol) return pol;
    const auto& layers = pol->raw().layers;
    const std::string mine = policy::user_config_dir() + "/";
    for (std::size_t i = 0; i + 1 < layers.size(); ++i)
        if (layers[i].find('/') != std::string::npos && (mine.size() == 1 || !util::starts_with(layers[i], mine)))
            return Error(ErrorKind::invalid_input, EPERM,
                         path + " extends " + layers[i] +
                             ", a file its trust does not cover (the agent could change it): extend a built-in "
                             "policy or one of yours in ~/.config/agentjail/policies");
    return pol;
}

std::string trust_help() {
    return "agentjail trust: use the project's policy file (agentjail.toml at the top of the\n"
           "project) from now on, as it is now. It is shown, and kept as trusted by its\n"
           "SHA-256: once it changes (the agent can write the project) it is not used again\n"
           "until you trust it again. Until then runs say that it is there and unused.\n"
           "\nUsage:\n  agentjail trust [-y] [FILE]   FILE: agentjail.toml found from here by default\n"
           "\nOptions:\n  -y, --yes   trust it without showing it and asking\n"
           "\nExamples:\n  agentjail trust\n  agentjail trust -y ./agentjail.toml\n";
}

int cmd_trust(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("trust", trust_help(), args, parsed, 1)) return *status;
    const bool yes = parsed.has("yes");
    std::string file = parsed.operands.empty() ? "" : parsed.operands.front();
    auto ctx = current_context();
    if (!ctx) return report(ctx.error());
    if (file.empty()) {
        auto found = project_policy_file(*ctx);
        if (!found) return usage_error("trust: no agentjail.toml here or above it in this project");
        file = *found;
    }
    file = resolve_path(file, *ctx);
    auto text = read_policy_text(file);
    if (!text) return usage_error("trust: " + file + ": not a readable regular file of at most 1 MiB");
    auto loaded = load_project_policy(*text, file);
    if (!loaded) return report(loaded.error());
    const std::string hash = sha256_hex(*text);
    std::fprintf(stdout, "%s (sha256 %s):\n%s%s", file.c_str(), hash.c_str(), text->c_str(),
                 !text->empty() && text->back() != '\n' ? "\n" : "");
    std::fflush(stdout);
    if (!yes) {
        if (!::isatty(STDIN_FILENO))
            return usage_error("trust: not a terminal to ask on: give -y to trust " + file + " as shown");
        std::fprintf(stderr, "trust this file for runs in this project? [y/N] ");
        std::string answer;
        std::getline(std::cin, answer);
        if (answer != "y" && answer != "Y" && answer != "yes") {
            std::fprintf(stderr, "agentjail: not trusted\n");
            return 1;
        }
    }
    if (is_trusted(file, hash)) return 0;
    const std::string list = trusted_list();
    if (list.empty()) return usage_error("trust: no configuration directory (set HOME or XDG_CONFIG_HOME)");
    const std::string dir = policy::user_config_dir();
    auto d = sys::open_own_state_dir(dir.substr(0, dir.rfind('/')), {"agentjail"});
    if (!d) return report(d.error());
    std::string kept = read_policy_text(list).value_or("");
    // An older approval of the same path goes: one hash per file.
    std::istringstream in(kept);
    std::string out;
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line.size() > file.size() && line.compare(line.size() - file.size() - 1, std::string::npos, " " + file) != 0)
            out += line + "\n";
    out += hash + " " + file + "\n";
    if (auto r = sys::replace_file_at(d->get(), "trusted", out, 0600, list); !r) return report(r.error());
    std::fprintf(stderr, "agentjail: %s is trusted as it is now\n", file.c_str());
    return 0;
}

}  // namespace agentjail::cli
