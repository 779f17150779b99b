// SPDX-License-Identifier: Apache-2.0
#include "fs/leftovers.hpp"

#include "sys/fd.hpp"
#include "util/strings.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>

namespace agentjail::fs {

namespace {

using json = nlohmann::json;

constexpr const char* ca_prefix = "agentjail-ca-";
constexpr const char* ca_file = "ca-bundle.pem";

// $XDG_STATE_HOME/agentjail/leftovers, else ~/.local/state/agentjail/leftovers.
std::string journal_dir() {
    std::string base;
    if (const char* x = ::getenv("XDG_STATE_HOME"); x != nullptr && x[0] == '/') {
        base = x;
    } else {
        const char* home = ::getenv("HOME");
        std::string h = home != nullptr && home[0] == '/' ? home : "";
        if (h.empty())
            if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir[0] == '/') h = pw->pw_dir;
        if (h.empty()) return {};
        base = h + "/.local/state";
    }
    return util::normalize_path(base + "/agentjail/leftovers");
}

bool make_dirs(const std::string& path) {
    for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
        std::string p = path.substr(0, at);
        if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) return false;
        if (at == std::string::npos) break;
    }
    struct stat st {};
    // Ours and a directory (not a link planted in its place).
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

// Field 22 of /proc/PID/stat: when the process started (clock ticks since boot).
unsigned long long start_time(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t close = s.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream in(s.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && (in >> field); ++i)
        if (i == 22) return std::stoull(field);
    return 0;
}

// Gone for sure: no such process, or another one that took its pid since.
bool gone(pid_t pid, unsigned long long start) {
    if (pid <= 0) return true;
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    unsigned long long now = start_time(pid);
    return now != 0 && now != start;
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

Journal Journal::write(const Placeholders& placeholders, const std::vector<std::string>& dirs) {
    Journal j;
    if (placeholders.empty() && dirs.empty()) return j;
    std::string dir = journal_dir();
    if (dir.empty() || !make_dirs(dir)) return j;
    const pid_t me = ::getpid();
    json doc;
    doc["launcher"] = {{"pid", me}, {"start", start_time(me)}};
    json ph = json::array();
    for (size_t i = 0; i < placeholders.items().size(); ++i) {
        const Placeholder& p = placeholders.items()[i];
        ph.push_back({{"root", placeholders.roots()[i]}, {"host", p.host}, {"dir", p.is_dir},
                      {"dev", static_cast<std::uint64_t>(p.dev)}, {"ino", static_cast<std::uint64_t>(p.ino)}});
    }
    doc["placeholders"] = ph;
    doc["dirs"] = dirs;
    j.text_ = doc.dump();
    j.path_ = dir + "/" + std::to_string(me) + "-" + std::to_string(journal_seq++) + ".json";
    if (!j.store()) j.path_.clear();
    return j;
}

void Journal::set_init(pid_t init) {
    if (path_.empty()) return;
    json doc = json::parse(text_);
    doc["init"] = {{"pid", init}, {"start", start_time(init)}};
    text_ = doc.dump();
    (void)store();
}

// Written whole under a fresh name and renamed over the journal: a reader sees the
// old text or the new one, never half of either.
bool Journal::store() noexcept {
    try {
        const std::string text = text_ + "\n";
        const std::string tmp = path_ + ".tmp";
        sys::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd) return false;
        bool ok = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
        fd.reset();
        if (ok && ::rename(tmp.c_str(), path_.c_str()) == 0) return true;
        ::unlink(tmp.c_str());
    } catch (...) {
    }
    return false;
}

Journal& Journal::operator=(Journal&& o) noexcept {
    if (this != &o) {
        done();
        path_ = std::move(o.path_);
        o.path_.clear();
    }
    return *this;
}

void Journal::done() noexcept {
    if (path_.empty()) return;
    ::unlink(path_.c_str());
    path_.clear();
}

Sweep sweep_journals() {
    Sweep out;
    const std::string dir = journal_dir();
    if (dir.empty()) return out;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return out;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d))
        if (std::string_view(e->d_name).ends_with(".json")) names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& name : names) {
        const std::string path = dir + "/" + name;
        json doc;
        try {
            std::ifstream f(path);
            doc = json::parse(f);
            auto alive = [&](const char* who) {
                if (!doc.contains(who)) return false;
                const json& w = doc.at(who);
                return !gone(w.at("pid").get<pid_t>(), w.at("start").get<unsigned long long>());
            };
            // Both must be gone: a sandbox that outlived its launcher
            // (die_with_parent = false) still has its placeholders mounted. No init
            // written: the launcher died before releasing its clone, which then ended.
            if (alive("launcher") || alive("init")) continue;
            for (const auto& p : doc.at("placeholders")) {
                Placeholder ph;
                ph.host = p.at("host").get<std::string>();
                ph.is_dir = p.at("dir").get<bool>();
                ph.dev = static_cast<dev_t>(p.at("dev").get<std::uint64_t>());
                ph.ino = static_cast<ino_t>(p.at("ino").get<std::uint64_t>());
                std::string why = remove_placeholder(ph, p.at("root").get<std::string>());
                if (why.empty())
                    out.removed.push_back(ph.host);
                else
                    out.kept.push_back(ph.host + ": " + why);
            }
            for (const auto& x : doc.at("dirs")) {
                std::string d2 = x.get<std::string>();
                std::string why = remove_ca_dir(d2);
                if (why.empty())
                    out.removed.push_back(d2);
                else
                    out.kept.push_back(d2 + ": " + why);
            }
        } catch (const std::exception& e) {
            out.kept.push_back(path + ": unreadable journal (" + e.what() + ")");
        }
        ::unlink(path.c_str());
    }
    return out;
}

}  // namespace agentjail::fs
