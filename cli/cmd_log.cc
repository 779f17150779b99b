// SPDX-License-Identifier: Apache-2.0
// What was refused, after the run and on demand (issue 27, item 6): the summary a run
// prints on stderr, kept per run in $XDG_STATE_HOME/agentjail/log (the newest
// kMaxKept runs), and `agentjail log [RUN]` to see it again.
#include "commands.hpp"
#include "options.hpp"

#include "base/time.hpp"
#include "plan/plan.hpp"
#include "run/record.hpp"
#include "sys/state_dir.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

namespace {

using json = nlohmann::ordered_json;

constexpr size_t kMaxKept = 50;              // runs kept in the log directory
constexpr size_t kMaxEntry = 256 * 1024;     // bytes read of one entry
constexpr size_t kMaxCommand = 300;          // characters of the command kept

Result<sys::UniqueFd> log_dir(sys::StateDir how) {
    auto host = plan::HostFacts::current();
    if (!host) return std::move(host).error();
    return sys::open_own_state_dir(sys::state_home(host->environ, host->home), {"agentjail", "log"}, how);
}

// The entries' names (run ids), oldest first: by the time each was written (ids
// made in one second do not sort among themselves), then by name.
std::vector<std::string> entries(int dirfd) {
    std::vector<std::pair<std::pair<long long, long long>, std::string>> found;
    std::vector<std::string> out;
    int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return out;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        ::close(fd);
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name.size() <= 5 || name.substr(name.size() - 5) != ".json" ||
            !sys::valid_run_id(name.substr(0, name.size() - 5)))
            continue;
        struct stat st {};
        if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        found.push_back({{st.st_mtim.tv_sec, st.st_mtim.tv_nsec}, name.substr(0, name.size() - 5)});
    }
    ::closedir(d);
    std::sort(found.begin(), found.end());
    for (auto& f : found) out.push_back(std::move(f.second));
    return out;
}

std::optional<json> read_entry(int dirfd, const std::string& id) {
    sys::UniqueFd fd(::openat(dirfd, (id + ".json").c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd) return std::nullopt;
    std::string text(kMaxEntry, '\0');
    ssize_t n = ::read(fd.get(), text.data(), text.size());
    if (n <= 0) return std::nullopt;
    text.resize(static_cast<size_t>(n));
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
}

std::string str(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void print_entry(const json& j) {
    std::printf("run %s  %s  exit %s  in %s\n  %s\n", util::printable(str(j, "run")).c_str(),
                util::printable(str(j, "time")).c_str(),
                j.contains("exit_status") ? j["exit_status"].dump().c_str() : "?",
                util::printable(str(j, "cwd")).c_str(), util::printable(str(j, "command")).c_str());
    const auto it = j.find("summary");
    if (it == j.end() || !it->is_array() || it->empty()) {
        std::printf("  nothing was refused\n");
        return;
    }
    for (const auto& line : *it)
        if (line.is_string()) std::printf("  %s\n", util::printable(line.get<std::string>()).c_str());
}

std::string log_help() {
    return "usage: agentjail log [RUN | --list] [--json]\n"
           "\n"
           "What the sandbox was refused in a run, as the run said on stderr when it ended:\n"
           "hosts the proxy refused (or could not reach), system calls and Unix sockets the\n"
           "filter refused, the limit that ended the run, layers that were missing; each\n"
           "with the flag or policy line that would allow it. Without RUN: the last run.\n"
           "\n"
           "  RUN      a run id as --list shows it (20261206-231500-ab12cd)\n"
           "  --list   the runs kept, newest last: id, exit status, refusals, command\n"
           "  --json   the entry (or, with --list, every entry) as JSON\n"
           "\n"
           "The newest " + std::to_string(kMaxKept) + " runs are kept in $XDG_STATE_HOME/agentjail/log\n"
           "(default ~/.local/state/agentjail/log). --net-log and --seccomp-log record every\n"
           "single attempt; this log keeps the distinct ones with a count.\n";
}

}  // namespace

void keep_run_log(const RunResult& r, const std::vector<std::string>& command, const std::string& cwd,
                  int exit_status, const std::vector<std::string>& summary) {
    auto dir = log_dir(sys::StateDir::create);
    if (!dir) {
        if (!summary.empty())
            say("warning: the refusals of this run could not be kept for `agentjail log`: " + dir.error().message());
        return;
    }
    std::string line;
    for (const auto& a : command) line += (line.empty() ? "" : " ") + a;
    if (line.size() > kMaxCommand) line = line.substr(0, kMaxCommand) + "...";
    const std::string id = r.workspace.run_id.empty() ? sys::new_run_id() : r.workspace.run_id;
    json j;
    j["run"] = id;
    j["time"] = base::iso8601_now();
    j["cwd"] = cwd;
    j["command"] = line;
    j["exit_status"] = exit_status;
    j["status"] = run::status_code(run::classify(r).status);
    j["refusals"] = json::parse(run::refusals_json(r), nullptr, false);
    j["summary"] = summary;
    auto text = j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    if (auto w = sys::replace_file_at(dir->get(), (id + ".json").c_str(), text, 0600, "the run log " + id); !w) {
        if (!summary.empty()) say("warning: " + w.error().message());
        return;
    }
    auto all = entries(dir->get());
    for (size_t i = 0; i + kMaxKept < all.size(); ++i) (void)::unlinkat(dir->get(), (all[i] + ".json").c_str(), 0);
}

int cmd_log(const std::vector<std::string>& args) {
    bool list = false, as_json = false;
    std::string id;
    for (const auto& a : args) {
        if (a == "-h" || a == "--help") {
            std::fputs(log_help().c_str(), stdout);
            return 0;
        }
        if (a == "--list") {
            list = true;
        } else if (a == "--json") {
            as_json = true;
        } else if (id.empty() && !a.empty() && a[0] != '-') {
            id = a;
        } else {
            return usage_error("log: unexpected argument '" + util::printable(a) +
                               "' (usage: agentjail log [RUN | --list] [--json])");
        }
    }
    if (!id.empty() && !sys::valid_run_id(id))
        return usage_error("log: '" + util::printable(id) + "' is not a run id (agentjail log --list shows them)");
    auto dir = log_dir(sys::StateDir::existing);
    if (!dir) {
        if (dir.error().code() == ENOENT) {
            std::printf("no runs logged yet\n");
            return 0;
        }
        return report(dir.error());
    }
    auto all = entries(dir->get());
    if (list) {
        json arr = json::array();
        if (!as_json) std::printf("%-22s  %4s  %9s  %s\n", "RUN", "EXIT", "REFUSALS", "COMMAND");
        for (const auto& e : all) {
            auto j = read_entry(dir->get(), e);
            if (!j) continue;
            if (as_json) {
                arr.push_back(*j);
                continue;
            }
            size_t n = j->contains("refusals") && (*j)["refusals"].is_array() ? (*j)["refusals"].size() : 0;
            std::printf("%-22s  %4s  %9zu  %s\n", e.c_str(), (*j)["exit_status"].dump().c_str(), n,
                        util::printable(str(*j, "command")).c_str());
        }
        if (as_json) std::printf("%s\n", arr.dump(2, ' ', false, json::error_handler_t::replace).c_str());
        return 0;
    }
    if (id.empty()) {
        if (all.empty()) {
            std::printf("no runs logged yet\n");
            return 0;
        }
        id = all.back();
    }
    auto j = read_entry(dir->get(), id);
    if (!j)
        return report(Error(ErrorKind::invalid_input, ENOENT,
                            "log: no run " + id + " in the log (agentjail log --list shows the runs kept)"));
    if (as_json)
        std::printf("%s\n", j->dump(2, ' ', false, json::error_handler_t::replace).c_str());
    else
        print_entry(*j);
    return 0;
}

}  // namespace agentjail::cli
