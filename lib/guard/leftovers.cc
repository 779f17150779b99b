// SPDX-License-Identifier: Apache-2.0
// The run's journal of what it leaves on the host, and the sweep of gone runs' (leftovers.hpp).
#include "guard/leftovers.hpp"

#include "guard/shared_roots.hpp"
#include "sys/fd.hpp"
#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <memory>
#include <sstream>

namespace agentjail::guard {

namespace {

using json = nlohmann::json;

constexpr const char* ca_prefix = "agentjail-ca-";
constexpr const char* ca_file = "ca-bundle.pem";
constexpr const char* ended_prefix = "ended-";

}  // namespace

std::string state_base() {
    const char* home = ::getenv("HOME");
    std::string h = home != nullptr && home[0] == '/' ? home : "";
    if (h.empty())
        if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir[0] == '/') h = pw->pw_dir;
    const char* xdg = ::getenv("XDG_STATE_HOME");
    if (h.empty() && (xdg == nullptr || xdg[0] != '/')) return {};
    std::vector<std::string> env;
    if (xdg != nullptr) env.push_back(std::string("XDG_STATE_HOME=") + xdg);
    return sys::state_home(env, h);
}

namespace {

std::string journal_dir() {
    std::string base = state_base();
    return base.empty() ? base : base + "/agentjail/leftovers";
}

// /proc/PID/stat after the command's name (what follows ") "), "" when it cannot be
// read. With read(2), not a stream: a process that dies while it is read makes the
// read fail with ESRCH, which libstdc++'s filebuf turns into an exception.
std::string proc_stat_tail(pid_t pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return {};
    char buf[1024];
    ssize_t n;
    do {
        n = ::read(fd.get(), buf, sizeof buf - 1);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return {};
    std::string s(buf, static_cast<size_t>(n));
    size_t close = s.rfind(')');
    if (close == std::string::npos || close + 2 > s.size()) return {};
    return s.substr(close + 2);
}

// Field 22 of a /proc/PID/stat tail: when the process started (clock ticks since boot).
unsigned long long start_of(const std::string& tail) {
    std::istringstream in(tail);
    std::string field;
    for (int i = 3; i <= 22 && (in >> field); ++i)
        if (i == 22) return std::stoull(field);
    return 0;
}

unsigned long long start_time(pid_t pid) { return start_of(proc_stat_tail(pid)); }

// This process's own start time, read once a thread (per pid: a forked embedder
// reads anew), not once a run.
unsigned long long own_start_time() {
    thread_local pid_t pid = 0;
    thread_local unsigned long long start = 0;
    if (pid != ::getpid()) {
        pid = ::getpid();
        start = start_time(pid);
    }
    return start;
}

// Field 3 of a /proc/PID/stat tail is 'Z': dead, not yet reaped by its parent (a
// pid 1 that never reaps, in some containers, keeps it so for good).
bool zombie(const std::string& tail) { return tail.rfind('Z', 0) == 0; }

// Gone for sure: no such process, a dead one not reaped, or another one that took
// its pid since (one read of its stat for both).
bool gone(pid_t pid, unsigned long long start) {
    if (pid <= 0) return true;
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    const std::string tail = proc_stat_tail(pid);
    if (zombie(tail)) return true;
    unsigned long long now = start_of(tail);
    return now != 0 && now != start;
}

// "<launcher pid>-<start>-<n>[-<init pid>].json": whether that run may still be
// going (its launcher, or the sandbox it released, is alive). A name of another
// form is no journal of ours: treated as alive, left alone.
bool run_alive(const std::string& name) {
    if (util::starts_with(name, ended_prefix)) return false;  // handed over: no run's own
    unsigned long long pid = 0, start = 0, n = 0, init = 0;
    int used = 0;
    if (std::sscanf(name.c_str(), "%llu-%llu-%llu%n", &pid, &start, &n, &used) != 3) return true;
    std::string rest = name.substr(static_cast<size_t>(used));
    if (rest != ".json" && (std::sscanf(rest.c_str(), "-%llu.json", &init) != 1 || !rest.ends_with(".json")))
        return true;
    if (!gone(static_cast<pid_t>(pid), start)) return true;
    // The init: a sandbox that outlived its launcher (die_with_parent = false) still
    // has its placeholders mounted. An init pid taken by another process since only
    // delays the cleanup. No init named: the launcher died before releasing its
    // clone, which then ended.
    return init != 0 && !(::kill(static_cast<pid_t>(init), 0) != 0 && errno == ESRCH) &&
           !zombie(proc_stat_tail(static_cast<pid_t>(init)));
}

// A CA directory the proxy made: agentjail's name, ours, holding at most its bundle.
std::string remove_ca_dir(const std::string& dir) {
    const std::string name = dir.substr(dir.rfind('/') + 1);
    if (!util::starts_with(name, ca_prefix)) return "not a CA directory of agentjail's";
    sys::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return errno == ENOENT ? std::string() : "open: " + util::errno_text(errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid()) return "not ours";
    if (::unlinkat(fd.get(), ca_file, 0) != 0 && errno != ENOENT) return "unlink: " + util::errno_text(errno);
    if (::rmdir(dir.c_str()) != 0) return errno == ENOENT ? std::string() : "rmdir: " + util::errno_text(errno);
    return {};
}

std::atomic<unsigned> journal_seq{0};

}  // namespace

namespace {

// Written under a name no sweep reads, then renamed over `name`: a journal is whole
// or absent, also when it is written again.
bool write_whole(int dfd, const std::string& name, const std::string& text) {
    const std::string tmp = "." + name;
    (void)::unlinkat(dfd, tmp.c_str(), 0);
    sys::UniqueFd fd(
        ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return false;
    bool ok = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
    fd.reset();
    if (!ok || ::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
        ::unlinkat(dfd, tmp.c_str(), 0);
        return false;
    }
    return true;
}

json entry(const std::string& root, const std::string& host, bool is_dir,
           const std::string& staged) {
    return {{"root", root}, {"host", host}, {"dir", is_dir}, {"staged", staged}};
}

std::string doc(const json& placeholders, const std::vector<std::string>& dirs) {
    return json{{"placeholders", placeholders}, {"dirs", dirs}}.dump() + "\n";
}

}  // namespace

std::string Journal::next_tag() {
    return std::to_string(::getpid()) + "-" + std::to_string(own_start_time()) + "-" +
           std::to_string(journal_seq++);
}

// The journal's file and what it lists, shared by the Journal and its appenders.
struct JournalState {
    std::mutex m;
    std::string path;  // "" once done (or handed over)
    std::vector<std::string> dirs;
    json placeholders = json::array();
};

namespace {

json identified(const std::string& root, const Placeholder& p) {
    json e = entry(root, p.host, p.is_dir, p.staged);
    e["dev"] = static_cast<std::uint64_t>(p.dev);
    e["ino"] = static_cast<std::uint64_t>(p.ino);
    return e;
}

// Under s.m.
void rewrite(const JournalState& s) {
    const size_t slash = s.path.rfind('/');
    sys::UniqueFd dfd(::open(s.path.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    // Not written again: the intent stays, and a sweep still removes the staged names
    // (a placeholder renamed to its name is then left, as before journals).
    if (dfd) (void)write_whole(dfd.get(), s.path.substr(slash + 1), doc(s.placeholders, s.dirs));
}

}  // namespace

Journal Journal::write(const std::string& tag, const std::vector<WantedPlaceholder>& wanted,
                       const std::vector<std::string>& dirs) {
    Journal j;
    if (wanted.empty() && dirs.empty()) return j;
    const std::string base = state_base();
    if (base.empty()) return j;
    // Made as the other state directories are: owned, closed to others, no links.
    auto dfd = sys::open_own_state_dir(base, {"agentjail", "leftovers"});
    if (!dfd) return j;
    // No identity yet: the sweep takes only the staged names, which no one else uses.
    json ph = json::array();
    for (const auto& w : wanted) ph.push_back(entry(w.root, w.host, w.is_dir, w.staged));
    if (!write_whole(dfd->get(), tag + ".json", doc(ph, dirs))) return j;
    j.s_ = std::make_shared<JournalState>();
    j.s_->path = base + "/agentjail/leftovers/" + tag + ".json";
    j.s_->dirs = dirs;
    j.s_->placeholders = std::move(ph);
    return j;
}

void Journal::record(const Placeholders& made) {
    if (!s_) return;
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->path.empty()) return;
    json ph = json::array();
    for (size_t i = 0; i < made.items().size(); ++i) ph.push_back(identified(made.roots()[i], made.items()[i]));
    s_->placeholders = std::move(ph);
    rewrite(*s_);
}

Journal::Appender Journal::appender() const {
    Appender a;
    a.s_ = s_;
    return a;
}

void Journal::Appender::add(const Placeholder& p, const std::string& root) const {
    if (!s_) return;
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->path.empty()) return;
    s_->placeholders.push_back(identified(root, p));
    rewrite(*s_);
}

void Journal::set_init(pid_t init) noexcept {
    if (!s_) return;
    try {
        std::lock_guard<std::mutex> lock(s_->m);
        if (s_->path.empty()) return;
        std::string named = s_->path.substr(0, s_->path.size() - 5) + "-" + std::to_string(init) + ".json";
        if (::rename(s_->path.c_str(), named.c_str()) == 0) s_->path = std::move(named);
    } catch (...) {
    }
}

void Journal::hand_over(const Placeholders& left) {
    if (!s_) return;
    record(left);
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->path.empty()) return;
    const size_t slash = s_->path.rfind('/');
    const std::string ended = s_->path.substr(0, slash + 1) + ended_prefix + s_->path.substr(slash + 1);
    // Not renamed (not expected in a directory of our own): the journal goes when
    // this run's does and the placeholders stay on the host unlisted. Better one left
    // than one taken from a run that still binds it.
    if (::rename(s_->path.c_str(), ended.c_str()) == 0) s_->path.clear();
}

Journal& Journal::operator=(Journal&& o) noexcept {
    if (this != &o) {
        done();
        s_ = std::move(o.s_);
    }
    return *this;
}

void Journal::done() noexcept {
    if (!s_) return;
    std::lock_guard<std::mutex> lock(s_->m);
    if (!s_->path.empty()) ::unlink(s_->path.c_str());
    s_->path.clear();
}

namespace {

// One placeholder to remove: a journal's or (own) the ending run's.
struct Removal {
    Placeholder ph;
    std::string root;
    bool has_id = false;
    bool own = false;
};

size_t depth(const std::string& path) { return static_cast<size_t>(std::count(path.begin(), path.end(), '/')); }

}  // namespace

Sweep sweep_journals(const RootUsers* held, Placeholders* own, OwnRemoval* own_out) {
    Sweep out;
    std::vector<Removal> todo;
    if (own != nullptr) {
        for (size_t i = 0; i < own->items().size(); ++i) {
            todo.push_back({own->items()[i], own->roots()[i], true, true});
            if (own_out != nullptr) own_out->made.push_back(own->items()[i].host);
        }
        own->forget();
    }
    std::vector<std::string> done_journals, ca_dirs;
    // Held until the removals are done: no run sets up in those directories meanwhile.
    // (one per directory: a second flock of our own would conflict with the first).
    std::map<std::string, std::unique_ptr<IdleRoot>> idle;
    const std::string dir = journal_dir();
    DIR* d = dir.empty() ? nullptr : ::opendir(dir.c_str());
    std::vector<std::string> names;
    if (d != nullptr) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.' && !run_alive(e->d_name)) names.emplace_back(e->d_name);
        ::closedir(d);
    }
    for (const auto& name : names) {
        const std::string path = dir + "/" + name;
        try {
            std::ifstream f(path);
            json doc = json::parse(f);
            // Every directory it has placeholders in must be free of other runs (they
            // may bind these placeholders), else the journal waits for the last of
            // them, which sweeps again as it ends.
            bool busy = false;
            for (const auto& p : doc.at("placeholders")) {
                const std::string root = p.at("root").get<std::string>();
                if (held != nullptr && held->holds_alone(root)) continue;
                auto& slot = idle[root];
                if (!slot) slot = std::make_unique<IdleRoot>(root);
                if (!slot->ok()) busy = true;
            }
            if (busy) continue;
            for (const auto& p : doc.at("placeholders")) {
                Removal r;
                r.ph.host = p.at("host").get<std::string>();
                r.ph.is_dir = p.at("dir").get<bool>();
                r.ph.staged = p.value("staged", std::string());
                r.root = p.at("root").get<std::string>();
                if (p.contains("ino")) {
                    r.ph.dev = static_cast<dev_t>(p.at("dev").get<std::uint64_t>());
                    r.ph.ino = static_cast<ino_t>(p.at("ino").get<std::uint64_t>());
                    r.has_id = true;
                }
                todo.push_back(std::move(r));
            }
            for (const auto& x : doc.at("dirs")) ca_dirs.push_back(x.get<std::string>());
        } catch (const std::exception& e) {
            out.kept.push_back(path + ": unreadable journal (" + e.what() + ")");
        }
        done_journals.push_back(path);
    }
    // Deepest first, across runs: one run's placeholder may lie in another's
    // directory placeholder (made after it, when the next run planned).
    std::stable_sort(todo.begin(), todo.end(),
                     [](const Removal& a, const Removal& b) { return depth(a.ph.host) > depth(b.ph.host); });
    for (const auto& r : todo) {
        std::string why;
        if (r.has_id) {
            why = remove_placeholder(r.ph, r.root);
        } else if (!r.ph.staged.empty()) {
            // Killed before the inode was written down: only the staged name, never
            // the name itself, which may be anyone's by now.
            why = remove_staged(r.root, r.ph.staged, r.ph.is_dir);
        }
        std::vector<std::string>& removed = r.own && own_out != nullptr ? own_out->removed : out.removed;
        std::vector<std::string>& kept = r.own && own_out != nullptr ? own_out->kept : out.kept;
        if (why.empty())
            removed.push_back(r.ph.host);
        else
            kept.push_back(r.ph.host + ": " + why);
    }
    for (const auto& d2 : ca_dirs) {
        std::string why = remove_ca_dir(d2);
        if (why.empty())
            out.removed.push_back(d2);
        else
            out.kept.push_back(d2 + ": " + why);
    }
    for (const auto& path : done_journals) ::unlink(path.c_str());
    return out;
}

void release_placeholders(RootUsers& users, Placeholders& placeholders, Journal& journal,
                          WorkspaceOutcome& out) {
    if (users.empty()) {
        placeholders.finish(out.placeholders_made, out.placeholders_removed, out.placeholders_kept);
        return;
    }
    // Another run still in one of the directories binds these (or will, once its
    // plan saw them): they stay, listed in a journal handed over to the last run.
    if (!users.leave()) {
        for (const auto& it : placeholders.items()) {
            out.placeholders_made.push_back(it.host);
            out.placeholders_kept.push_back(it.host +
                                            ": left for another run still in its directory");
        }
        if (!placeholders.empty()) journal.hand_over(placeholders);
        placeholders.forget();
        users.done();
        return;
    }
    // The last run out: what the runs before it left here goes too, with its own.
    OwnRemoval own;
    (void)sweep_journals(&users, &placeholders, &own);
    for (auto& m : own.made) out.placeholders_made.push_back(std::move(m));
    for (auto& m : own.removed) out.placeholders_removed.push_back(std::move(m));
    for (auto& m : own.kept) out.placeholders_kept.push_back(std::move(m));
    users.done();
}

}  // namespace agentjail::guard
