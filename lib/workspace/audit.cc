// SPDX-License-Identifier: Apache-2.0
// Direct mode's post-run audit (audit.hpp): one walk of the workspace that never
// follows a symlink, looking at git directories and at agent and editor settings
// the run created or changed.
#include "workspace/audit.hpp"

#include "sys/fd.hpp"
#include "sys/scan.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "workspace/git.hpp"
#include "workspace/overlay.hpp"
#include "plan/view_rules.hpp"

#include "base/pattern.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <set>
#include <utility>

namespace agentjail::workspace {

namespace {

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

bool is_bool_text(const std::string& v) {
    const std::string l = lower(trim(v));
    return l.empty() || l == "true" || l == "false" || l == "yes" || l == "no" || l == "on" ||
           l == "off" || l == "1" || l == "0";
}

struct DirEntry {
    std::string name;
    unsigned char type;
};

bool newer(const struct stat& st, const struct timespec& since) {
    return st.st_ctim.tv_sec > since.tv_sec ||
           (st.st_ctim.tv_sec == since.tv_sec && st.st_ctim.tv_nsec >= since.tv_nsec);
}

// The files of a walk that the protect patterns name (what runs on the host later:
// agent and editor settings, hook managers' files), git's own left to the git
// checks. Looked at in walk order, a directory before what is in it: a directory
// the patterns name marks all below it; only names that can end a pattern (a
// prefilter on each pattern's last part) are matched whole, so the walk of a large
// workspace spells out few paths.
class Settings {
public:
    Settings(const std::vector<std::string>& patterns, const sys::Scan& scan) : patterns_(patterns), scan_(scan) {
        for (const auto& p : patterns_) {
            auto segs = base::split_path(p);
            // git's own names (.git/hooks/, a .git file) are the git checks'.
            if (segs.empty() || std::find(segs.begin(), segs.end(), ".git") != segs.end()) continue;
            (p.back() == '/' ? dir_last_ : last_).emplace_back(segs.back());
        }
        under_.assign(scan.entries.size(), 0);
    }
    // Whether entry i is a file the patterns name (or lies in a directory they do).
    bool at(std::uint32_t i) {
        const sys::ScanEntry& e = scan_.entries[i];
        // Its directory's mark (the walk lists a directory before what is in it).
        const unsigned char up = e.parent != sys::ScanEntry::kTop && e.parent < i ? under_[e.parent] : 0;
        if (e.type == sys::EntryType::dir) {
            // git's directories are the git checks' (never marked, nor what is below).
            under_[i] = e.name == ".git" || up == 2 ? 2 : up == 1 || named(e, dir_last_) ? 1 : 0;
            return false;
        }
        if (e.type != sys::EntryType::file || up == 2) return false;
        return up == 1 || named(e, last_);
    }

private:
    // The path is spelled out only for a name a pattern could end with: a walk of
    // 20,000 names 200 levels down builds none of their paths.
    bool named(const sys::ScanEntry& e, const std::vector<base::SegmentPrefilter>& ends) const {
        return std::any_of(ends.begin(), ends.end(), [&](const base::SegmentPrefilter& f) { return f.may_match(e.name); }) &&
               is_protected(scan_.rel(e), patterns_);
    }

    const std::vector<std::string>& patterns_;
    const sys::Scan& scan_;
    std::vector<base::SegmentPrefilter> last_, dir_last_;
    std::vector<unsigned char> under_;  // 1: below a named directory; 2: below .git
};

class Auditor {
public:
    explicit Auditor(const AuditOptions& o) : o_(o) {}

    std::vector<WorkspaceFinding> run() {
        // The plan's walk (sys/scan.hpp): directory entries only, git's object
        // store, refs and logs left out, no link followed.
        sys::ScanOptions so;
        so.max_entries = o_.max_entries;
        so.before = o_.before.get();
        // The names the plan's walk kept (the rules' and git's): the same walk, not
        // a wider one, so the plan's is reused where nothing changed; every entry
        // where those do not hold all this check reads by.
        if (o_.before && covers(o_.before->names)) so.names = o_.before->names;
        auto sc = sys::scan(o_.workspace, so);
        if (!sc) {
            add("", "the post-run check could not walk the workspace: " + sc.error().message(),
                "none: check it by hand, or use clone or overlay mode");
            return std::move(out_);
        }
        root_ = ::open(o_.workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (root_ < 0) {
            add("", "the workspace could not be opened for the post-run check: " + util::errno_text(errno),
                "none: check it by hand");
            return std::move(out_);
        }
        for (const auto& rel : sc->skipped)
            add(rel, "could not be read by the post-run check", "none: check it by hand");
        for (const auto& rel : sc->too_deep)
            add(rel, "lies deeper than the post-run check looks (" + std::to_string(so.max_depth) + " levels)",
                "none: check it by hand");
        // A git directory: one holding a HEAD file and a config file or an objects
        // directory (.git, .git/modules/*, .git/worktrees/*, a bare repository).
        // Directories by their entry's index (kTop: the workspace itself), so that no
        // path is spelled out but those of what is checked.
        // As git takes them: HEAD a file or a link, the config of any type (git follows
        // a link), a commondir in place of both (a linked worktree's git directory).
        // A HEAD the view held from the host's git (view::kHeldHead) is one, put back
        // once its repository is checked.
        constexpr std::uint32_t top = sys::ScanEntry::kTop;
        std::set<std::uint32_t> heads, holds;
        std::vector<std::string> held;  // the folders of held HEADs
        for (const auto& e : sc->entries) {
            const bool is_head = e.name == "HEAD" || e.name == view::kHeldHead;
            if (is_head && (e.type == sys::EntryType::file || e.type == sys::EntryType::symlink))
                heads.insert(e.parent);
            if (e.name == view::kHeldHead) held.push_back(sc->dir_of(e));
            if (e.name == "config" || e.name == "commondir" || (e.name == "objects" && e.type == sys::EntryType::dir))
                holds.insert(e.parent);
        }
        auto git_dir = [&](const std::string& rel) {
            if (!check_git_dir_at(rel))
                add(rel, "could not be read by the post-run check: " + util::errno_text(errno), "none: check it by hand");
        };
        if (heads.count(top) && holds.count(top)) git_dir("");
        Settings settings(o_.protect, *sc);
        for (std::uint32_t i = 0; i < sc->entries.size(); ++i) {
            const auto& e = sc->entries[i];
            if (e.type == sys::EntryType::dir && heads.count(i) && holds.count(i)) git_dir(sc->rel(e));
            // A .git file names its git directory, wherever that lies (under another
            // repository's .git/lfs, which the walk does not enter); a .git link is
            // followed by git the same way.
            if (e.name == ".git" && (e.type == sys::EntryType::file || e.type == sys::EntryType::symlink))
                check_git_pointer(sc->dir_of(e), e.type == sys::EntryType::symlink);
            if (settings.at(i)) {
                const std::string dir = sc->dir_of(e);
                with_dir(dir, [&, d = dir, n = e.name](int fd) { check_setting(fd, d, n); });
            }
        }
        // Checked: each HEAD this run held becomes the repository's HEAD again. One an
        // earlier run held and could not put back (it was killed) stays held: this run
        // did not write that repository, so the check above did not read it.
        for (const auto& dir : held)
            with_dir(dir, [&](int fd) {
                struct stat st {};
                if (::fstatat(fd, view::kHeldHead, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
                if (!written(join(dir, view::kHeldHead), st)) {
                    add(join(dir, view::kHeldHead),
                        "the HEAD of a repository an earlier run made and did not live to check, held from "
                        "the host's git",
                        "look at the repository (its config and hooks), then rename this to HEAD");
                    return;
                }
                if (::renameat2(fd, view::kHeldHead, fd, "HEAD", RENAME_NOREPLACE) == 0 || errno == ENOENT) return;
                add(join(dir, view::kHeldHead),
                    "the HEAD of a repository the run made, held from the host's git during the run, could not be "
                    "put back: " + util::errno_text(errno),
                    "rename it to HEAD once you have looked at the repository");
            });
        ::close(root_);
        if (o_.walked != nullptr) *o_.walked = std::move(*sc);
        return std::move(out_);
    }

private:
    // Whether a walk keeping `names` keeps every name this check reads: git's, the
    // last part of each protect pattern, and all below a directory one names.
    bool covers(const std::vector<std::string>& names) const {
        if (names.empty()) return false;
        const std::set<std::string> kept(names.begin(), names.end());
        for (const char* g : view::kGitNames)
            if (!kept.count(g)) return false;
        return std::all_of(o_.protect.begin(), o_.protect.end(), [&](const std::string& p) {
            auto name = view::walk_name(base::Pattern(p), true);
            return name && kept.count(*name) > 0;
        });
    }

    static std::string join(const std::string& dir, const std::string& name) {
        return dir.empty() ? name : dir + "/" + name;
    }

    bool is_protected(const std::string& rel) const {
        const std::string host = o_.workspace == "/" ? "/" + rel : o_.workspace + "/" + rel;
        return std::any_of(o_.protected_paths.begin(), o_.protected_paths.end(),
                           [&](const std::string& p) { return util::path_within(host, p); });
    }

    void add(const std::string& rel, std::string what, std::string action) {
        out_.push_back({util::printable(rel), std::move(what), std::move(action)});
    }

    int open_dir(const std::string& rel) const {
        if (rel.empty()) return ::openat(root_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return sys::openat2(root_, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
                            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    }

    std::vector<DirEntry> list(int fd) {
        std::vector<DirEntry> v;
        int dup = ::dup(fd);
        if (dup < 0) return v;
        DIR* d = ::fdopendir(dup);
        if (d == nullptr) {
            ::close(dup);
            return v;
        }
        while (const dirent* e = ::readdir(d)) {
            if (std::string_view(e->d_name) == "." || std::string_view(e->d_name) == "..") continue;
            v.push_back({e->d_name, e->d_type});
        }
        ::closedir(d);
        return v;
    }

    // One the plan protected that nothing changed during the run: the user's as it was.
    // Through the view: one the run did not write, whatever it is.
    bool untouched(const std::string& rel, const struct stat& st) const {
        if (o_.could_write) return !written(rel, st);
        return is_protected(rel) && !newer(st, o_.since);
    }

    // Changed since the run started, and (through the view) by the run: a file the
    // sandbox could write, given it and the folders above it.
    bool written(const std::string& rel, const struct stat& st) const {
        if (!newer(st, o_.since)) return false;
        if (!o_.could_write) return true;
        std::vector<std::pair<dev_t, ino_t>> chain{{st.st_dev, st.st_ino}};
        for (std::string up = rel; up.find('/') != std::string::npos;) {
            up.resize(up.rfind('/'));
            sys::UniqueFd fd(sys::openat2(root_, up.c_str(), O_PATH | O_CLOEXEC,
                                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
            struct stat at {};
            if (fd && ::fstat(fd.get(), &at) == 0) chain.emplace_back(at.st_dev, at.st_ino);
        }
        return o_.could_write(rel, chain);
    }

    // A regular file of dir (at rel), written during the run.
    bool changed_file(int dir, const std::string& rel, const std::string& name, struct stat& st) {
        if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
        // A protected one too: written during the run, it was replaced on the host, and
        // in the moment before the guard covered it again a handle opened inside
        // could write it for good (issue 25).
        return S_ISREG(st.st_mode) && written(join(rel, name), st);
    }

    // The whole of a regular file of dir (at most kMaxRead bytes), never through a
    // link; nullopt when it cannot be read whole (the caller treats that as risky:
    // git reads a file of any size).
    std::optional<std::string> read_whole(int dir, const char* name) {
        sys::UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
        if (!fd) return std::nullopt;
        std::string text;
        char buf[8192];
        for (;;) {
            ssize_t n = ::read(fd.get(), buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return std::nullopt;
            if (n == 0) break;
            text.append(buf, static_cast<size_t>(n));
            if (text.size() > static_cast<size_t>(kMaxRead)) return std::nullopt;
        }
        return text;
    }

    // A path a git file names (a gitdir, a commondir), relative to the workspace when
    // it lies inside it and is not the workspace itself; nullopt otherwise.
    std::optional<std::string> inside_workspace(const std::string& from_dir, const std::string& target) const {
        if (target.empty()) return std::nullopt;
        const std::string abs = util::normalize_path(
            target[0] == '/' ? target : o_.workspace + "/" + (from_dir.empty() ? "" : from_dir + "/") + target);
        if (abs == o_.workspace || !util::path_within(abs, o_.workspace)) return std::nullopt;
        return abs.substr(o_.workspace == "/" ? 1 : o_.workspace.size() + 1);
    }

    // Renames dir/name aside (never over anything) and takes every permission off.
    std::string neutralize(int dir, const std::string& name) {
        if (!o_.neutralize) return "flagged";
        for (int i = 0; i < 100; ++i) {
            std::string to = name + ".agentjail-quarantined" + (i ? "-" + std::to_string(i) : "");
            if (::renameat2(dir, name.c_str(), dir, to.c_str(), RENAME_NOREPLACE) == 0) {
                // Never through a link: chmod follows one, and a link the run left
                // (a config, a .git, a hooks directory) may point at any file of the
                // user's, outside the workspace too. A link has no mode of its own.
                struct stat st {};
                if (::fstatat(dir, to.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                    return "renamed to " + util::printable(to);
                ::fchmodat(dir, to.c_str(), 0, 0);
                return "renamed to " + util::printable(to) + ", mode 000";
            }
            if (errno != EEXIST) break;
        }
        return "flagged (could not rename it aside: " + util::errno_text(errno) + ")";
    }

    // ("a/b", "c") for "a/b/c"; ("", "c") for "c".
    static std::pair<std::string, std::string> split(const std::string& rel) {
        size_t slash = rel.rfind('/');
        if (slash == std::string::npos) return {"", rel};
        return {rel.substr(0, slash), rel.substr(slash + 1)};
    }

    template <class F>
    void with_dir(const std::string& rel, F&& f) {
        int fd = open_dir(rel);
        if (fd < 0) {
            add(rel, "could not be read by the post-run check: " + util::errno_text(errno), "none: check it by hand");
            return;
        }
        f(fd);
        ::close(fd);
    }

    // A git directory, once (by device and inode: a .git file, a link and the walk
    // may each lead to it). false when it cannot be opened without a link.
    bool check_git_dir_at(const std::string& rel) {
        sys::UniqueFd fd(open_dir(rel));
        if (!fd) return false;
        struct stat st {};
        if (::fstat(fd.get(), &st) == 0 && seen_.insert({st.st_dev, st.st_ino}).second) check_git_dir(fd.get(), rel);
        return true;
    }

    // A .git file ("gitdir: PATH") or link in `dir`, written during the run: the git
    // directory a file names is checked like any other when it lies in the workspace
    // and can be reached without a link; otherwise, and for a link, the pointer itself
    // is put aside.
    void check_git_pointer(const std::string& dir, bool is_link) {
        const std::string rel = join(dir, ".git");
        with_dir(dir, [&](int fd) {
            struct stat st {};
            if (::fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) != 0 || !written(rel, st)) return;
            // A link is put aside whatever it points at: the check follows none.
            if (is_link) {
                char buf[PATH_MAX];
                ssize_t n = ::readlinkat(fd, ".git", buf, sizeof buf);
                const std::string to = n > 0 ? util::printable(std::string(buf, static_cast<size_t>(n))) : "?";
                add(rel, "a .git link written during the run (to " + to +
                             "; git would use what it points at as this folder's repository)",
                    neutralize(fd, ".git"));
                return;
            }
            std::string target;
            auto text = read_whole(fd, ".git");
            if (text && util::starts_with(*text, "gitdir:")) target = trim(text->substr(7));
            const auto inside = inside_workspace(dir, target);
            if (inside && check_git_dir_at(*inside)) return;
            add(rel, std::string("a .git file written during the run points at ") +
                         (target.empty() ? std::string("nothing the check can read")
                                         : util::printable(target) +
                                               (inside ? ", through a link or where the check cannot read"
                                                       : ", outside the workspace")) +
                         " (git would use it as this folder's repository)",
                neutralize(fd, ".git"));
        });
    }

    // A config file of a git directory the plan did not protect, as git would read
    // it: git's own reading of it (git config), so that no spelling git accepts is
    // read otherwise here. What the check cannot read with certainty goes aside: a
    // link (git follows it), anything but a regular file, a file too large to read,
    // text git refuses.
    void check_config(int fd, const std::string& rel, const char* cfg) {
        struct stat st {};
        if (::fstatat(fd, cfg, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
        if (untouched(join(rel, cfg), st)) return;
        if (!S_ISREG(st.st_mode)) {
            add(join(rel, cfg),
                std::string(S_ISLNK(st.st_mode) ? "a git config that is a symbolic link (git follows it; the check "
                                                  "reads none)"
                                                : "a git config that is not a regular file"),
                neutralize(fd, cfg));
            return;
        }
        if (!written(join(rel, cfg), st)) return;
        std::string why;
        std::vector<std::string> keys;
        if (st.st_size > kMaxRead) {
            why = "larger than the check reads (" + std::to_string(kMaxRead >> 20) + " MiB)";
        } else if (auto text = read_whole(fd, cfg); !text) {
            why = "could not be read by the check";
        } else if (auto k = executable_config(*text); !k) {
            why = "git cannot read it: " + k.error().message();
        } else {
            keys = std::move(*k);
        }
        if (!why.empty()) {
            add(join(rel, cfg), "git config written during the run, " + why, neutralize(fd, cfg));
            return;
        }
        if (keys.empty()) return;
        std::string what = "git config written during the run sets ";
        for (size_t i = 0; i < keys.size(); ++i) what += (i ? ", " : "") + keys[i];
        add(join(rel, cfg), what, neutralize(fd, cfg));
    }

    void check_git_dir(int fd, const std::string& rel) {
        struct stat st {};
        for (const char* cfg : {"config", "config.worktree"}) check_config(fd, rel, cfg);
        // A linked worktree's git directory reads its config from the common one.
        if (changed_file(fd, rel, "commondir", st)) {
            auto text = read_whole(fd, "commondir");
            const auto inside = inside_workspace(rel, text ? trim(*text) : std::string());
            if (inside) (void)check_git_dir_at(*inside);
        }
        struct stat hst {};
        if (::fstatat(fd, "hooks", &hst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(hst.st_mode) &&
            !untouched(join(rel, "hooks"), hst))
            add(join(rel, "hooks"), "git's hooks directory is a symbolic link (git follows it)", neutralize(fd, "hooks"));
        int hooks = ::openat(fd, "hooks", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (hooks >= 0) {
            const std::string hrel = join(rel, "hooks");
            for (const auto& e : list(hooks)) {
                if ((e.name.size() > 7 && e.name.compare(e.name.size() - 7, 7, ".sample") == 0) ||
                    e.name.find(".agentjail-quarantined") != std::string::npos)
                    continue;
                if (!changed_file(hooks, hrel, e.name, st)) continue;
                add(join(hrel, e.name), "git hook written during the run", neutralize(hooks, e.name));
            }
            ::close(hooks);
        }
        // A rebase or cherry-pick left half done: `git rebase --continue` on the host
        // runs its exec lines.
        for (const char* state : {"rebase-merge/git-rebase-todo", "sequencer/todo"}) {
            std::string dir(state, std::string_view(state).find('/'));
            std::string name(std::string_view(state).substr(dir.size() + 1));
            int sd = ::openat(fd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            if (sd < 0) continue;
            if (changed_file(sd, join(rel, dir), name, st)) {
                // Read whole or not at all: an exec line past a bound is still run.
                auto whole = read_whole(sd, name.c_str());
                const std::string text = whole.value_or("exec");
                bool exec = false;
                size_t i = 0;
                while (i < text.size() && !exec) {
                    size_t j = text.find('\n', i);
                    if (j == std::string::npos) j = text.size();
                    std::string line = trim(text.substr(i, j - i));
                    exec = util::starts_with(line, "exec ") || util::starts_with(line, "x ") ||
                           line == "exec" || line == "x";
                    i = j + 1;
                }
                if (exec)
                    add(join(join(rel, dir), name),
                        "an unfinished rebase whose exec lines run on 'git rebase --continue'",
                        neutralize(sd, name));
            }
            ::close(sd);
        }
    }

    void check_setting(int fd, const std::string& dir, const std::string& name) {
        struct stat st {};
        if (changed_file(fd, dir, name, st))
            add(join(dir, name), "agent or editor settings written during the run (they can run commands when "
                                 "the folder is opened)",
                "flagged: review before opening this folder");
    }

    static constexpr off_t kMaxRead = 4 << 20;
    const AuditOptions& o_;
    int root_ = -1;
    std::set<std::pair<dev_t, ino_t>> seen_;  // git directories checked
    std::vector<WorkspaceFinding> out_;
};

}  // namespace

std::string executable_config_key(const std::string& section_in, const std::string& subsection,
                                  const std::string& key_in, const std::string& value) {
    const std::string section = lower(section_in);
    const std::string key = lower(key_in);
    const bool sub = !subsection.empty();
    auto runs = [&](const std::string& what) { return section + (sub ? ".<" + subsection + ">" : "") + "." + key + " " + what; };
    if (section == "core") {
        if (key == "fsmonitor") return is_bool_text(value) ? "" : runs("runs a command on git status");
        if (key == "hookspath") return runs("moves the hooks");
        if (key == "worktree") return runs("points git at another work tree");
        if (key == "sshcommand" || key == "pager" || key == "editor" || key == "askpass" ||
            key == "gitproxy" || key == "alternaterefscommand")
            return runs("runs a command");
    }
    if ((section == "filter" && (key == "clean" || key == "smudge" || key == "process")) ||
        (section == "diff" && (key == "external" || key == "command" || key == "textconv")) ||
        (section == "merge" && key == "driver") ||
        (section == "credential" && key == "helper") ||
        (section == "gpg" && key == "program") || (section == "sequence" && key == "editor") ||
        (section == "remote" && (key == "uploadpack" || key == "receivepack" || key == "proxy")) ||
        (section == "uploadpack" && key == "packobjectshook") ||
        (section == "interactive" && key == "difffilter") ||
        ((section == "difftool" || section == "mergetool" || section == "browser" || section == "man") &&
         (key == "cmd" || key == "path")) ||
        (section == "web" && key == "browser") || section == "pager" ||
        (section == "trailer" && (key == "command" || key == "cmd")) ||
        (section == "ssh" && key == "variant") ||
        // Config-based hooks (git 2.46+): hook.<name>.command runs on its event.
        (section == "hook" && key == "command") ||
        (section == "gpg" && key == "defaultkeycommand") ||
        // A remote helper git-remote-<vcs> is looked up and run for that remote.
        (section == "remote" && key == "vcs") || (section == "instaweb" && key == "httpd"))
        return runs("runs a command");
    if (section == "sendemail" && key == "smtpserver" && !value.empty() && value[0] == '/')
        return runs("runs a command (a path as the SMTP server is run as sendmail)");
    if (section == "init" && key == "templatedir") return runs("copies hooks into every new repository");
    if (section == "submodule" && key == "update" && !value.empty() && value[0] == '!')
        return runs("runs a command on submodule update");
    if (section == "alias" && !value.empty() && value[0] == '!') return runs("runs a shell command");
    if ((section == "include" || section == "includeif") && key == "path")
        return runs("includes another config file");
    if (section == "protocol" && key == "allow" && lower(value) == "always")
        return runs("allows every transport, ext:: commands included");
    if (section == "protocol" && sub && lower(subsection) == "ext" && key == "allow")
        return runs("allows the ext:: transport, which runs commands");
    return {};
}

std::string executable_config_entry(const std::string& dotted_key, const std::string& value) {
    const auto first = dotted_key.find('.');
    const auto last = dotted_key.rfind('.');
    if (first == std::string::npos) return {};
    const std::string section = dotted_key.substr(0, first);
    const std::string subsection = last > first ? dotted_key.substr(first + 1, last - first - 1) : std::string();
    return executable_config_key(section, subsection, dotted_key.substr(last + 1), value);
}

Result<std::vector<std::string>> executable_config(const std::string& text) {
    // git's own reading, from stdin: no file of the sandbox's is named to it, no
    // include is followed (an include is a finding of its own), and no repository is
    // read (GIT_DIR names none).
    Git g;
    g.git_dir = "/nonexistent";
    auto r = run_git(g, {"config", "--no-includes", "--file", "-", "--null", "--list"}, &text);
    if (!r) return std::move(r).error();
    if (r->status != 0) {
        std::string first = r->err.substr(0, r->err.find('\n'));
        return Error(ErrorKind::invalid_input, EINVAL, first.empty() ? "git config exited " + std::to_string(r->status) : first);
    }
    // Entries of "key\nvalue\0", or "key\0" for a key without a value (true).
    std::vector<std::string> out;
    size_t i = 0;
    while (i < r->out.size()) {
        size_t end = r->out.find('\0', i);
        if (end == std::string::npos) end = r->out.size();
        const std::string entry = r->out.substr(i, end - i);
        i = end + 1;
        const size_t nl = entry.find('\n');
        const std::string key = entry.substr(0, nl);
        const std::string value = nl == std::string::npos ? std::string() : entry.substr(nl + 1);
        std::string d = executable_config_entry(key, value);
        if (!d.empty() && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
    return out;
}

std::vector<WorkspaceFinding> audit_direct(const AuditOptions& options) {
    return Auditor(options).run();
}

}  // namespace agentjail::workspace
