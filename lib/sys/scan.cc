// SPDX-License-Identifier: Apache-2.0
// The workspace walk: getdents64 over descriptors opened relative to their parent
// with O_NOFOLLOW, d_type for the entry type, lstat only when asked.
#include "sys/scan.hpp"

#include "base/pattern.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <memory>

namespace agentjail::sys {

namespace {

struct LinuxDirent64 {
    ino64_t d_ino;
    off64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

EntryType type_of(mode_t mode) {
    if (S_ISREG(mode)) return EntryType::file;
    if (S_ISDIR(mode)) return EntryType::dir;
    if (S_ISLNK(mode)) return EntryType::symlink;
    return EntryType::other;
}

// Inside a git directory (one holding HEAD), these hold objects, refs and reflogs:
// the bulk of a repository, and no name a rule is about.
bool git_bulk(const char* name) {
    return std::strcmp(name, "objects") == 0 || std::strcmp(name, "refs") == 0 ||
           std::strcmp(name, "logs") == 0 || std::strcmp(name, "lfs") == 0 ||
           std::strcmp(name, "rr-cache") == 0;
}

// Inodes are stamped from the coarse clock: a change made after this reading has a
// ctime at or after it.
struct timespec coarse_now() {
    struct timespec t {};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &t);
    return t;
}

std::int64_t ns_of(const struct timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// An earlier scan's directories: each one's entries (a contiguous run, as the walk
// pushes them), by the directory's index (kTop: the root).
class Earlier {
public:
    explicit Earlier(const Scan& s) : s_(s) {
        for (std::uint32_t i = 0; i < s.entries.size(); ++i) {
            auto& r = runs_[s.entries[i].parent];
            if (r.second == 0) r.first = i;
            ++r.second;
        }
    }
    const Scan& scan() const { return s_; }
    // The entries of directory `dir` of the earlier scan: [first, first + count).
    std::pair<std::uint32_t, std::uint32_t> children(std::uint32_t dir) const {
        auto it = runs_.find(dir);
        return it == runs_.end() ? std::pair<std::uint32_t, std::uint32_t>{0, 0} : it->second;
    }

private:
    const Scan& s_;
    std::unordered_map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> runs_;
};

class Walker {
public:
    Walker(Scan& scan, const ScanOptions& opt, const Earlier* earlier)
        : scan_(scan), opt_(opt), earlier_(earlier) {
        for (const auto& n : opt.names)
            if (!n.empty() && n.back() == '/')
                dir_names_.emplace_back(std::string_view(n).substr(0, n.size() - 1));
            else
                names_.emplace_back(n);
    }

    static constexpr std::uint32_t kNone = UINT32_MAX - 1;  // no directory of the earlier scan

    // Walks the directory dirfd, whose entry is entries[self] (kTop: the root), at
    // `depth` levels below the root; `old`: the same directory's index in the earlier
    // scan (kTop for the root, kNone when it had none).
    // `whole`: every entry below is kept (a directory ScanOptions::names names with "/").
    Result<void> walk(int dirfd, std::uint32_t self, bool in_git, std::size_t depth, std::uint32_t old,
                      bool whole = false) {
        struct Child {
            std::string name;
            EntryType type;
            ino_t ino;
            std::uint32_t old = kNone;  // its index in the earlier scan
        };
        std::vector<Child> children;
        bool has_head = false;
        bool listed = false;
        std::pair<std::uint32_t, std::uint32_t> old_run{0, 0};
        // Its ctime before its entries are read: a change after this reading sets
        // another one, which the next scan sees.
        struct stat self_st {};
        const std::int64_t ctime = ::fstat(dirfd, &self_st) == 0 ? ns_of(self_st.st_ctim) : 0;
        (self == ScanEntry::kTop ? scan_.root_ctime_ns : scan_.entries[self].ctime_ns) = ctime;
        if (earlier_ != nullptr && old != kNone && ctime != 0) {
            old_run = earlier_->children(old);
            const Scan& e = earlier_->scan();
            const bool top = old == ScanEntry::kTop;
            const ino_t want = top ? e.root_ino : e.entries[old].ino;
            const std::int64_t was = top ? e.root_ctime_ns : e.entries[old].ctime_ns;
            if (self_st.st_ino == want && self_st.st_dev == scan_.root_dev && ctime == was && was < ns_of(e.taken)) {
                for (std::uint32_t i = old_run.first; i < old_run.first + old_run.second; ++i) {
                    const ScanEntry& c = e.entries[i];
                    if (in_git && c.type == EntryType::file && c.name == "HEAD") has_head = true;
                    children.push_back({c.name, c.type, c.ino, i});
                }
                listed = true;
                ++scan_.reused;
            }
        }
        if (!listed) ++scan_.listed;
        for (; !listed;) {
            long n = ::syscall(SYS_getdents64, dirfd, buf_, sizeof buf_);
            // Removed since it was opened (another run's staged placeholder directory,
            // renamed into place or taken away): nothing is left to list.
            if (n < 0 && errno == ENOENT) break;
            // Opened but not listable (/proc/1/map_files): unreadable, as for open.
            if (n < 0 && (errno == EACCES || errno == EPERM) && self != ScanEntry::kTop) {
                scan_.skipped.push_back(scan_.rel(scan_.entries[self]));
                break;
            }
            if (n < 0) {
                int e = errno;
                return Error(ErrorKind::setup, e, "reading " + where(self) + ": " + util::errno_text(e));
            }
            if (n == 0) break;
            for (long off = 0; off < n;) {
                auto* d = reinterpret_cast<LinuxDirent64*>(buf_ + off);
                off += d->d_reclen;
                const char* name = d->d_name;
                if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                    continue;
                EntryType t = EntryType::other;
                switch (d->d_type) {
                case DT_REG: t = EntryType::file; break;
                case DT_DIR: t = EntryType::dir; break;
                case DT_LNK: t = EntryType::symlink; break;
                case DT_UNKNOWN: {
                    // Some filesystems leave d_type empty: ask, without following.
                    struct stat st {};
                    if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) t = type_of(st.st_mode);
                    break;
                }
                default: break;
                }
                if (in_git && t == EntryType::file && std::strcmp(name, "HEAD") == 0) has_head = true;
                children.push_back({name, t, static_cast<ino_t>(d->d_ino)});
            }
        }
        if (!listed && old_run.second > 0) {
            // Read again (it changed): its directories that the earlier scan listed
            // are still matched to theirs, by name (and then by inode, in walk()).
            std::unordered_map<std::string_view, std::uint32_t> by_name;
            const Scan& e = earlier_->scan();
            for (std::uint32_t i = old_run.first; i < old_run.first + old_run.second; ++i)
                if (e.entries[i].type == EntryType::dir) by_name.emplace(e.entries[i].name, i);
            for (auto& c : children)
                if (c.type == EntryType::dir)
                    if (auto it = by_name.find(c.name); it != by_name.end()) c.old = it->second;
        }
        // Only the names asked for (and every directory): the rest are counted.
        if (!opt_.names.empty() && !whole)
            std::erase_if(children, [&](const Child& c) {
                const bool drop = c.type != EntryType::dir && !kept(c.name);
                scan_.left_out += drop;
                return drop;
            });
        if (scan_.entries.size() + children.size() > opt_.max_entries)
            return Error(ErrorKind::invalid_input, E2BIG,
                         "workspace " + scan_.root + " has more than " +
                             std::to_string(opt_.max_entries) +
                             " entries: too many to check for hidden and protected paths");
        for (const auto& c : children) name_bytes_ += c.name.size();
        if (name_bytes_ > opt_.max_name_bytes)
            return Error(ErrorKind::invalid_input, E2BIG,
                         "workspace " + scan_.root + " has more than " + std::to_string(opt_.max_name_bytes >> 20) +
                             " MiB of file names: too many to check for hidden and protected paths");
        const size_t first = scan_.entries.size();
        for (auto& c : children) {
            ScanEntry e;
            e.name = c.name;
            e.parent = self;
            e.type = c.type;
            e.ino = c.ino;
            if (opt_.stat) {
                struct stat st {};
                if (::fstatat(dirfd, c.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
                    e.type = type_of(st.st_mode);
                    e.mode = st.st_mode;
                    e.dev = st.st_dev;
                    e.ino = st.st_ino;
                    e.nlink = st.st_nlink;
                }
            }
            scan_.entries.push_back(std::move(e));
        }
        for (size_t i = 0; i < children.size(); ++i) {
            const Child& c = children[i];
            if (c.type != EntryType::dir) continue;
            const auto index = static_cast<std::uint32_t>(first + i);
            const bool child_git = in_git || c.name == ".git";
            if (opt_.skip_git_internals && in_git && has_head && git_bulk(c.name.c_str())) continue;
            if (depth + 1 > opt_.max_depth) {
                scan_.too_deep.push_back(scan_.rel(scan_.entries[index]));
                continue;
            }
            sys::UniqueFd fd(::openat(dirfd, c.name.c_str(),
                                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
            if (!fd) {
                int e = errno;
                // Unreadable for us is unreadable for the sandbox (same user, same
                // permission checks); a name swapped for a link meanwhile is not followed.
                // Gone meanwhile (another run's staged placeholder renamed into place):
                // nothing left to look at there.
                if (e == ENOENT) continue;
                if (e == EACCES || e == ENOTDIR || e == ELOOP || e == EPERM) {
                    scan_.skipped.push_back(scan_.rel(scan_.entries[index]));
                    continue;
                }
                return Error(ErrorKind::setup, e, "opening " + where(index) + ": " + util::errno_text(e));
            }
            const bool below = whole || std::any_of(dir_names_.begin(), dir_names_.end(), [&](const auto& f) {
                return f.may_match(c.name);
            });
            if (auto r = walk(fd.get(), index, child_git, depth + 1, c.old, below); !r) return r;
        }
        return {};
    }

private:
    bool kept(std::string_view name) const {
        if (name == "HEAD") return true;
        for (const auto& f : names_)
            if (f.may_match(name)) return true;
        return false;
    }

    std::string where(std::uint32_t index) const {
        return index == ScanEntry::kTop ? scan_.root : scan_.root + "/" + scan_.rel(scan_.entries[index]);
    }

    Scan& scan_;
    const ScanOptions& opt_;
    const Earlier* earlier_;
    std::vector<base::SegmentPrefilter> names_, dir_names_;
    std::size_t name_bytes_ = 0;  // of every name kept so far
    alignas(8) char buf_[64 * 1024];
};

}  // namespace

Result<Scan> scan(const std::string& root, const ScanOptions& options) {
    Scan s;
    s.root = root;
    sys::UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        int e = errno;
        return Error(ErrorKind::invalid_input, e, "cannot scan " + root + ": " + util::errno_text(e));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        int e = errno;
        return Error(ErrorKind::setup, e, "cannot scan " + root + ": " + util::errno_text(e));
    }
    s.root_dev = st.st_dev;
    s.root_ino = st.st_ino;
    s.taken = coarse_now();
    s.names = options.names;
    std::unique_ptr<Earlier> earlier;
    if (options.before != nullptr && !options.stat && options.before->root == root &&
        options.before->names == options.names &&
        options.before->root_dev == s.root_dev && options.before->root_ino == s.root_ino &&
        options.before->skipped.empty() && options.before->too_deep.empty())
        earlier = std::make_unique<Earlier>(*options.before);
    if (earlier) s.entries.reserve(options.before->entries.size() + options.before->entries.size() / 8);
    auto walker = std::make_unique<Walker>(s, options, earlier.get());
    if (auto r = walker->walk(fd.get(), ScanEntry::kTop, false, 0, earlier ? ScanEntry::kTop : Walker::kNone); !r)
        return std::move(r).error();
    return s;
}

// The kept scan: "agentjail-scan 2\n", then fixed-width native numbers (the file
// never leaves the machine that wrote it): root device, inode and ctime, taken (ns),
// the root's length and bytes, the count of names kept (ScanOptions::names) and each
// as a length (2 bytes) and bytes, the count of entries, and per entry its parent,
// type, inode, ctime (ns), name length (2 bytes) and name.
namespace {

constexpr std::string_view kScanMagic = "agentjail-scan 2\n";
constexpr std::uint32_t kMaxKeptNames = 4096;

template <typename T>
void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

class Reader {
public:
    explicit Reader(std::string_view b) : b_(b) {}
    template <typename T>
    bool get(T& v) {
        if (b_.size() - at_ < sizeof v) return false;
        std::memcpy(&v, b_.data() + at_, sizeof v);
        at_ += sizeof v;
        return true;
    }
    bool bytes(std::size_t n, std::string& out) {
        if (b_.size() - at_ < n) return false;
        out.assign(b_.data() + at_, n);
        at_ += n;
        return true;
    }
    bool done() const { return at_ == b_.size(); }

private:
    std::string_view b_;
    std::size_t at_ = 0;
};

}  // namespace

std::string encode(const Scan& scan) {
    if (!scan.skipped.empty() || !scan.too_deep.empty()) return {};
    std::string out(kScanMagic);
    put<std::uint64_t>(out, scan.root_dev);
    put<std::uint64_t>(out, scan.root_ino);
    put<std::int64_t>(out, scan.root_ctime_ns);
    put<std::int64_t>(out, ns_of(scan.taken));
    put<std::uint32_t>(out, static_cast<std::uint32_t>(scan.root.size()));
    out += scan.root;
    if (scan.names.size() > kMaxKeptNames) return {};
    put<std::uint32_t>(out, static_cast<std::uint32_t>(scan.names.size()));
    for (const auto& n : scan.names) {
        if (n.size() > 255) return {};
        put<std::uint16_t>(out, static_cast<std::uint16_t>(n.size()));
        out += n;
    }
    put<std::uint32_t>(out, static_cast<std::uint32_t>(scan.entries.size()));
    for (const auto& e : scan.entries) {
        put<std::uint32_t>(out, e.parent);
        put<std::uint8_t>(out, static_cast<std::uint8_t>(e.type));
        put<std::uint64_t>(out, e.ino);
        put<std::int64_t>(out, e.ctime_ns);
        put<std::uint16_t>(out, static_cast<std::uint16_t>(e.name.size()));
        out += e.name;
    }
    return out;
}

Result<Scan> decode(std::string_view bytes, const ScanOptions& options) {
    auto bad = [](const std::string& why) { return Error(ErrorKind::invalid_input, EINVAL, "a kept scan " + why); };
    if (bytes.substr(0, kScanMagic.size()) != kScanMagic) return bad("has another format");
    Reader r(bytes.substr(kScanMagic.size()));
    Scan s;
    std::uint64_t dev = 0, ino = 0;
    std::int64_t taken = 0;
    std::uint32_t root_len = 0, names = 0, count = 0;
    if (!r.get(dev) || !r.get(ino) || !r.get(s.root_ctime_ns) || !r.get(taken) || !r.get(root_len) ||
        root_len > 4096 || !r.bytes(root_len, s.root) || !r.get(names))
        return bad("is cut short");
    if (names > kMaxKeptNames) return bad("keeps more names than a walk is given");
    for (std::uint32_t i = 0; i < names; ++i) {
        std::uint16_t len = 0;
        std::string n;
        if (!r.get(len) || len > 255 || !r.bytes(len, n)) return bad("is cut short");
        s.names.push_back(std::move(n));
    }
    if (!r.get(count)) return bad("is cut short");
    if (s.root.empty() || s.root[0] != '/' || taken <= 0) return bad("names no root");
    if (count > options.max_entries) return bad("has more entries than a walk keeps");
    s.root_dev = static_cast<dev_t>(dev);
    s.root_ino = static_cast<ino_t>(ino);
    s.taken.tv_sec = static_cast<time_t>(taken / 1'000'000'000);
    s.taken.tv_nsec = static_cast<long>(taken % 1'000'000'000);
    s.entries.reserve(count);
    // Each directory's entries lie together: a parent seen before, then another, is
    // never seen again.
    std::vector<bool> closed(count, false);
    bool top_closed = false;
    std::uint32_t current = ScanEntry::kTop;
    std::size_t name_bytes = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
        ScanEntry e;
        std::uint8_t type = 0;
        std::uint64_t eino = 0;
        std::uint16_t len = 0;
        if (!r.get(e.parent) || !r.get(type) || !r.get(eino) || !r.get(e.ctime_ns) || !r.get(len) ||
            !r.bytes(len, e.name))
            return bad("is cut short");
        if (type > static_cast<std::uint8_t>(EntryType::other)) return bad("has an unknown entry type");
        e.type = static_cast<EntryType>(type);
        e.ino = static_cast<ino_t>(eino);
        if (e.name.empty() || e.name.size() > 255 || e.name == "." || e.name == ".." ||
            e.name.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
            return bad("has an entry that is not a name");
        name_bytes += e.name.size();
        if (name_bytes > options.max_name_bytes) return bad("has more bytes of names than a walk keeps");
        if (e.parent != ScanEntry::kTop && (e.parent >= i || s.entries[e.parent].type != EntryType::dir))
            return bad("has an entry before its directory");
        if (i == 0 || e.parent != current) {
            if (i > 0 && current == ScanEntry::kTop) top_closed = true;
            else if (i > 0) closed[current] = true;
            const bool seen = e.parent == ScanEntry::kTop ? top_closed : static_cast<bool>(closed[e.parent]);
            if (seen) return bad("has a directory's entries apart");
            current = e.parent;
        }
        s.entries.push_back(std::move(e));
    }
    if (!r.done()) return bad("has bytes after its entries");
    return s;
}

std::string Scan::rel(const ScanEntry& e) const {
    std::vector<const std::string*> parts{&e.name};
    std::size_t size = e.name.size();
    for (std::uint32_t p = e.parent; p != ScanEntry::kTop; p = entries[p].parent) {
        parts.push_back(&entries[p].name);
        size += entries[p].name.size() + 1;
    }
    std::string out;
    out.reserve(size);
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (!out.empty()) out += '/';
        out += **it;
    }
    return out;
}

std::string Scan::dir_of(const ScanEntry& e) const {
    return e.parent == ScanEntry::kTop ? std::string() : rel(entries[e.parent]);
}

Result<void> stat_entry(const Scan& scan, ScanEntry& entry) {
    sys::UniqueFd root(::open(scan.root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root) {
        int e = errno;
        return Error(ErrorKind::setup, e, "cannot open " + scan.root + ": " + util::errno_text(e));
    }
    const std::string rel = scan.rel(entry);
    sys::UniqueFd fd(sys::openat2(root.get(), rel.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC,
                                  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!fd) {
        int e = -fd.release();
        return Error(ErrorKind::setup, e, "cannot open " + scan.root + "/" + rel + ": " + util::errno_text(e));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        int e = errno;
        return Error(ErrorKind::setup, e, "cannot stat " + scan.root + "/" + rel + ": " + util::errno_text(e));
    }
    entry.type = type_of(st.st_mode);
    entry.mode = st.st_mode;
    entry.dev = st.st_dev;
    entry.ino = st.st_ino;
    entry.nlink = st.st_nlink;
    return {};
}

}  // namespace agentjail::sys
