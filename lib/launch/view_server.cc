// SPDX-License-Identifier: Apache-2.0
// The view's FUSE server: the kernel's requests (linux/fuse.h) answered from the
// host's directory, each name judged by view::Rules first.
#include "launch/view_server.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <list>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>

namespace agentjail::view {

namespace {

constexpr std::uint32_t kMaxWrite = 1u << 20;
constexpr std::size_t kBufSize = kMaxWrite + 4096;
constexpr std::uint32_t kOverflowId = 65534;
// How long the kernel keeps a name's answer and a file's attributes before it asks
// again. In a folder the server watches (inotify), the host's changes are pushed to
// the kernel as they happen and the answers live long; the lifetime is then only a
// net for what inotify does not report (a write through a mapping, a second name
// outside the project). Elsewhere a host change shows inside after at most a second.
constexpr std::uint64_t kCacheSeconds = 1;
constexpr std::uint64_t kWatchedSeconds = 30;
constexpr std::uint32_t kWatchEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB |
                                       IN_CLOSE_WRITE | IN_ONLYDIR | IN_EXCL_UNLINK;
// A directory the run did not make is renamed only when nothing below it is protected
// or hidden; past this many entries the walk gives up and the rename is refused with
// EXDEV (mv then copies, and each file's name is judged).
constexpr std::size_t kRenameWalkMax = 20000;

// A held O_PATH descriptor, shared with the requests using it: one the cache lets go
// of is closed when the last of them is done.
using Fd = std::shared_ptr<const sys::UniqueFd>;

struct Node {
    // O_PATH, never following a link; null when not held: opened again from the
    // parent's by name, and only if it is still this inode (Server::State::fd_of).
    Fd fd;
    std::list<std::uint64_t>::iterator held;  // its place in State::held while fd is set
    int wd = -1;  // a directory's inotify watch, when it has one
    dev_t dev = 0;
    ino_t ino = 0;
    mode_t type = 0;
    std::uint64_t nlookup = 0;
    std::uint64_t parent = 0;  // 0: the root
    std::string name;
    bool protect = false;  // judged protected by a name it was found under (sticky)
    const std::string* text = nullptr;  // a file of Rules::files (no fd, never forgotten)
};

// An id across the sandbox's user namespace, either way: it maps one id to itself
// (Rules::uid), and every other is the overflow id.
std::uint32_t across(std::uint32_t id, std::uint32_t mapped) { return id == mapped ? id : kOverflowId; }

std::string proc_fd(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

bool write_access(std::uint32_t flags) { return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0; }

// A file system whose changes may come from another machine, which inotify does not
// report: its answers stay short-lived.
bool remote(const struct statfs& sf) {
    switch (static_cast<unsigned long>(sf.f_type)) {
        case 0x6969UL:      // NFS
        case 0x517BUL:      // SMB
        case 0xFF534D42UL:  // CIFS
        case 0xFE534D42UL:  // SMB2
        case 0x65735546UL:  // FUSE (sshfs, ...)
        case 0x01021997UL:  // 9p
        case 0x00C36400UL:  // Ceph
        case 0x5346414FUL:  // AFS
        case 0x47504653UL:  // GPFS
        case 0x0BD00BD0UL:  // Lustre
            return true;
        default: return false;
    }
}

// When a file was born, where its file system keeps that (statx): with the inode
// number, an identity that a number the host frees and reuses does not share.
struct Birth {
    bool known = false;
    std::int64_t sec = 0;
    std::uint32_t nsec = 0;
    bool operator==(const Birth&) const = default;
};

// The birth of `name` below dirfd (flags: AT_EMPTY_PATH for dirfd itself), if it is
// still the inode `ino`.
std::optional<Birth> birth_of(int dirfd, const char* name, int flags, ino_t ino) {
    struct statx sx {};
    if (::statx(dirfd, name, flags | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_INO | STATX_BTIME, &sx) != 0 ||
        sx.stx_ino != ino)
        return std::nullopt;
    Birth b;
    if ((sx.stx_mask & STATX_BTIME) != 0) {
        b.known = true;
        b.sec = sx.stx_btime.tv_sec;
        b.nsec = sx.stx_btime.tv_nsec;
    }
    return b;
}

}  // namespace

struct Server::State {
    sys::UniqueFd fuse;
    sys::UniqueFd stop_fd;
    std::shared_ptr<const Rules> rules;
    std::vector<std::thread> threads;
    std::atomic<bool> stopping{false};
    bool server_root = ::geteuid() == 0;

    mutable std::mutex mu;
    std::mutex reader;  // held by the one thread waiting for the kernel's next request
    std::unordered_map<std::uint64_t, Node> nodes;
    std::map<std::pair<dev_t, ino_t>, std::uint64_t> by_inode;
    std::map<std::string, std::uint64_t> text_nodes;  // rel of a Rules::files entry -> nodeid (made at start)
    // What the run made, with each one's birth: a file the host removes is not seen
    // go, and its number may come back as a host file, which must not pass for the run's.
    std::map<std::pair<dev_t, ino_t>, Birth> made;
    // Every inode the sandbox opened for writing or truncated: the run's, wherever the
    // host moves it afterwards (over a protected name, while a handle stays open).
    std::set<std::pair<dev_t, ino_t>> wrote;
    std::uint64_t next_id = FUSE_ROOT_ID + 1;
    RefusalTally refused;
    // The nodes holding a descriptor, most recently used first, at most held_max (the
    // root's is held apart, always): the descriptors are bounded by this, not by how
    // many inodes the sandbox's dentry cache keeps (a 50,000-file `git status`).
    std::list<std::uint64_t> held;
    std::size_t held_max = 1024;
    // The host's changes in the folders the sandbox holds, for the kernel's caches:
    // a watch per directory node, at most watch_max (the user's watches are shared
    // with their editor); none on a remote file system, whose changes inotify misses.
    sys::UniqueFd inotify;
    // The kernel expires a name on notice instead of dropping it (FUSE_EXPIRE_ONLY,
    // Linux 6.2): a folder a process stands in stays its working directory.
    std::atomic<bool> expire_only{false};
    std::unordered_map<int, std::uint64_t> watches;  // wd -> directory node
    std::size_t watch_max = 8192;

    // --- the node table (mu held) ---

    std::string rel_of_locked(std::uint64_t id) const {
        std::vector<const std::string*> parts;
        for (auto it = nodes.find(id); it != nodes.end() && it->second.parent != 0 && parts.size() < 4096;
             it = nodes.find(it->second.parent))
            parts.push_back(&it->second.name);
        std::string out;
        for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
            if (!out.empty()) out += '/';
            out += **p;
        }
        return out;
    }

    // Is `id` below `ancestor` (or it)?
    bool descends_locked(std::uint64_t id, std::uint64_t ancestor) const {
        for (int depth = 0; id != 0; ++depth) {
            if (id == ancestor || depth >= 4096) return true;
            auto it = nodes.find(id);
            if (it == nodes.end()) return false;
            id = it->second.parent;
        }
        return false;
    }

    // A refusal for the record: the path as the sandbox names it, and why.
    void event(bool hidden, const std::string& rel, const std::string& what) {
        const std::string path = rel.empty() ? rules->inside : rules->inside + "/" + rel;
        std::lock_guard<std::mutex> l(mu);
        if (hidden)
            refused.add("workspace", path, "hidden by the policy's hide rules (" + what + ")", "");
        else
            refused.add("workspace", path,
                        what + ": protected (it can run code on the host later; docs/workspace.md)",
                        "[workspace] unprotect, if it is meant for the agent to change");
    }

    // Did the run make the file `name` below dirfd (st: its stat) through the view? The
    // inode number picks it, the birth time tells it from a later file of the same
    // number (on a file system that keeps none, the number alone decides).
    bool made_here(int dirfd, const char* name, const struct stat& st, int flags = 0) const {
        Birth was;
        {
            std::lock_guard<std::mutex> l(mu);
            auto it = made.find({st.st_dev, st.st_ino});
            if (it == made.end()) return false;
            was = it->second;
        }
        const auto now = birth_of(dirfd, name, flags, st.st_ino);
        return now && (!was.known || *now == was);
    }

    // Keeps `fd` as node n's (id), dropping the least recently used past held_max.
    void hold_locked(std::uint64_t id, Node& n, Fd fd) {
        if (n.fd) return;
        n.fd = std::move(fd);
        if (id == FUSE_ROOT_ID) return;
        held.push_front(id);
        n.held = held.begin();
        while (held.size() > held_max) {
            nodes[held.back()].fd.reset();
            held.pop_back();
        }
    }
    // (Never the root's: the root is never forgotten.)
    void unhold_locked(Node& n) {
        if (!n.fd) return;
        held.erase(n.held);
        n.fd.reset();
    }

    // Node id's descriptor: the held one, or opened again by name from the parent's
    // and kept only if it is the same inode (ESTALE when the host replaced or moved it
    // since: the kernel looks the name up again). Null with err set on failure; null
    // with err 0 for a Rules::files entry, which has none.
    Fd fd_of(std::uint64_t id, int& err, int depth = 0) {
        std::uint64_t parent = 0;
        std::string name;
        dev_t dev = 0;
        ino_t ino = 0;
        {
            std::lock_guard<std::mutex> l(mu);
            auto it = nodes.find(id);
            if (it == nodes.end()) {
                err = ENOENT;
                return {};
            }
            Node& n = it->second;
            if (n.fd) {
                if (id != FUSE_ROOT_ID) held.splice(held.begin(), held, n.held);
                return n.fd;
            }
            if (n.text != nullptr) {
                err = 0;
                return {};
            }
            parent = n.parent;
            name = n.name;
            dev = n.dev;
            ino = n.ino;
        }
        if (depth > 4096) {
            err = ELOOP;
            return {};
        }
        Fd p = fd_of(parent, err, depth + 1);
        if (!p) {
            if (err == 0 || err == ENOENT) err = ESTALE;
            return {};
        }
        auto fd = std::make_shared<const sys::UniqueFd>(::openat(p->get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        struct stat st {};
        if (!*fd) {
            err = errno == ENOENT || errno == ENOTDIR ? ESTALE : errno;
            return {};
        }
        if (::fstatat(fd->get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != dev ||
            st.st_ino != ino) {
            err = ESTALE;
            return {};
        }
        std::lock_guard<std::mutex> l(mu);
        auto it = nodes.find(id);
        if (it == nodes.end()) {
            err = ENOENT;
            return {};
        }
        hold_locked(id, it->second, fd);
        return it->second.fd;
    }

    // What a request names: the node's facts, taken under the lock, and its descriptor
    // (held by the Ref for as long as the request uses it).
    struct Ref {
        Fd hold;
        int fd = -1;
        mode_t type = 0;
        bool protect = false;
        bool made = false;  // a folder the run made (its birth checked)
        const std::string* text = nullptr;
        dev_t dev = 0;
        ino_t ino = 0;
        std::string rel;
        bool ok = false;
        int err = ENOENT;  // why not ok
    };
    void mark_wrote(dev_t dev, ino_t ino) {
        std::lock_guard<std::mutex> l(mu);
        wrote.insert({dev, ino});
    }
    // The sandbox removed the last name of this inode: its number may come back as
    // another file, the host's, which must not pass for the run's.
    void released(const struct stat& st) {
        std::lock_guard<std::mutex> l(mu);
        made.erase({st.st_dev, st.st_ino});
        wrote.erase({st.st_dev, st.st_ino});
    }
    Ref ref(std::uint64_t id) {
        Ref r;
        {
            std::lock_guard<std::mutex> l(mu);
            auto it = nodes.find(id);
            if (it == nodes.end()) return r;
            r.type = it->second.type;
            r.protect = it->second.protect;
            r.text = it->second.text;
            // Only a folder's is ever asked (what the run made in it is the run's), and
            // its birth costs a statx: not paid on every read and write of a file.
            r.made = r.text == nullptr && S_ISDIR(it->second.type) && made.count({it->second.dev, it->second.ino}) > 0;
            r.dev = it->second.dev;
            r.ino = it->second.ino;
            r.rel = rel_of_locked(id);
        }
        if (r.text == nullptr) {
            r.hold = fd_of(id, r.err);
            if (!r.hold) return r;
            r.fd = r.hold->get();
            if (r.made) {
                struct stat st {};
                st.st_dev = r.dev;
                st.st_ino = r.ino;
                r.made = made_here(r.fd, "", st, AT_EMPTY_PATH);
            }
        }
        r.ok = true;
        return r;
    }

    static std::string join(const std::string& dir, std::string_view name) {
        return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
    }

    // --- replies ---

    void reply(std::uint64_t unique, int error, const void* data = nullptr, std::size_t size = 0,
               const void* data2 = nullptr, std::size_t size2 = 0) {
        fuse_out_header h{};
        h.unique = unique;
        h.error = error == 0 ? 0 : -std::abs(error);
        iovec iov[3] = {{&h, sizeof h}, {const_cast<void*>(data), size}, {const_cast<void*>(data2), size2}};
        int n = 1;
        if (error == 0 && size > 0) n = 2;
        if (error == 0 && size2 > 0) n = 3;
        h.len = static_cast<std::uint32_t>(sizeof h + (n > 1 ? size : 0) + (n > 2 ? size2 : 0));
        // ENOENT: the request was interrupted and is gone; nothing else to do.
        (void)::writev(fuse.get(), iov, n);
    }
    template <class T>
    void reply_struct(std::uint64_t unique, const T& t) {
        reply(unique, 0, &t, sizeof t);
    }

    void fill_attr(fuse_attr& a, const struct stat& st) const {
        a.ino = st.st_ino;
        a.size = static_cast<std::uint64_t>(st.st_size);
        a.blocks = static_cast<std::uint64_t>(st.st_blocks);
        a.atime = static_cast<std::uint64_t>(st.st_atim.tv_sec);
        a.mtime = static_cast<std::uint64_t>(st.st_mtim.tv_sec);
        a.ctime = static_cast<std::uint64_t>(st.st_ctim.tv_sec);
        a.atimensec = static_cast<std::uint32_t>(st.st_atim.tv_nsec);
        a.mtimensec = static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
        a.ctimensec = static_cast<std::uint32_t>(st.st_ctim.tv_nsec);
        a.mode = st.st_mode;
        a.nlink = static_cast<std::uint32_t>(st.st_nlink);
        a.uid = across(st.st_uid, rules->uid);
        a.gid = across(st.st_gid, rules->gid);
        // Device numbers are not shown: the mount is nodev, and a node's number is
        // the host's business.
        a.rdev = 0;
        a.blksize = static_cast<std::uint32_t>(st.st_blksize);
    }
    // A Rules::files entry's attributes, as a stat of the host's would give them.
    struct stat text_stat(std::uint64_t id, const std::string& text) const {
        struct stat st {};
        st.st_ino = id;
        st.st_size = static_cast<off_t>(text.size());
        st.st_blocks = static_cast<blkcnt_t>((text.size() + 511) / 512);
        st.st_mode = S_IFREG | 0444;
        st.st_nlink = 1;
        st.st_blksize = 4096;
        st.st_uid = rules->uid;
        st.st_gid = rules->gid;
        return st;
    }
    // How long the kernel may keep node id's name and attributes: long when the
    // folder holding it is watched (the root: itself), so its changes are pushed.
    std::uint64_t lifetime(std::uint64_t id) const {
        std::lock_guard<std::mutex> l(mu);
        auto it = nodes.find(id);
        if (it == nodes.end()) return kCacheSeconds;
        if (id != FUSE_ROOT_ID) it = nodes.find(it->second.parent);
        return it != nodes.end() && it->second.wd >= 0 ? kWatchedSeconds : kCacheSeconds;
    }
    fuse_entry_out entry(std::uint64_t id, const struct stat& st) const {
        fuse_entry_out e{};
        e.nodeid = id;
        e.entry_valid = e.attr_valid = lifetime(id);
        fill_attr(e.attr, st);
        return e;
    }
    void reply_entry(std::uint64_t unique, std::uint64_t id, const struct stat& st) {
        reply_struct(unique, entry(id, st));
    }

    // The run's repositories are held from the host's git (view::kHeldHead): the host's
    // name for the sandbox's `name` in dir. "HEAD" is the held name where the run's held
    // HEAD is there, and (make: for a name about to be made or renamed onto) where the
    // host has no HEAD either; any other name is itself.
    static bool is_held(const char* name) { return std::strcmp(name, kHeldHead) == 0; }
    const char* on_host(const Ref& dir, const char* name, bool make) const {
        if (std::strcmp(name, "HEAD") != 0 || dir.fd < 0) return name;
        struct stat st {};
        if (::fstatat(dir.fd, kHeldHead, &st, AT_SYMLINK_NOFOLLOW) == 0 && made_here(dir.fd, kHeldHead, st))
            return kHeldHead;
        if (!make || ::fstatat(dir.fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0) return name;
        return kHeldHead;
    }

    // --- lookups ---

    // The node for `name` in directory `parent`, counted as one more lookup by the
    // kernel. 0 with *err set: not there (or hidden).
    std::uint64_t find(std::uint64_t parent, const char* name, struct stat& st, int& err, bool count = true) {
        Ref p = ref(parent);
        if (!p.ok) {
            err = p.err;
            return 0;
        }
        if (!S_ISDIR(p.type)) {
            err = ENOTDIR;
            return 0;
        }
        if (is_held(name)) {  // the sandbox's own name for it is HEAD
            err = ENOENT;
            return 0;
        }
        name = on_host(p, name, false);
        const std::string rel = join(p.rel, name);
        if (auto t = text_nodes.find(rel); t != text_nodes.end()) {
            // Made at start and never forgotten: only the kernel's count moves.
            std::lock_guard<std::mutex> l(mu);
            ++nodes[t->second].nlookup;
            st = text_stat(t->second, *nodes[t->second].text);
            return t->second;
        }
        // A lookup costs a stat: a descriptor of the name's own is opened only when a
        // request needs one (most lookups are a stat of the sandbox's, and end there).
        if (::fstatat(p.fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            err = errno;
            return 0;
        }
        const auto key = std::make_pair(st.st_dev, st.st_ino);
        const bool is_dir = S_ISDIR(st.st_mode);
        Rules::Verdict v = Rules::Verdict::plain;
        if (!made_here(p.fd, name, st)) {
            v = rules->hide_inodes.count(key) ? Rules::Verdict::hidden : rules->judge(rel, is_dir);
            if (v == Rules::Verdict::plain && p.protect && !p.made) v = Rules::Verdict::protect;
        }
        if (v == Rules::Verdict::hidden) {
            event(true, rel, "look up");
            err = ENOENT;
            return 0;
        }
        auto reuse = [&](std::uint64_t id) -> std::uint64_t {
            // The same directory under a second path (a bind mount of an ancestor inside
            // the project): its place in the tree would become a loop.
            if (is_dir && (id == FUSE_ROOT_ID || descends_locked(parent, id))) {
                err = ELOOP;
                return 0;
            }
            Node& n = nodes[id];
            if (count) ++n.nlookup;
            n.parent = parent;
            n.name = name;
            n.protect = n.protect || v == Rules::Verdict::protect;
            return id;
        };
        std::unique_lock<std::mutex> l(mu);
        // A known number of another type is another file that reused a freed inode
        // (the kernel has not forgotten the old one yet): a node of its own.
        if (auto known = by_inode.find(key); known != by_inode.end() && nodes[known->second].type == (st.st_mode & S_IFMT))
            return reuse(known->second);
        // A new inode, known by the name it was judged under and its number: a
        // descriptor opened later by that name is checked to be this inode.
        const std::uint64_t id = next_id++;
        Node n;
        n.dev = st.st_dev;
        n.ino = st.st_ino;
        n.type = st.st_mode & S_IFMT;
        n.nlookup = count ? 1 : 0;
        n.parent = parent;
        n.name = name;
        n.protect = v == Rules::Verdict::protect;
        nodes.emplace(id, std::move(n));
        by_inode.insert_or_assign(key, id);
        l.unlock();
        // Watched before the kernel hears of it, so before anything in it is looked up.
        if (is_dir) watch(id);
        return id;
    }

    // --- the host's changes, pushed to the kernel ---

    void watch(std::uint64_t id) {
        if (!inotify) return;
        {
            std::lock_guard<std::mutex> l(mu);
            if (watches.size() >= watch_max) return;
        }
        // Through a descriptor checked to be the node's inode: the watch is on the
        // folder that was judged, whatever its name is now.
        int err = 0;
        Fd fd = fd_of(id, err);
        if (!fd) return;
        const int wd = ::inotify_add_watch(inotify.get(), proc_fd(fd->get()).c_str(), kWatchEvents);
        if (wd < 0) return;  // ENOSPC: the user's watches are spent; this folder's answers are short-lived
        std::lock_guard<std::mutex> l(mu);
        auto it = nodes.find(id);
        if (it == nodes.end() || it->second.wd >= 0) return;
        it->second.wd = wd;
        watches[wd] = id;
    }
    void unwatch_locked(Node& n) {
        if (n.wd < 0) return;
        watches.erase(n.wd);
        (void)::inotify_rm_watch(inotify.get(), n.wd);
        n.wd = -1;
    }

    // A notification to the kernel (unique 0, the code in the error field).
    void notify(int code, const void* a, std::size_t an, const void* b = nullptr, std::size_t bn = 0) {
        fuse_out_header h{};
        h.error = code;
        h.len = static_cast<std::uint32_t>(sizeof h + an + bn);
        iovec iov[3] = {{&h, sizeof h}, {const_cast<void*>(a), an}, {const_cast<void*>(b), bn}};
        // ENOENT: the kernel has nothing cached for it.
        (void)::writev(fuse.get(), iov, bn > 0 ? 3 : 2);
    }
    void forget_name(std::uint64_t parent, const std::string& host_name) {
        // The kernel knows a held HEAD by the sandbox's name for it.
        const std::string name = host_name == kHeldHead ? std::string("HEAD") : host_name;
        fuse_notify_inval_entry_out o{};
        o.parent = parent;
        o.namelen = static_cast<std::uint32_t>(name.size());
        // Expired, not dropped: the next walk through the name asks again (and is
        // judged again), but a process whose working directory it is keeps it (a
        // dropped one makes getcwd fail: `mkdir d && cd d && git init` raced the
        // notice of d's own creation).
        if (expire_only.load()) o.flags = FUSE_EXPIRE_ONLY;
        notify(FUSE_NOTIFY_INVAL_ENTRY, &o, sizeof o, name.c_str(), name.size() + 1);
    }
    void forget_attributes(std::uint64_t id) {
        fuse_notify_inval_inode_out o{};
        o.ino = id;
        o.off = -1;  // the attributes; a changed mtime drops the pages (FUSE_AUTO_INVAL_DATA)
        notify(FUSE_NOTIFY_INVAL_INODE, &o, sizeof o);
    }

    // One batch of inotify events: each name changed in a watched folder is dropped
    // from the kernel's caches where the kernel may hold it wrong. A name the sandbox
    // itself made or moved through the view is right in the kernel already, and is not
    // dropped: a folder it just made may be its working directory, which a dropped
    // entry would leave it unable to name (getcwd: ENOENT).
    void changed(const char* buf, std::size_t n) {
        using Name = std::pair<std::uint64_t, std::string>;
        std::set<Name> gone, arrived, files;
        std::set<std::uint64_t> inodes;
        bool overflow = false;
        {
            std::lock_guard<std::mutex> l(mu);
            for (std::size_t at = 0; at + sizeof(inotify_event) <= n;) {
                const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
                at += sizeof(inotify_event) + ev->len;
                if ((ev->mask & IN_Q_OVERFLOW) != 0) overflow = true;
                auto w = watches.find(ev->wd);
                if (w == watches.end()) continue;
                if ((ev->mask & IN_IGNORED) != 0) {
                    if (auto it = nodes.find(w->second); it != nodes.end()) it->second.wd = -1;
                    watches.erase(w);
                    continue;
                }
                const std::string name = ev->len > 0 ? std::string(ev->name) : std::string();
                if (name.empty()) {
                    if ((ev->mask & IN_ATTRIB) != 0) inodes.insert(w->second);
                } else if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) != 0) {
                    gone.insert({w->second, name});
                } else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
                    arrived.insert({w->second, name});
                } else {
                    files.insert({w->second, name});
                }
            }
            if (overflow) {
                // Changes were lost: every attribute (and so every listing) is asked
                // again, and every file's name; a folder's stays (it may be a working
                // directory inside), with its answer's lifetime as the net.
                for (const auto& [id, node] : nodes) {
                    if (node.text != nullptr) continue;
                    inodes.insert(id);
                    if (id != FUSE_ROOT_ID && !S_ISDIR(node.type)) gone.insert({node.parent, node.name});
                }
            }
        }
        for (const auto& [parent, name] : gone) {
            forget_name(parent, name);
            inodes.insert(parent);
        }
        for (const auto& [parent, name] : arrived) {
            if (gone.count({parent, name}) > 0) continue;
            // The inode now at the name: the one the kernel was given for that name
            // (the sandbox made or moved it there) or another (the host's).
            const At at = node_at(parent, name);
            if (at.node != 0 && at.parent == parent && at.name == name) continue;
            forget_name(parent, name);
            inodes.insert(parent);  // its listing, through its mtime
        }
        for (const auto& [parent, name] : files) {
            // The file's node, by its inode (a second name of it in another folder
            // is the same node).
            const At at = node_at(parent, name);
            if (!at.exists) forget_name(parent, name);
            else if (at.node != 0) inodes.insert(at.node);
        }
        for (std::uint64_t id : inodes) forget_attributes(id);
    }
    // What lies at `name` in the folder node `parent` on the host now: whether
    // anything does, the node of its inode if the kernel was given one, and the name
    // that node was last given.
    struct At {
        bool exists = false;
        std::uint64_t node = 0;
        std::uint64_t parent = 0;
        std::string name;
    };
    At node_at(std::uint64_t parent, const std::string& name) {
        At at;
        int err = 0;
        Fd dir = fd_of(parent, err);
        struct stat st {};
        if (!dir || ::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return at;
        at.exists = true;
        std::lock_guard<std::mutex> l(mu);
        if (auto k = by_inode.find({st.st_dev, st.st_ino}); k != by_inode.end()) {
            at.node = k->second;
            at.parent = nodes[k->second].parent;
            at.name = nodes[k->second].name;
        }
        return at;
    }
    // The next batch of inotify events into buf, when one is waiting: its size, or 0.
    std::size_t take_changes(std::span<char> buf) {
        if (!inotify) return 0;
        const ssize_t n = ::read(inotify.get(), buf.data(), std::min<std::size_t>(buf.size(), 65536));
        return n > 0 ? static_cast<std::size_t>(n) : 0;
    }

    void forget(std::uint64_t id, std::uint64_t n) {
        if (id == FUSE_ROOT_ID) return;
        std::lock_guard<std::mutex> l(mu);
        auto it = nodes.find(id);
        if (it == nodes.end()) return;
        it->second.nlookup = it->second.nlookup > n ? it->second.nlookup - n : 0;
        if (it->second.nlookup > 0 || it->second.text != nullptr) return;
        if (auto b = by_inode.find({it->second.dev, it->second.ino}); b != by_inode.end() && b->second == id)
            by_inode.erase(b);
        unhold_locked(it->second);
        unwatch_locked(it->second);
        nodes.erase(it);
    }

    // May the run make `name` in the directory `dir` (Ref)? 0 or an errno.
    int may_make(const Ref& dir, const char* name, bool is_dir, const char* what) {
        if (dir.text != nullptr) return ENOTDIR;
        if (dir.made) return 0;
        const std::string rel = join(dir.rel, name);
        if (dir.protect || rules->protects(rel, is_dir) || rules->files.count(rel) > 0) {
            event(false, rel, what);
            return EACCES;
        }
        return 0;
    }

    // The existing name `name` in `dir`, for an unlink or a rename's source or target:
    // 0, or an errno (EACCES for a protected one, ENOENT for a hidden one).
    int may_change(const Ref& dir, const char* name, const char* what, struct stat* out = nullptr) {
        if (dir.text != nullptr) return ENOTDIR;
        const std::string rel = join(dir.rel, name);
        struct stat st {};
        if (rules->files.count(rel) == 0) {
            if (::fstatat(dir.fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
            if (out != nullptr) *out = st;
        }
        const auto key = std::make_pair(st.st_dev, st.st_ino);
        bool held_protected = false;
        {
            std::lock_guard<std::mutex> l(mu);
            if (auto k = by_inode.find(key); k != by_inode.end()) held_protected = nodes[k->second].protect;
        }
        bool refuse = rules->files.count(rel) > 0 || held_protected;
        if (!refuse && !made_here(dir.fd, name, st)) {
            if (rules->hide_inodes.count(key)) return ENOENT;
            const auto v = rules->judge(rel, S_ISDIR(st.st_mode));
            if (v == Rules::Verdict::hidden) return ENOENT;
            refuse = v == Rules::Verdict::protect || (dir.protect && !dir.made);
        }
        if (!refuse) return 0;
        event(false, rel, what);
        return EACCES;
    }

    // Is a name a listing of `dir` found hidden? A file the run made never is.
    // A hard link of a hidden file is known by its inode number (the entry's, on the
    // directory's file system).
    bool hidden_in_listing(const Ref& dir, std::string_view name, unsigned char type, ino_t ino) {
        const std::string rel = join(dir.rel, name);
        if (rules->files.count(rel)) return false;
        if (type != DT_DIR && rules->hide_inodes.count({dir.dev, ino})) return true;
        if (!rules->hides(rel, type == DT_DIR)) return false;
        struct stat st {};
        const std::string n(name);
        return ::fstatat(dir.fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !made_here(dir.fd, n.c_str(), st);
    }

    // A directory the run did not make may move only when nothing below it is
    // protected or hidden: a rename would take those names out of their rules' reach
    // (`mv .git g; edit g/config; mv g .git`).
    int may_move_dir(int parent_fd, const char* name, const std::string& rel) {
        int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return errno;
        std::size_t seen = 0;
        int r = walk_clean(fd, rel, 0, seen);
        if (r == EXDEV) event(false, rel, "rename of a folder holding protected or hidden names");
        return r;
    }
    int walk_clean(int fd, const std::string& rel, int depth, std::size_t& seen) {
        DIR* d = ::fdopendir(fd);
        if (d == nullptr) {
            ::close(fd);
            return EXDEV;
        }
        int result = 0;
        while (dirent* e = ::readdir(d)) {
            if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
            if (++seen > kRenameWalkMax || depth > 64) {
                result = EXDEV;
                break;
            }
            const bool is_dir = e->d_type == DT_DIR;
            const std::string child = join(rel, e->d_name);
            if (rules->judge(child, is_dir) != Rules::Verdict::plain || rules->files.count(child)) {
                result = EXDEV;
                break;
            }
            if (e->d_type == DT_UNKNOWN) {
                result = EXDEV;
                break;
            }
            if (is_dir) {
                int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0 || (result = walk_clean(sub, child, depth + 1, seen)) != 0) {
                    if (result == 0) result = EXDEV;
                    break;
                }
            }
        }
        ::closedir(d);
        return result;
    }

    // A name the run made: remembered as the run's, and owned by whoever made it. The
    // server makes it with its own ids; when that is root serving a sandbox that runs
    // as another identity (a root launcher's run as the job's user), the file goes to
    // the maker's ids, as a write through a bind would have left it.
    void mark_made(int dir_fd, const char* name, const fuse_in_header& h) {
        struct stat st {};
        if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
        const std::uint32_t uid = across(h.uid, rules->uid), gid = across(h.gid, rules->gid);
        if (server_root && (st.st_uid != uid || st.st_gid != gid) && uid != kOverflowId && gid != kOverflowId)
            (void)::fchownat(dir_fd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
        const auto born = birth_of(dir_fd, name, 0, st.st_ino);
        if (!born) return;  // gone already: nothing of the run's to remember
        std::lock_guard<std::mutex> l(mu);
        made[{st.st_dev, st.st_ino}] = *born;
    }

    // --- the requests ---

    void handle(const fuse_in_header& h, const char* body, std::size_t size);
    void serve();
};

namespace {

// The request's argument of type T at the start of the body, or null when short.
template <class T>
const T* arg(const char* body, std::size_t size) {
    return size >= sizeof(T) ? reinterpret_cast<const T*>(body) : nullptr;
}

// A NUL-terminated name at body+off (within size), or null.
const char* name_at(const char* body, std::size_t size, std::size_t off) {
    if (off >= size) return nullptr;
    const void* nul = std::memchr(body + off, '\0', size - off);
    if (nul == nullptr || body + off == nul) return nullptr;
    const char* n = body + off;
    if (std::strchr(n, '/') != nullptr || std::strcmp(n, ".") == 0 || std::strcmp(n, "..") == 0) return nullptr;
    return n;
}

}  // namespace

void Server::State::handle(const fuse_in_header& h, const char* body, std::size_t size) {
    const std::uint64_t u = h.unique;
    switch (h.opcode) {
        case FUSE_INIT: {
            const auto* in = arg<fuse_init_in>(body, size);
            if (in == nullptr || in->major < 7) return reply(u, EPROTO);
            fuse_init_out out{};
            out.major = FUSE_KERNEL_VERSION;
            out.minor = std::min<std::uint32_t>(in->minor, FUSE_KERNEL_MINOR_VERSION);
            out.max_readahead = in->max_readahead;
            const std::uint32_t want = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_ATOMIC_O_TRUNC | FUSE_AUTO_INVAL_DATA |
                                       FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES | FUSE_CACHE_SYMLINKS;
            out.flags = in->flags & want;
            if ((in->flags & FUSE_INIT_EXT) != 0 && (in->flags2 & (FUSE_HAS_EXPIRE_ONLY >> 32)) != 0)
                expire_only.store(true);
            out.max_background = 64;
            out.congestion_threshold = 48;
            out.max_write = kMaxWrite;
            out.time_gran = 1;
            out.max_pages = static_cast<std::uint16_t>(kMaxWrite / 4096);
            // The reply's size is the one the kernel's minor version knows.
            return reply(u, 0, &out, out.minor < 5 ? FUSE_COMPAT_INIT_OUT_SIZE
                                     : out.minor < 23 ? FUSE_COMPAT_22_INIT_OUT_SIZE
                                                      : sizeof out);
        }
        case FUSE_DESTROY: return reply(u, 0);
        case FUSE_INTERRUPT: return;  // every request is answered promptly anyway
        case FUSE_LOOKUP: {
            const char* name = name_at(body, size, 0);
            if (name == nullptr) return reply(u, EINVAL);
            struct stat st {};
            int err = 0;
            std::uint64_t id = find(h.nodeid, name, st, err);
            if (id == 0) return reply(u, err);
            return reply_entry(u, id, st);
        }
        case FUSE_FORGET: {
            if (const auto* in = arg<fuse_forget_in>(body, size)) forget(h.nodeid, in->nlookup);
            return;  // no reply
        }
        case FUSE_BATCH_FORGET: {
            const auto* in = arg<fuse_batch_forget_in>(body, size);
            if (in == nullptr) return;
            const std::size_t n = std::min<std::size_t>(in->count, (size - sizeof *in) / sizeof(fuse_forget_one));
            const auto* one = reinterpret_cast<const fuse_forget_one*>(body + sizeof *in);
            for (std::size_t i = 0; i < n; ++i) forget(one[i].nodeid, one[i].nlookup);
            return;
        }
        case FUSE_GETATTR: {
            Ref r = ref(h.nodeid);
            if (!r.ok) return reply(u, r.err);
            fuse_attr_out out{};
            out.attr_valid = lifetime(h.nodeid);
            struct stat st {};
            if (r.text != nullptr)
                st = text_stat(h.nodeid, *r.text);
            else if (::fstatat(r.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
                return reply(u, errno);
            fill_attr(out.attr, st);
            return reply_struct(u, out);
        }
        case FUSE_SETATTR: {
            const auto* in = arg<fuse_setattr_in>(body, size);
            Ref r = ref(h.nodeid);
            if (in == nullptr || !r.ok) return reply(u, in == nullptr ? EINVAL : r.err);
            if (r.text != nullptr || r.protect) {
                event(false, r.rel, "change of its attributes");
                return reply(u, EACCES);
            }
            if (S_ISLNK(r.type)) return reply(u, EPERM);
            const std::string path = proc_fd(r.fd);
            // A descriptor the sandbox has open, where it has one: it is the file it opened.
            const int fh = (in->valid & FATTR_FH) != 0 ? static_cast<int>(in->fh) : -1;
            if ((in->valid & (FATTR_UID | FATTR_GID)) != 0) {
                struct stat st {};
                if (::fstatat(r.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return reply(u, errno);
                if (((in->valid & FATTR_UID) && in->uid != across(st.st_uid, rules->uid)) ||
                    ((in->valid & FATTR_GID) && in->gid != across(st.st_gid, rules->gid)))
                    return reply(u, EPERM);
            }
            if ((in->valid & FATTR_MODE) != 0 && ::chmod(path.c_str(), in->mode & 07777) != 0) return reply(u, errno);
            if ((in->valid & FATTR_SIZE) != 0) {
                if (!S_ISREG(r.type)) return reply(u, EINVAL);
                mark_wrote(r.dev, r.ino);
                int rc = fh >= 0 ? ::ftruncate(fh, static_cast<off_t>(in->size))
                                 : ::truncate(path.c_str(), static_cast<off_t>(in->size));
                if (rc != 0) return reply(u, errno);
            }
            if ((in->valid & (FATTR_ATIME | FATTR_MTIME)) != 0) {
                timespec ts[2];
                ts[0].tv_nsec = UTIME_OMIT;
                ts[1].tv_nsec = UTIME_OMIT;
                if (in->valid & FATTR_ATIME_NOW) ts[0].tv_nsec = UTIME_NOW;
                else if (in->valid & FATTR_ATIME) ts[0] = {static_cast<time_t>(in->atime), static_cast<long>(in->atimensec)};
                if (in->valid & FATTR_MTIME_NOW) ts[1].tv_nsec = UTIME_NOW;
                else if (in->valid & FATTR_MTIME) ts[1] = {static_cast<time_t>(in->mtime), static_cast<long>(in->mtimensec)};
                if (::utimensat(AT_FDCWD, path.c_str(), ts, 0) != 0) return reply(u, errno);
            }
            fuse_attr_out out{};
            out.attr_valid = lifetime(h.nodeid);
            struct stat st {};
            if (::fstatat(r.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return reply(u, errno);
            fill_attr(out.attr, st);
            return reply_struct(u, out);
        }
        case FUSE_READLINK: {
            Ref r = ref(h.nodeid);
            if (!r.ok || !S_ISLNK(r.type)) return reply(u, r.ok ? EINVAL : r.err);
            char buf[PATH_MAX];
            ssize_t n = ::readlinkat(r.fd, "", buf, sizeof buf);
            if (n < 0) return reply(u, errno);
            return reply(u, 0, buf, static_cast<std::size_t>(n));
        }
        case FUSE_MKNOD:
        case FUSE_MKDIR:
        case FUSE_SYMLINK:
        case FUSE_LINK: {
            Ref dir = ref(h.nodeid);
            if (!dir.ok) return reply(u, dir.err);
            const char* name = nullptr;
            const char* hn = nullptr;  // its name on the host (on_host)
            auto host_name_of = [&](const char* n) { return is_held(n) ? nullptr : on_host(dir, n, true); };
            int rc = 0;
            if (h.opcode == FUSE_MKNOD) {
                const auto* in = arg<fuse_mknod_in>(body, size);
                name = in ? name_at(body, size, sizeof *in) : nullptr;
                if (name == nullptr) return reply(u, EINVAL);
                const mode_t type = in->mode & S_IFMT;
                // No device node: the mount is nodev, and the host's would be real.
                if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK) return reply(u, EPERM);
                if ((hn = host_name_of(name)) == nullptr) return reply(u, EACCES);
                if (int e = may_make(dir, hn, false, "create")) return reply(u, e);
                rc = ::mknodat(dir.fd, hn, type | (in->mode & 07777 & ~in->umask), 0);
            } else if (h.opcode == FUSE_MKDIR) {
                const auto* in = arg<fuse_mkdir_in>(body, size);
                name = in ? name_at(body, size, sizeof *in) : nullptr;
                if (name == nullptr) return reply(u, EINVAL);
                if ((hn = host_name_of(name)) == nullptr) return reply(u, EACCES);
                if (int e = may_make(dir, hn, true, "create")) return reply(u, e);
                rc = ::mkdirat(dir.fd, hn, in->mode & 07777 & ~in->umask);
            } else if (h.opcode == FUSE_SYMLINK) {
                name = name_at(body, size, 0);
                if (name == nullptr) return reply(u, EINVAL);
                const std::size_t off = std::strlen(name) + 1;
                if (off >= size || std::memchr(body + off, '\0', size - off) == nullptr) return reply(u, EINVAL);
                const char* target = body + off;
                if ((hn = host_name_of(name)) == nullptr) return reply(u, EACCES);
                if (int e = may_make(dir, hn, false, "create")) return reply(u, e);
                rc = ::symlinkat(target, dir.fd, hn);
            } else {
                const auto* in = arg<fuse_link_in>(body, size);
                name = in ? name_at(body, size, sizeof *in) : nullptr;
                if (name == nullptr) return reply(u, EINVAL);
                Ref src = ref(in->oldnodeid);
                if (!src.ok) return reply(u, src.err);
                if (src.protect || src.text != nullptr) {
                    event(false, src.rel, "hard link");
                    return reply(u, EACCES);
                }
                if ((hn = host_name_of(name)) == nullptr) return reply(u, EACCES);
                if (int e = may_make(dir, hn, S_ISDIR(src.type), "create")) return reply(u, e);
                rc = ::linkat(src.fd, "", dir.fd, hn, AT_EMPTY_PATH);
                // Without CAP_DAC_READ_SEARCH, AT_EMPTY_PATH is refused: the magic link
                // names the same inode.
                if (rc != 0 && errno == ENOENT)
                    rc = ::linkat(AT_FDCWD, proc_fd(src.fd).c_str(), dir.fd, hn, AT_SYMLINK_FOLLOW);
                if (rc == 0) {
                    struct stat st {};
                    int err = 0;
                    std::uint64_t id = find(h.nodeid, name, st, err);
                    return id == 0 ? reply(u, err) : reply_entry(u, id, st);
                }
                return reply(u, errno);
            }
            if (rc != 0) return reply(u, errno);
            mark_made(dir.fd, hn, h);
            struct stat st {};
            int err = 0;
            std::uint64_t id = find(h.nodeid, name, st, err);
            return id == 0 ? reply(u, err) : reply_entry(u, id, st);
        }
        case FUSE_UNLINK:
        case FUSE_RMDIR: {
            const char* name = name_at(body, size, 0);
            Ref dir = ref(h.nodeid);
            if (name == nullptr || !dir.ok) return reply(u, name == nullptr ? EINVAL : dir.err);
            if (is_held(name)) return reply(u, ENOENT);
            name = on_host(dir, name, false);
            struct stat st {};
            if (int e = may_change(dir, name, "remove", &st)) return reply(u, e);
            if (::unlinkat(dir.fd, name, h.opcode == FUSE_RMDIR ? AT_REMOVEDIR : 0) != 0) return reply(u, errno);
            if (h.opcode == FUSE_RMDIR || st.st_nlink <= 1) released(st);
            return reply(u, 0);
        }
        case FUSE_RENAME:
        case FUSE_RENAME2: {
            std::uint64_t newdir = 0;
            unsigned flags = 0;
            std::size_t off = 0;
            if (h.opcode == FUSE_RENAME) {
                const auto* in = arg<fuse_rename_in>(body, size);
                if (in == nullptr) return reply(u, EINVAL);
                newdir = in->newdir;
                off = sizeof *in;
            } else {
                const auto* in = arg<fuse_rename2_in>(body, size);
                if (in == nullptr) return reply(u, EINVAL);
                newdir = in->newdir;
                flags = in->flags;
                off = sizeof *in;
            }
            const char* oldname = name_at(body, size, off);
            const char* newname = oldname ? name_at(body, size, off + std::strlen(oldname) + 1) : nullptr;
            Ref from = ref(h.nodeid);
            Ref to = ref(newdir);
            if (oldname == nullptr || newname == nullptr) return reply(u, EINVAL);
            if (!from.ok || !to.ok) return reply(u, !from.ok ? from.err : to.err);
            if (is_held(oldname) || is_held(newname)) return reply(u, ENOENT);
            // git moves HEAD.lock onto HEAD: the held name where the run's HEAD is held.
            oldname = on_host(from, oldname, false);
            newname = on_host(to, newname, (flags & RENAME_EXCHANGE) == 0);
            struct stat src {};
            if (int e = may_change(from, oldname, "rename", &src)) return reply(u, e);
            struct stat dst {};
            const bool target_exists = ::fstatat(to.fd, newname, &dst, AT_SYMLINK_NOFOLLOW) == 0;
            if (target_exists) {
                if (int e = may_change(to, newname, "replace")) return reply(u, e);
            } else if (int e = may_make(to, newname, S_ISDIR(src.st_mode), "rename onto")) {
                return reply(u, e);
            }
            // A folder the run did not make moves only when it holds no rule's name.
            if ((flags & RENAME_EXCHANGE) != 0 && target_exists && S_ISDIR(dst.st_mode) && !made_here(to.fd, newname, dst))
                if (int e = may_move_dir(to.fd, newname, join(to.rel, newname))) return reply(u, e);
            if (S_ISDIR(src.st_mode) && !made_here(from.fd, oldname, src))
                if (int e = may_move_dir(from.fd, oldname, join(from.rel, oldname))) return reply(u, e);
            // The node takes its new name before the rename, so that the host's event of
            // it finds the name the kernel is about to give it (changed()); back on failure.
            auto name_node = [&](std::uint64_t parent, const char* name) {
                std::lock_guard<std::mutex> l(mu);
                if (auto k = by_inode.find({src.st_dev, src.st_ino}); k != by_inode.end()) {
                    nodes[k->second].parent = parent;
                    nodes[k->second].name = name;
                }
            };
            name_node(newdir, newname);
            if (::renameat2(from.fd, oldname, to.fd, newname, flags) != 0) {
                const int e = errno;
                name_node(h.nodeid, oldname);
                return reply(u, e);
            }
            if (target_exists && (flags & RENAME_EXCHANGE) == 0 && (S_ISDIR(dst.st_mode) || dst.st_nlink <= 1)) released(dst);
            return reply(u, 0);
        }
        case FUSE_OPEN:
        case FUSE_OPENDIR: {
            const auto* in = arg<fuse_open_in>(body, size);
            Ref r = ref(h.nodeid);
            if (in == nullptr || !r.ok) return reply(u, in == nullptr ? EINVAL : r.err);
            fuse_open_out out{};
            if (r.text != nullptr) {
                if (h.opcode == FUSE_OPENDIR) return reply(u, ENOTDIR);
                if (write_access(in->flags)) {
                    event(false, r.rel, "open for writing");
                    return reply(u, EACCES);
                }
                out.fh = static_cast<std::uint64_t>(-1);
                out.open_flags = FOPEN_KEEP_CACHE;
                return reply_struct(u, out);
            }
            const bool dir = h.opcode == FUSE_OPENDIR;
            if (dir ? !S_ISDIR(r.type) : !S_ISREG(r.type)) return reply(u, dir ? ENOTDIR : EINVAL);
            // O_NOFOLLOW was the kernel's to honour (it resolved the name); here it would refuse
            // the magic link itself.
            int flags = static_cast<int>(in->flags) & ~(O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT | O_NOFOLLOW);
            if (dir) {
                flags = O_RDONLY | O_DIRECTORY;
            } else if (write_access(in->flags) && r.protect) {
                event(false, r.rel, "open for writing");
                return reply(u, EACCES);
            }
            if (!dir && write_access(in->flags)) mark_wrote(r.dev, r.ino);
            int fd = ::open(proc_fd(r.fd).c_str(), flags | O_CLOEXEC);
            if (fd < 0) return reply(u, errno);
            out.fh = static_cast<std::uint64_t>(fd);
            // The page cache is kept across opens; FUSE_AUTO_INVAL_DATA drops it when
            // the host changed the file (its mtime, seen at the next attribute refresh).
            // Listings too (already without the hidden names): the kernel lists again when
            // the folder's mtime moved, which a host change's notification makes it read.
            out.open_flags = dir ? FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE : FOPEN_KEEP_CACHE;
            return reply_struct(u, out);
        }
        case FUSE_READ: {
            const auto* in = arg<fuse_read_in>(body, size);
            if (in == nullptr) return reply(u, EINVAL);
            const std::size_t want = std::min<std::size_t>(in->size, kMaxWrite);
            if (static_cast<std::int64_t>(in->fh) == -1) {
                Ref r = ref(h.nodeid);
                if (!r.ok || r.text == nullptr) return reply(u, EBADF);
                const std::string& t = *r.text;
                if (in->offset >= t.size()) return reply(u, 0);
                return reply(u, 0, t.data() + in->offset, std::min<std::size_t>(want, t.size() - in->offset));
            }
            thread_local std::vector<char> buf;
            buf.resize(want);
            ssize_t n = ::pread(static_cast<int>(in->fh), buf.data(), want, static_cast<off_t>(in->offset));
            if (n < 0) return reply(u, errno);
            return reply(u, 0, buf.data(), static_cast<std::size_t>(n));
        }
        case FUSE_WRITE: {
            const auto* in = arg<fuse_write_in>(body, size);
            if (in == nullptr || size < sizeof *in + in->size) return reply(u, EINVAL);
            if (static_cast<std::int64_t>(in->fh) == -1) return reply(u, EBADF);
            ssize_t n = ::pwrite(static_cast<int>(in->fh), body + sizeof *in, in->size, static_cast<off_t>(in->offset));
            if (n < 0) return reply(u, errno);
            fuse_write_out out{};
            out.size = static_cast<std::uint32_t>(n);
            return reply_struct(u, out);
        }
        case FUSE_RELEASE:
        case FUSE_RELEASEDIR: {
            const auto* in = arg<fuse_release_in>(body, size);
            if (in != nullptr && static_cast<std::int64_t>(in->fh) != -1) ::close(static_cast<int>(in->fh));
            return reply(u, 0);
        }
        case FUSE_FLUSH: return reply(u, 0);
        case FUSE_FSYNC:
        case FUSE_FSYNCDIR: {
            const auto* in = arg<fuse_fsync_in>(body, size);
            if (in == nullptr || static_cast<std::int64_t>(in->fh) == -1) return reply(u, 0);
            int rc = (in->fsync_flags & 1) != 0 ? ::fdatasync(static_cast<int>(in->fh)) : ::fsync(static_cast<int>(in->fh));
            return reply(u, rc == 0 ? 0 : errno);
        }
        case FUSE_READDIR: {
            const auto* in = arg<fuse_read_in>(body, size);
            Ref r = ref(h.nodeid);
            if (in == nullptr || !r.ok) return reply(u, in == nullptr ? EINVAL : r.err);
            const int fd = static_cast<int>(in->fh);
            // Each call starts where the kernel says (the last entry's d_off it took).
            if (::lseek(fd, static_cast<off_t>(in->offset), SEEK_SET) < 0) return reply(u, errno);
            const std::size_t cap = std::min<std::size_t>(in->size, kMaxWrite);
            std::vector<char> out;
            out.reserve(cap);
            std::vector<char> raw(32768);
            for (bool full = false; !full;) {
                long n = ::syscall(SYS_getdents64, fd, raw.data(), raw.size());
                if (n < 0) return reply(u, errno);
                if (n == 0) break;
                for (long at = 0; at < n;) {
                    const auto* d = reinterpret_cast<const struct dirent64*>(raw.data() + at);
                    at += d->d_reclen;
                    std::string_view nm(d->d_name);
                    if (nm != "." && nm != ".." && hidden_in_listing(r, nm, d->d_type, d->d_ino)) continue;
                    // The run's held HEAD is its HEAD (and a host's HEAD beside it is not listed).
                    if (nm == "HEAD" && on_host(r, "HEAD", false) == kHeldHead) continue;
                    if (nm == kHeldHead) {
                        if (on_host(r, "HEAD", false) != kHeldHead) continue;
                        nm = "HEAD";
                    }
                    const std::size_t rec = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + nm.size());
                    if (out.size() + rec > cap) {
                        full = true;  // the next call starts at this entry
                        break;
                    }
                    const std::size_t base = out.size();
                    out.resize(base + rec, 0);
                    auto* e = reinterpret_cast<fuse_dirent*>(out.data() + base);
                    e->ino = d->d_ino;
                    e->off = static_cast<std::uint64_t>(d->d_off);
                    e->namelen = static_cast<std::uint32_t>(nm.size());
                    e->type = d->d_type;
                    std::memcpy(out.data() + base + FUSE_NAME_OFFSET, nm.data(), nm.size());
                }
            }
            return reply(u, 0, out.data(), out.size());
        }
        case FUSE_STATFS: {
            struct statfs sf {};
            Ref r = ref(FUSE_ROOT_ID);
            if (!r.ok || ::fstatfs(r.fd, &sf) != 0) return reply(u, r.ok ? errno : r.err);
            fuse_statfs_out out{};
            out.st.blocks = sf.f_blocks;
            out.st.bfree = sf.f_bfree;
            out.st.bavail = sf.f_bavail;
            out.st.files = sf.f_files;
            out.st.ffree = sf.f_ffree;
            out.st.bsize = static_cast<std::uint32_t>(sf.f_bsize);
            out.st.namelen = static_cast<std::uint32_t>(sf.f_namelen);
            out.st.frsize = static_cast<std::uint32_t>(sf.f_frsize);
            return reply_struct(u, out);
        }
        case FUSE_CREATE: {
            const auto* in = arg<fuse_create_in>(body, size);
            const char* name = in ? name_at(body, size, sizeof *in) : nullptr;
            Ref dir = ref(h.nodeid);
            if (name == nullptr || !dir.ok) return reply(u, name == nullptr ? EINVAL : dir.err);
            if (is_held(name)) return reply(u, EACCES);
            const char* sandbox_name = name;
            name = on_host(dir, name, true);
            // An existing name is opened as it is (O_CREAT without O_EXCL): the same
            // rules as an open.
            struct stat st {};
            const bool exists = ::fstatat(dir.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
            if (exists) {
                if (int e = may_change(dir, name, "open for writing")) {
                    // A hidden file is there: not made anew over it, and said so.
                    if (e == ENOENT) {
                        event(true, join(dir.rel, name), "create over it");
                        e = EACCES;
                    }
                    return reply(u, e);
                }
            } else if (int e = may_make(dir, name, false, "create")) {
                return reply(u, e);
            }
            const mode_t mode = in->mode & 07777 & ~in->umask;
            int fd = ::openat(dir.fd, name, static_cast<int>(in->flags) | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
            if (fd < 0) return reply(u, errno);
            if (!exists) mark_made(dir.fd, name, h);
            int err = 0;
            std::uint64_t id = find(h.nodeid, sandbox_name, st, err);
            if (id == 0) {
                ::close(fd);
                return reply(u, err);
            }
            if (write_access(in->flags)) mark_wrote(st.st_dev, st.st_ino);
            const fuse_entry_out e = entry(id, st);
            fuse_open_out o{};
            o.fh = static_cast<std::uint64_t>(fd);
            o.open_flags = FOPEN_KEEP_CACHE;
            return reply(u, 0, &e, sizeof e, &o, sizeof o);
        }
        case FUSE_FALLOCATE: {
            const auto* in = arg<fuse_fallocate_in>(body, size);
            if (in == nullptr || static_cast<std::int64_t>(in->fh) == -1) return reply(u, EINVAL);
            int rc = ::fallocate(static_cast<int>(in->fh), static_cast<int>(in->mode), static_cast<off_t>(in->offset),
                                 static_cast<off_t>(in->length));
            return reply(u, rc == 0 ? 0 : errno);
        }
        default:
            // xattrs, locks (the kernel keeps them locally), ioctl, poll, copy_file_range,
            // lseek, tmpfile, statx: the kernel falls back, or says it is not supported.
            return reply(u, ENOSYS);
    }
}

void Server::State::serve() {
    // The modes the sandbox asks for are final (the kernel took its umask off): this
    // thread's file-system attributes are its own, with no umask of the process's.
    if (::unshare(CLONE_FS) == 0) (void)::umask(0);
    // Not zeroed: a megabyte a thread that the kernel's writes fill as far as they go
    // (zeroing four of them was a few milliseconds of every run's start).
    const std::unique_ptr<char[]> storage(new char[kBufSize]);
    const std::span<char> buf(storage.get(), kBufSize);
    pollfd pf[3] = {{fuse.get(), POLLIN, 0}, {stop_fd.get(), POLLIN, 0}, {inotify ? inotify.get() : -1, POLLIN, 0}};
    unsigned turn = 0;
    while (!stopping.load()) {
        // One thread at a time waits for the kernel and the host's changes (the others
        // on the mutex, woken one by one): every thread polling would wake them all for
        // each request. The host's changes are taken when the kernel has nothing, and
        // every 32nd turn, so a busy sandbox does not starve them.
        ssize_t n = 0;
        std::size_t changes = 0;
        {
            std::lock_guard<std::mutex> one(reader);
            if (++turn % 32 == 0) changes = take_changes(buf);
            while (changes == 0 && (n = ::read(fuse.get(), buf.data(), buf.size())) < 0 && errno == EAGAIN) {
                if ((changes = take_changes(buf)) > 0) break;
                int pr = ::poll(pf, 3, -1);
                if (pr < 0 && errno == EINTR) continue;
                if (pr < 0 || (pf[1].revents & POLLIN) != 0) return;
                if ((pf[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && (pf[0].revents & POLLIN) == 0) return;
            }
        }
        if (changes > 0) {
            try {
                changed(buf.data(), changes);
            } catch (...) {
                // Out of memory for a batch: the answers' lifetimes still bound staleness.
            }
            continue;
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ENOENT) continue;
            return;  // ENODEV: the mount is gone
        }
        if (static_cast<std::size_t>(n) < sizeof(fuse_in_header)) continue;
        fuse_in_header h;
        std::memcpy(&h, buf.data(), sizeof h);
        if (h.len > static_cast<std::size_t>(n)) continue;
        std::size_t body = h.len - sizeof h;
        if (static_cast<std::size_t>(h.total_extlen) * 8 <= body) body -= static_cast<std::size_t>(h.total_extlen) * 8;
        try {
            handle(h, buf.data() + sizeof h, body);
        } catch (...) {
            if (h.opcode != FUSE_FORGET && h.opcode != FUSE_BATCH_FORGET && h.opcode != FUSE_INTERRUPT) reply(h.unique, EIO);
        }
    }
}

Server::Server(std::unique_ptr<State> s) : s_(std::move(s)) {}

Result<std::unique_ptr<Server>> Server::start(sys::UniqueFd fuse, sys::UniqueFd root, std::shared_ptr<const Rules> rules,
                                              int threads) {
    auto s = std::make_unique<State>();
    struct stat st {};
    if (::fstat(root.get(), &st) != 0 || !S_ISDIR(st.st_mode))
        return Error(ErrorKind::setup, ENOTDIR, "the view's root is not a directory");
    struct statfs sf {};
    if (::fstatfs(root.get(), &sf) != 0) sf.f_type = 0x6969;  // unknown: treated as remote
    int flags = ::fcntl(fuse.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fuse.get(), F_SETFL, flags | O_NONBLOCK) != 0)
        return util::errno_error(ErrorKind::setup, errno, "making the view's FUSE descriptor non-blocking");
    // A descriptor per file the sandbox has open, and a bounded cache of the inodes
    // it named: the soft limit goes up to the hard one, and the cache takes a quarter.
    struct rlimit nofile {};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0)
        s->held_max = std::clamp<std::size_t>(static_cast<std::size_t>(nofile.rlim_cur / 4), 64, 16384);
    s->stop_fd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!s->stop_fd) return util::errno_error(ErrorKind::setup, errno, "eventfd for the view");
    Node r;
    r.fd = std::make_shared<const sys::UniqueFd>(std::move(root));
    r.dev = st.st_dev;
    r.ino = st.st_ino;
    r.type = S_IFDIR;
    r.nlookup = 1;
    s->nodes.emplace(FUSE_ROOT_ID, std::move(r));
    s->by_inode.emplace(std::make_pair(st.st_dev, st.st_ino), FUSE_ROOT_ID);
    s->fuse = std::move(fuse);
    s->rules = std::move(rules);
    for (const auto& [rel, text] : s->rules->files) {
        Node t;
        t.type = S_IFREG;
        t.text = &text;
        t.protect = true;
        s->text_nodes.emplace(rel, s->next_id);
        s->nodes.emplace(s->next_id++, std::move(t));
    }
    s->inotify.reset(remote(sf) ? -1 : ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (s->inotify) {
        char text[32] = {};
        std::FILE* f = std::fopen("/proc/sys/fs/inotify/max_user_watches", "re");
        if (f != nullptr) {
            if (std::fgets(text, sizeof text, f) != nullptr)
                s->watch_max = std::min<std::size_t>(s->watch_max, std::strtoull(text, nullptr, 10) / 4);
            std::fclose(f);
        }
        s->watch(FUSE_ROOT_ID);
    }
    State* raw = s.get();
    for (int i = 0; i < std::max(1, threads); ++i) s->threads.emplace_back([raw] { raw->serve(); });
    return std::unique_ptr<Server>(new Server(std::move(s)));
}

void Server::stop() {
    if (!s_ || s_->stopping.exchange(true)) return;
    std::uint64_t one = 1;
    (void)::write(s_->stop_fd.get(), &one, sizeof one);
    for (auto& t : s_->threads)
        if (t.joinable()) t.join();
    std::lock_guard<std::mutex> l(s_->mu);
    s_->held.clear();
    s_->nodes.clear();
    s_->by_inode.clear();
}

Server::~Server() { stop(); }

bool Server::could_write(const std::string& rel, const std::vector<std::pair<dev_t, ino_t>>& chain) const {
    const Rules& r = *s_->rules;
    bool guarded = false;
    // The name itself and each folder on its way: a protected folder guards what is in it.
    for (std::size_t end = 0; !guarded && end != std::string::npos;) {
        end = rel.find('/', end + 1);
        const std::string part = rel.substr(0, end);
        const bool folder = end != std::string::npos;
        guarded = r.protect_exact.count(part) > 0 || r.files.count(part) > 0 || r.protects(part, folder);
    }
    if (!guarded) return true;
    std::lock_guard<std::mutex> l(s_->mu);
    // Written through a handle the sandbox held (the host then moved it over the
    // protected name), or made by the run, or below a folder the run made.
    if (!chain.empty() && s_->wrote.count(chain.front()) > 0) return true;
    return std::any_of(chain.begin(), chain.end(), [&](const auto& k) { return s_->made.count(k) > 0; });
}

RefusalTally Server::refusals() const {
    std::lock_guard<std::mutex> l(s_->mu);
    return s_->refused;
}

}  // namespace agentjail::view
