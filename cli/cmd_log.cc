// SPDX-License-Identifier: Apache-2.0
// What was refused, after the run and on demand (issue 27, item 6): the summary a run
// prints on stderr, kept per run in $XDG_STATE_HOME/agentjail/log (the newest
// kMaxKept runs), and `agentjail log [RUN]` to see it again.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

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
constexpr size_t kSlack = 16;                // more before the oldest go (not at every run)
constexpr size_t kMaxEntry = 256 * 1024;     // bytes read of one entry
constexpr size_t kMaxCommand = 300;          // characters of the command kept

Result<sys::UniqueFd> log_dir(sys::StateDir how) {
    auto host = plan::HostFacts::current();
    if (!host) return std::move(host).error();
    return sys::open_own_state_dir(sys::state_home(host->environ, host->home), {"agentjail", "log"}, how);
}

// The entries' names (run ids), oldest first: by the time each was written (ids
// made in one second do not sort among themselves), then by name. With `stat`
// false, unsorted and not stat'ed: only counted (a run's exit pays no more).
std::vector<std::string> entries(int dirfd, bool sorted = true) {
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
        if (!sorted) {
            found.push_back({{0, 0}, name.substr(0, name.size() - 5)});
            continue;
        }
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

// The TOML a refusal list proposes: one section per key, each entry with its
// count and reason as a comment (escaped: a comment must not end in a newline the
// sandbox chose), extending the policy the run had.
std::string proposal(const json& refusals, const std::string& policy, const std::string& cwd,
                     const std::string& about) {
    struct Entry {
        std::string value, comment;
    };
    std::vector<std::pair<std::string, std::vector<Entry>>> keys;  // in first-seen order
    if (!refusals.is_array()) return {};
    for (const auto& f : refusals) {
        const auto pol = f.find("policy");
        if (pol == f.end() || !pol->is_object()) continue;
        std::string key = str(*pol, "key"), value = str(*pol, "value");
        if (key.empty() || value.empty()) continue;
        std::string comment = "refused";
        if (f.contains("count") && f["count"].is_number() && f["count"].get<std::uint64_t>() > 1)
            comment += " " + f["count"].dump() + " times";
        comment += ": " + str(f, "what") + ": " + str(f, "why");
        auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& k) { return k.first == key; });
        if (it == keys.end()) {
            keys.push_back({key, {}});
            it = keys.end() - 1;
        }
        if (std::none_of(it->second.begin(), it->second.end(), [&](const Entry& e) { return e.value == value; }))
            it->second.push_back({value, util::printable(comment)});
    }
    if (keys.empty()) return {};
    std::string base = policy;
    if (base.find('/') != std::string::npos || (base.size() > 5 && base.substr(base.size() - 5) == ".toml"))
        if (!base.empty() && base[0] != '/') base = cwd + "/" + base;
    std::string out = "# Proposed by agentjail from " + util::printable(about) +
                      ":\n# the lines that would have allowed what was refused. Review each one, save\n"
                      "# the file, and run with: agentjail -p FILE -- COMMAND\n";
    out += "extends = " + json(base).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::string section;
    for (const auto& [key, entries] : keys) {
        const auto dot = key.find('.');
        std::string sec = key.substr(0, dot), name = key.substr(dot + 1);
        if (sec != section) {
            out += "\n[" + sec + "]\n";
            // Hosts are allowed through the proxy: a policy without network gets it.
            if (sec == "network") out += "mode = \"proxy\"\n";
            section = sec;
        }
        if (name == "nested_sandboxes") {
            out += name + " = " + entries.front().value + "  # " + entries.front().comment + "\n";
            continue;
        }
        out += name + " = [\n";
        for (const auto& e : entries) out += "    " + e.value + ",  # " + e.comment + "\n";
        out += "]\n";
    }
    return out;
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

}  // namespace

std::string proposed_policy(const RunResult& r, const std::string& policy, const std::string& cwd) {
    return proposal(json::parse(run::refusals_json(r), nullptr, false), policy, cwd, "this run");
}

void keep_run_log(const RunResult& r, const std::vector<std::string>& command, const std::string& cwd,
                  const std::string& policy, int exit_status, const std::vector<std::string>& summary) {
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
    j["policy"] = policy;
    j["exit_status"] = exit_status;
    j["status"] = run::status_code(run::classify(r).status);
    j["refusals"] = json::parse(run::refusals_json(r), nullptr, false);
    j["summary"] = summary;
    auto text = j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    if (auto w = sys::replace_file_at(dir->get(), (id + ".json").c_str(), text, 0600, "the run log " + id); !w) {
        if (!summary.empty()) say("warning: " + w.error().message());
        return;
    }
    if (entries(dir->get(), false).size() <= kMaxKept + kSlack) return;
    auto all = entries(dir->get());
    for (size_t i = 0; i + kMaxKept < all.size(); ++i) (void)::unlinkat(dir->get(), (all[i] + ".json").c_str(), 0);
}

std::string log_help() {
    return "usage: agentjail log [RUN | --list] [--json | --policy]\n"
           "\n"
           "What the sandbox was refused in a run, as the run said on stderr when it ended:\n"
           "hosts the proxy refused (or could not reach), system calls and Unix sockets the\n"
           "filter refused, the limit that ended the run, layers that were missing; each\n"
           "with the flag or policy line that would allow it. Without RUN: the last run.\n"
           "\n"
           "  RUN      a run id as --list shows it (20261206-231500-ab12cd)\n"
           "  --list   the runs kept, newest last: id, exit status, refusals, command\n"
           "  --json   the entry (or, with --list, every entry) as JSON\n"
           "  --policy the policy lines that would have allowed what the run was refused,\n"
           "           as a TOML file extending the run's policy (review before use;\n"
           "           `agentjail learn -- COMMAND` prints the same after a run)\n"
           "\n"
           "The newest " + std::to_string(kMaxKept) + " runs (to " + std::to_string(kMaxKept + kSlack) +
           ") are kept in $XDG_STATE_HOME/agentjail/log\n"
           "(default ~/.local/state/agentjail/log). --net-log and --seccomp-log record every\n"
           "single attempt; this log keeps the distinct ones with a count.\n";
}

int cmd_log(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("log", log_help(), args, parsed, 1)) return *status;
    const bool list = parsed.has("list"), as_json = parsed.has("json"), as_policy = parsed.has("policy");
    std::string id = parsed.operands.empty() ? "" : parsed.operands.front();
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
    if (as_policy) {
        std::string toml = proposal(j->value("refusals", json::array()), str(*j, "policy"), str(*j, "cwd"),
                                    "run " + id + " (" + str(*j, "command") + ")");
        if (toml.empty()) {
            std::printf("# run %s was refused nothing that a policy line would allow\n", id.c_str());
            return 0;
        }
        std::fputs(toml.c_str(), stdout);
        return 0;
    }
    if (as_json)
        std::printf("%s\n", j->dump(2, ' ', false, json::error_handler_t::replace).c_str());
    else
        print_entry(*j);
    return 0;
}

}  // namespace agentjail::cli
