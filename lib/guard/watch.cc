// SPDX-License-Identifier: Apache-2.0
// The guard watcher and its helper. A hidden or protected name is a mount over a
// name; the host replacing that name (rename over it, unlink) detaches the mount in
// the sandbox's mount namespace (Linux >= 3.18), and the new file is then readable
// or writable inside. The watcher notices through inotify on the host directories,
// and a short-lived helper enters the sandbox's user and mount namespaces and puts
// the protection back on whatever the name now is; when it cannot, the run stops.
#include "guard/watch.hpp"

#include "base/time.hpp"

#include "sys/close_fds.hpp"
#include "sys/syscalls.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>
#include <ctime>

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

namespace agentjail::guard {

namespace {

constexpr std::uint32_t kEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                                  IN_MOVE_SELF;
constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// The record keeps the first re-applications; the count has them all.
constexpr size_t kKeep = 64;
// A helper that does not finish (a hung file system on the way) stops the run.
constexpr int kHelperTimeoutMs = 5000;

// What the helper saw, written once to its pipe.
struct HelperReport {
    std::int32_t code;   // 0 in place, 1 re-applied, 2 gone inside, 3 another inode; -1 failed
    std::int32_t stage;  // index into kStages
    std::int32_t err;
};

const char* const kStages[] = {
    "entering the sandbox's namespaces", "opening the sandbox's root", "opening the name inside the sandbox",
    "looking at the name inside the sandbox", "cloning the new file", "making the clone read-only",
    "making a tmpfs for the mask", "making the mask file", "attaching the protection", "running the helper",
};

struct HelperSpec {
    int userns = -1;
    int mntns = -1;
    int report_fd = -1;
    int freeze_fd = -1;         // the sandbox's freezer.state, or -1
    const char* rel = nullptr;  // the name inside, without the leading '/'
    bool hidden = true;
    bool have_ino = false;  // protected: the inode the host has at the name now
    dev_t dev = 0;
    ino_t ino = 0;
};

void write_state(int fd, const char* state) {
    if (fd >= 0) (void)!::write(fd, state, std::strlen(state));
}

[[noreturn]] void helper_exit(const HelperSpec& s, int code, int stage, int err) {
    // The sandbox goes on whatever became of agentjail meanwhile: killed while the
    // sandbox was frozen, it could not thaw it, and a frozen init never ends.
    write_state(s.freeze_fd, "THAWED");
    HelperReport r{code, stage, err};
    (void)!::write(s.report_fd, &r, sizeof r);
    ::_exit(0);
}

// The helper, after clone: a single-threaded copy of the supervisor, raw system
// calls only over memory the parent prepared (the host may be multi-threaded).
[[noreturn]] void helper_main(const HelperSpec& s) {
    // Nothing of the sandbox runs while the name is looked at and protected again
    // (written before setns: the descriptor was opened on the host).
    write_state(s.freeze_fd, "FROZEN");
    // A test holds the helper here, the sandbox frozen, and kills agentjail.
    (void)fault::hit("guard.frozen");
    // The user namespace first: it gives the capabilities over the mount namespace.
    if (::setns(s.userns, CLONE_NEWUSER) < 0) helper_exit(s, -1, 0, errno);
    if (::setns(s.mntns, CLONE_NEWNS) < 0) helper_exit(s, -1, 0, errno);
    // setns into a mount namespace puts our root at its root: the sandbox's "/".
    int root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) helper_exit(s, -1, 1, errno);
    // Never through a link: the sandbox may have planted one on the way.
    int target = sys::openat2(root, s.rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, kBeneath);
    if (target == -ENOENT) helper_exit(s, 2, 2, ENOENT);
    if (target < 0) helper_exit(s, -1, 2, -target);
    struct statx stx {};
    if (::syscall(SYS_statx, target, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO, &stx) < 0)
        helper_exit(s, -1, 3, errno);
    // Still a mount point: the protection is in place (nothing in the sandbox can mount).
    if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0)
        helper_exit(s, 0, 0, 0);
    if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) == 0) helper_exit(s, -1, 3, ENOSYS);
    const bool is_dir = S_ISDIR(stx.stx_mode);
    if (!is_dir && !S_ISREG(stx.stx_mode) && !S_ISSOCK(stx.stx_mode)) helper_exit(s, -1, 3, EINVAL);
    int tree = -1;
    const unsigned attach_flags = MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH;
    if (!s.hidden) {
        // What the sandbox sees at the name must be what the host put there: had the
        // sandbox swapped in a file of its own meanwhile, binding that read-only would
        // protect the wrong one.
        if (!s.have_ino || makedev(stx.stx_dev_major, stx.stx_dev_minor) != s.dev || stx.stx_ino != s.ino)
            helper_exit(s, 3, 3, ESTALE);
        tree = sys::open_tree(target, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (tree < 0) helper_exit(s, -1, 4, -tree);
        sys::MountAttr a{MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0};
        int r = sys::mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a);
        if (r < 0) helper_exit(s, -1, 5, -r);
    } else {
        int fsfd = sys::fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fsfd < 0) helper_exit(s, -1, 6, -fsfd);
        int r = sys::fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", "0000", 0);
        if (r >= 0) r = sys::fsconfig(fsfd, FSCONFIG_SET_STRING, "size", "4k", 0);
        if (r >= 0) r = sys::fsconfig(fsfd, FSCONFIG_SET_STRING, "nr_inodes", "2", 0);
        if (r >= 0) r = sys::fsconfig(fsfd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0);
        if (r < 0) helper_exit(s, -1, 6, -r);
        const unsigned ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
        // A directory gets the empty tmpfs itself, read-only from the start; a file
        // gets an empty mode-000 file cloned out of a writable one.
        int mnt = sys::fsmount(fsfd, FSMOUNT_CLOEXEC, is_dir ? ro : 0);
        if (mnt < 0) helper_exit(s, -1, 6, -mnt);
        if (is_dir) {
            tree = mnt;
        } else {
            int f = ::openat(mnt, "mask", O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0000);
            if (f < 0) helper_exit(s, -1, 7, errno);
            ::close(f);
            tree = sys::open_tree(mnt, "mask", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
            if (tree < 0) helper_exit(s, -1, 7, -tree);
            sys::MountAttr a{ro, 0, 0, 0};
            r = sys::mount_setattr(tree, "", AT_EMPTY_PATH, &a);
            if (r < 0) helper_exit(s, -1, 5, -r);
        }
    }
    int r = sys::move_mount(tree, "", target, "", attach_flags);
    // ENOENT: the name was replaced again since we opened it (its dentry is gone).
    if (r == -ENOENT) helper_exit(s, 3, 8, ENOENT);
    if (r < 0) helper_exit(s, -1, 8, -r);
    helper_exit(s, 1, 0, 0);
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string dirname_of(const std::string& p) {
    auto slash = p.rfind('/');
    if (slash == std::string::npos || slash == 0) return "/";
    return p.substr(0, slash);
}

const char* why_of(std::uint32_t mask) {
    if (mask & IN_MOVED_TO) return "replaced";
    if (mask & IN_CREATE) return "created";
    if (mask & IN_DELETE) return "removed";
    if (mask & IN_MOVED_FROM) return "moved away";
    return "its directory was moved or removed";
}

}  // namespace

Result<std::unique_ptr<Watch>> Watch::create(const plan::Plan& plan) {
    if (plan.guards.empty()) return std::unique_ptr<Watch>();
    std::unique_ptr<Watch> w(new Watch());
    w->inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!w->inotify_)
        return Error(ErrorKind::setup, errno,
                     "inotify: " + util::errno_text(errno) +
                         " (agentjail watches the workspace's hidden and protected names for the run and will "
                         "not run without it; raise fs.inotify.max_user_instances)");
    for (const auto& g : plan.guards) {
        Item it;
        it.guard = g;
        it.root = guard::guard_root(plan, g.host);
        it.parent = dirname_of(g.host);
        it.name = g.host.substr(g.host.rfind('/') + 1);
        if (it.root.empty()) it.root = it.parent;
        w->items_.push_back(std::move(it));
    }
    for (size_t i = 0; i < w->items_.size(); ++i) {
        Item& it = w->items_[i];
        // Guards mostly share a directory (the workspace's top): one watch each,
        // taken over from an earlier guard when it is the same directory (at the
        // start only: later a name may stand for another directory).
        auto same = std::find_if(w->items_.begin(), w->items_.begin() + static_cast<std::ptrdiff_t>(i),
                                 [&](const Item& o) { return o.wd >= 0 && o.watched == it.parent; });
        if (same != w->items_.begin() + static_cast<std::ptrdiff_t>(i)) {
            it.watched = same->watched;
            it.wd = same->wd;
            continue;
        }
        w->watch(it);
        if (it.wd < 0)
            return Error(ErrorKind::setup, errno,
                         "inotify: watching " + it.parent + ": " + util::errno_text(errno) +
                             " (raise fs.inotify.max_user_watches)");
    }
    return w;
}

namespace {

// What the holder of the last references needs, on its own stack.
struct Holder {
    int hold = -1;  // read end: EOF once the supervisor closed its copies
    int keep[4] = {-1, -1, -1, -1};
    std::uint8_t* grand_stack = nullptr;
    size_t stack_size = 0;
    // 1 while the holder may still use the region (set before it is cloned); the
    // kernel writes 0 there when the holder exits (CLONE_CHILD_CLEARTID), or the
    // spawner does when the holder could not be started.
    pid_t* busy = nullptr;
};

// The holders' stack regions (they share our memory): each is unmapped by a later
// Watch once its holder is gone, so the regions in use are those of holders
// still running, not one per run ever made (it used to be 32 KiB a run, for good).
struct HolderStacks {
    std::mutex lock;
    std::vector<std::pair<void*, size_t>> regions;  // busy word at the start of each

    // Unmaps the regions of holders that exited.
    void reap() {
        std::lock_guard<std::mutex> g(lock);
        auto done = [](const std::pair<void*, size_t>& r) {
            if (__atomic_load_n(static_cast<pid_t*>(r.first), __ATOMIC_ACQUIRE) != 0) return false;
            ::munmap(r.first, r.second);
            return true;
        };
        regions.erase(std::remove_if(regions.begin(), regions.end(), done), regions.end());
    }
    void add(void* mem, size_t len) {
        std::lock_guard<std::mutex> g(lock);
        regions.emplace_back(mem, len);
    }
};
HolderStacks& holder_stacks() {
    static HolderStacks* s = new HolderStacks();  // never destroyed: holders may outlive exit handlers
    return *s;
}

int holder_main(void* arg) {
    // The grandchild: nothing else of ours (a caller waiting for EOF on our stdout
    // must not wait for it); waits until we closed ours, then closes the last.
    Holder h = *static_cast<const Holder*>(arg);
    sys::close_all_but(h.keep, 4);
    char c;
    while (::read(h.hold, &c, 1) < 0 && errno == EINTR) {
    }
    ::syscall(SYS_exit, 0);  // this task only
    return 0;
}

int spawner_main(void* arg) {
    // The intermediate child: starts the holder and exits, so init adopts the holder.
    auto* h = static_cast<Holder*>(arg);
    if (::clone(holder_main, h->grand_stack + h->stack_size, CLONE_VM | CLONE_CHILD_CLEARTID | SIGCHLD, h,
                nullptr, nullptr, h->busy) < 0)
        __atomic_store_n(h->busy, 0, __ATOMIC_RELEASE);  // no holder: the region is free
    ::syscall(SYS_exit, 0);
    return 0;
}

}  // namespace

// Closing an inotify instance that has marks waits for an SRCU grace period (the
// kernel's fsnotify_destroy_group: 3 to 20 ms on a loaded machine), and dropping the
// last handle on the sandbox's mount namespace unmounts its whole tree. Neither is
// the run's business: an orphaned process adopted by init takes the last references
// and drops them off the critical path. It shares our memory (CLONE_VM: no page
// tables to copy, which would cost more than it saves) and touches only its own
// small stack, which stays mapped until it has exited (HolderStacks). Raw system
// calls only in the children: the host may be multi-threaded.
Watch::~Watch() {
    if (!inotify_ && !userns_ && !mntns_) return;
    holder_stacks().reap();
    int hold[2];
    if (::pipe2(hold, O_CLOEXEC) != 0) return;  // then the members close them here
    constexpr size_t kStack = 16 * 1024;
    void* mem = ::mmap(nullptr, 2 * kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (mem == MAP_FAILED) {
        ::close(hold[0]);
        ::close(hold[1]);
        return;
    }
    auto* stacks = static_cast<std::uint8_t*>(mem);
    // The busy word sits at the bottom of the spawner's stack, which never grows
    // that far (it makes one call); fresh anonymous memory, so only this sets it.
    auto* busy = reinterpret_cast<pid_t*>(stacks);
    *busy = 1;
    // The holder's copy of what it needs lives on its own stack region, not ours.
    auto* h = new (stacks + 2 * kStack - sizeof(Holder) - 64) Holder();
    h->hold = hold[0];
    int keep[4] = {hold[0], inotify_.get(), userns_.get(), mntns_.get()};
    std::sort(keep, keep + 4);
    std::copy(keep, keep + 4, h->keep);
    h->grand_stack = stacks + kStack;
    h->stack_size = kStack - sizeof(Holder) - 128;
    h->busy = busy;
    // CLONE_VFORK: we go on once the spawner exited, the holder started.
    long pid = ::clone(spawner_main, stacks + kStack, CLONE_VM | CLONE_VFORK, h);
    ::close(hold[0]);
    if (pid > 0) {
        int st = 0;
        while (::waitpid(static_cast<pid_t>(pid), &st, __WALL) < 0 && errno == EINTR) {
        }
        try {
            holder_stacks().add(mem, 2 * kStack);
        } catch (...) {  // no memory to remember it: it stays mapped, as it always did
        }
    } else {
        ::munmap(mem, 2 * kStack);
    }
    // No longer the last references (when the holder started): cheap. Then it goes.
    inotify_.reset();
    userns_.reset();
    mntns_.reset();
    ::close(hold[1]);
}

Result<void> Watch::attach(pid_t init, int freeze_fd) {
    const std::string ns = "/proc/" + std::to_string(init) + "/ns/";
    userns_.reset(::open((ns + "user").c_str(), O_RDONLY | O_CLOEXEC));
    mntns_.reset(::open((ns + "mnt").c_str(), O_RDONLY | O_CLOEXEC));
    if (!userns_ || !mntns_)
        return util::errno_error(ErrorKind::setup, errno, "opening the sandbox's namespaces for the guard watch");
    freeze_fd_ = freeze_fd;
    return {};
}

void Watch::watch(Item& it) {
    // The deepest directory that exists on the way from the guard's root to its
    // parent: a parent the host moved away is noticed when it comes back.
    std::string p = it.parent;
    for (;;) {
        int wd = ::inotify_add_watch(inotify_.get(), p.c_str(), kEvents | IN_ONLYDIR | IN_DONT_FOLLOW);
        if (wd >= 0) {
            it.watched = p;
            it.wd = wd;
            return;
        }
        if ((errno != ENOENT && errno != ENOTDIR) || p == it.root || p == "/") break;
        p = dirname_of(p);
    }
    it.wd = -1;
}

void Watch::mark(int wd, const char* name, std::uint32_t mask) {
    for (auto& it : items_) {
        if (it.wd != wd) continue;
        if (mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
            it.dirty = "its directory was moved or removed";
            continue;
        }
        if (name == nullptr || *name == '\0') continue;
        if (it.watched == it.parent) {
            if (it.name == name) it.dirty = why_of(mask);
            continue;
        }
        // Waiting for a missing parent: the next component below what is watched.
        std::string rest = it.parent.substr(it.watched == "/" ? 1 : it.watched.size() + 1);
        if (rest.substr(0, rest.find('/')) == name) it.dirty = "its directory came back";
    }
}

int Watch::run_helper(const Item& it, bool, bool have_ino, dev_t dev, ino_t ino, const char** stage) {
    *stage = kStages[9];
    int rp[2];
    if (::pipe2(rp, O_CLOEXEC) < 0) return -errno;
    sys::UniqueFd rd(rp[0]), wr(rp[1]);
    HelperSpec s;
    s.userns = userns_.get();
    s.mntns = mntns_.get();
    s.report_fd = wr.get();
    s.freeze_fd = freeze_fd_;
    std::string rel = it.guard.inside.size() > 1 ? it.guard.inside.substr(1) : std::string(".");
    s.rel = rel.c_str();
    s.hidden = it.guard.kind == plan::Guard::Kind::hidden;
    s.have_ino = have_ino;
    s.dev = dev;
    s.ino = ino;
    int hpidfd = -1;
    sys::CloneArgs args{};
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uint64_t>(&hpidfd);
    args.exit_signal = 0;  // nobody's waitpid(-1) can take its status; we wait on the pidfd
    long pid = sys::clone3(&args);
    if (pid == 0) helper_main(s);
    if (pid < 0) return static_cast<int>(pid);
    sys::UniqueFd hp(hpidfd);
    wr.reset();
    pollfd p{hp.get(), POLLIN, 0};
    int n;
    do {
        n = ::poll(&p, 1, kHelperTimeoutMs);
    } while (n < 0 && errno == EINTR);
    if (n == 0) sys::pidfd_send_signal(hp.get(), SIGKILL);
    siginfo_t si{};
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(hp.get()), &si, WEXITED | __WALL) < 0 &&
           errno == EINTR) {
    }
    if (n == 0) return -ETIMEDOUT;
    HelperReport r{};
    if (::read(rd.get(), &r, sizeof r) != static_cast<ssize_t>(sizeof r)) return -EPIPE;
    if (r.stage >= 0 && r.stage < static_cast<int>(sizeof kStages / sizeof *kStages)) *stage = kStages[r.stage];
    if (r.code < 0) return -(r.err != 0 ? r.err : EIO);
    return r.code;
}

bool Watch::check(Item& it, const char* why) {
    const double t0 = now_ms();
    const std::string when = base::iso8601_now();
    const bool hidden = it.guard.kind == plan::Guard::Kind::hidden;
    auto fail = [&](const std::string& what) {
        stopped_ = "the host changed " + it.guard.host + " (" + why + ") during the run and its " +
                   (hidden ? "mask" : "read-only bind") + " could not be re-applied: " + what +
                   "; the run was stopped";
        return false;
    };
    for (int attempt = 0;; ++attempt) {
        // What the host has at the name now, reached without following links.
        bool have = false;
        bool is_dir = it.guard.is_dir;
        struct stat st {};
        std::string rel = it.parent == it.root ? "." : it.parent.substr(it.root == "/" ? 1 : it.root.size() + 1);
        int r = sys::openat2(AT_FDCWD, it.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                             RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
        sys::UniqueFd rootfd(r >= 0 ? r : -1);
        int pfd = rootfd ? sys::openat2(rootfd.get(), rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, kBeneath) : r;
        sys::UniqueFd parent(pfd >= 0 ? pfd : -1);
        if (parent && ::fstatat(parent.get(), it.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISLNK(st.st_mode)) return fail("the name is now a symbolic link");
            have = true;
            is_dir = S_ISDIR(st.st_mode);
        } else if (!hidden && parent && errno == ENOENT) {
            // A protected name the host removed: the sandbox must not create it in
            // its place, so it gets a placeholder again (removed after the run).
            auto p = guard::create_placeholder(it.root, it.guard.host, it.guard.is_dir, it.guard.socket);
            if (p) {
                have = true;
                is_dir = p->is_dir;
                st.st_dev = p->dev;
                st.st_ino = p->ino;
                journal_.add(*p, it.root);
                made_.adopt(std::move(*p), it.root);
            }
        }
        if (!have) return true;  // nothing at the name (or no parent): nothing to hide
        const char* stage = nullptr;
        int res = fault::hit("guard.reapply")
                      ? -EIO
                      : run_helper(it, is_dir, have, st.st_dev, st.st_ino, &stage);
        // The helper thawed the sandbox as it ended; one it could not end (killed,
        // timed out) did not.
        write_state(freeze_fd_, "THAWED");
        if (res == 0 || res == 2) return true;
        if (res == 3) {
            // The name changed again between our look and the helper's: look again.
            // A name that keeps changing is looked at again on the event its next
            // change queues (inotify reports every one, or overflows: then all are).
            if (attempt < 3) continue;
            it.dirty = why;
            return true;
        }
        if (res < 0) return fail(std::string(stage) + ": " + util::errno_text(-res));
        ++count_;
        if (reapplied_.size() < kKeep) {
            WorkspaceReapplied w;
            w.name = it.guard.host;
            w.why = why;
            w.action = hidden ? "mask" : "read-only bind";
            w.when = when;
            w.window_ms = now_ms() - t0;
            reapplied_.push_back(std::move(w));
        }
        return true;
    }
}

bool Watch::handle() {
    alignas(inotify_event) char buf[8192];
    bool overflow = false;
    for (;;) {
        ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (char* p = buf; p < buf + n;) {
            auto* ev = reinterpret_cast<inotify_event*>(p);
            if (ev->mask & IN_Q_OVERFLOW)
                overflow = true;
            else
                mark(ev->wd, ev->len ? ev->name : nullptr, ev->mask);
            p += sizeof(inotify_event) + ev->len;
        }
    }
    if (overflow)
        for (auto& it : items_) it.dirty = "the event queue overflowed";
    // Each guard once per wake-up, however many events named it: a flood costs one
    // check per guard, never one per event.
    for (auto& it : items_) {
        if (it.dirty == nullptr) continue;
        const char* why = it.dirty;
        it.dirty = nullptr;
        if (it.watched != it.parent || std::strcmp(why, "its directory was moved or removed") == 0) watch(it);
        if (!check(it, why)) return false;
    }
    return true;
}

bool Watch::check_all(const char* why) {
    for (auto& it : items_)
        if (!check(it, why)) return false;
    return true;
}

void Watch::finish(WorkspaceOutcome& out, bool release_namespaces, guard::Placeholders& made) {
    if (release_namespaces || !made_.empty()) {
        userns_.reset();
        mntns_.reset();
    }
    for (auto& r : reapplied_) out.reapplied.push_back(std::move(r));
    reapplied_.clear();
    out.reapplied_count += count_;
    if (!stopped_.empty()) out.stopped = stopped_;
    made.absorb(std::move(made_));
}

}  // namespace agentjail::guard
