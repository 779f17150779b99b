// SPDX-License-Identifier: Apache-2.0
// The systemd route to a delegated cgroup v2: an ordinary user whose own cgroup is
// not delegated asks the user's systemd manager (sd-bus, as `systemctl --user` and
// `systemd-run --user --scope` talk to it) for a transient scope with Delegate=yes,
// holds it with a placeholder process, and makes the run's group below it.
#include "cgroup/internal.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace agentjail::cgroup::detail {

namespace {

constexpr auto job_timeout = std::chrono::seconds(15);

// libsystemd is opened only when this route is taken: linked as usual, it and the six
// libraries it pulls in (gcrypt, lzma, zstd, lz4...) cost every run about 1.4 ms of
// loading before main(), for a route most runs never take.
struct SdBus {
    decltype(&::sd_bus_call) sd_bus_call = nullptr;
    decltype(&::sd_bus_call_method) sd_bus_call_method = nullptr;
    decltype(&::sd_bus_error_free) sd_bus_error_free = nullptr;
    decltype(&::sd_bus_error_is_set) sd_bus_error_is_set = nullptr;
    decltype(&::sd_bus_flush_close_unref) sd_bus_flush_close_unref = nullptr;
    decltype(&::sd_bus_get_fd) sd_bus_get_fd = nullptr;
    decltype(&::sd_bus_is_bus_client) sd_bus_is_bus_client = nullptr;
    decltype(&::sd_bus_match_signal) sd_bus_match_signal = nullptr;
    decltype(&::sd_bus_message_append) sd_bus_message_append = nullptr;
    decltype(&::sd_bus_message_close_container) sd_bus_message_close_container = nullptr;
    decltype(&::sd_bus_message_new_method_call) sd_bus_message_new_method_call = nullptr;
    decltype(&::sd_bus_message_open_container) sd_bus_message_open_container = nullptr;
    decltype(&::sd_bus_message_read) sd_bus_message_read = nullptr;
    decltype(&::sd_bus_message_unref) sd_bus_message_unref = nullptr;
    decltype(&::sd_bus_new) sd_bus_new = nullptr;
    decltype(&::sd_bus_open_user) sd_bus_open_user = nullptr;
    decltype(&::sd_bus_process) sd_bus_process = nullptr;
    decltype(&::sd_bus_set_address) sd_bus_set_address = nullptr;
    decltype(&::sd_bus_set_bus_client) sd_bus_set_bus_client = nullptr;
    decltype(&::sd_bus_slot_unref) sd_bus_slot_unref = nullptr;
    decltype(&::sd_bus_start) sd_bus_start = nullptr;
    decltype(&::sd_bus_wait) sd_bus_wait = nullptr;
};

SdBus loaded_api;

// Loads the sd-bus functions once; false (and why) when libsystemd is not there.
bool load_sd_bus(std::string& why) {
    static std::string error;
    static const bool ok = [] {
        void* h = ::dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) {
            const char* e = ::dlerror();
            error = std::string("libsystemd.so.0 cannot be loaded (") + (e ? e : "?") +
                    "): install libsystemd0";
            return false;
        }
        SdBus a;
        bool all = true;
        auto get = [&](auto& fn, const char* name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
            if (fn == nullptr) {
                all = false;
                error = std::string("libsystemd.so.0 has no ") + name;
            }
        };
        get(a.sd_bus_call, "sd_bus_call");
        get(a.sd_bus_call_method, "sd_bus_call_method");
        get(a.sd_bus_error_free, "sd_bus_error_free");
        get(a.sd_bus_error_is_set, "sd_bus_error_is_set");
        get(a.sd_bus_flush_close_unref, "sd_bus_flush_close_unref");
        get(a.sd_bus_get_fd, "sd_bus_get_fd");
        get(a.sd_bus_is_bus_client, "sd_bus_is_bus_client");
        get(a.sd_bus_match_signal, "sd_bus_match_signal");
        get(a.sd_bus_message_append, "sd_bus_message_append");
        get(a.sd_bus_message_close_container, "sd_bus_message_close_container");
        get(a.sd_bus_message_new_method_call, "sd_bus_message_new_method_call");
        get(a.sd_bus_message_open_container, "sd_bus_message_open_container");
        get(a.sd_bus_message_read, "sd_bus_message_read");
        get(a.sd_bus_message_unref, "sd_bus_message_unref");
        get(a.sd_bus_new, "sd_bus_new");
        get(a.sd_bus_open_user, "sd_bus_open_user");
        get(a.sd_bus_process, "sd_bus_process");
        get(a.sd_bus_set_address, "sd_bus_set_address");
        get(a.sd_bus_set_bus_client, "sd_bus_set_bus_client");
        get(a.sd_bus_slot_unref, "sd_bus_slot_unref");
        get(a.sd_bus_start, "sd_bus_start");
        get(a.sd_bus_wait, "sd_bus_wait");
        if (all) loaded_api = a;
        return all;
    }();
    if (!ok) why = error;
    return ok;
}

// The loaded functions; only called after load_sd_bus() returned true.
const SdBus& sd() { return loaded_api; }


std::string bus_error_text(int r, const sd_bus_error* e) {
    if (e && sd().sd_bus_error_is_set(e) && e->message) return e->message;
    return util::errno_text(-r);
}

// D-Bus addresses escape every byte outside a small safe set as %hh.
std::string address_escape(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            c == '-' || c == '_' || c == '/' || c == '.' || c == '\\' || c == '*') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02x", c);
            out += buf;
        }
    }
    return out;
}

struct BusDeleter {
    void operator()(sd_bus* b) const noexcept { sd().sd_bus_flush_close_unref(b); }
};
using BusPtr = std::unique_ptr<sd_bus, BusDeleter>;

// The directory of the user's runtime files: $XDG_RUNTIME_DIR, else /run/user/UID
// (su and sudo -u often drop the variable; the directory is the same one).
std::string runtime_dir() {
    const char* x = std::getenv("XDG_RUNTIME_DIR");
    if (x && x[0] == '/') return x;
    return "/run/user/" + std::to_string(::geteuid());
}

// The manager's peer must be us or root: the private socket lives in a directory only
// we (and root) can write, but a stale or planted socket must not steer our cgroup.
// (Whatever it answers, the kernel's delegation rules still bound what we get.)
bool peer_is_trusted(sd_bus* bus) {
    int fd = sd().sd_bus_get_fd(bus);
    if (fd < 0) return false;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return true;  // not a socket we can ask
    return cred.uid == ::geteuid() || cred.uid == 0;
}

// Connects to the user's systemd manager as `systemctl --user` does: its private
// socket first (no bus daemon needed), then the user bus.
BusPtr connect_user_manager(std::string& via, std::string& why_not) {
    std::string dir = runtime_dir();
    std::string priv = dir + "/systemd/private";
    std::string tried;
    struct stat st {};
    if (::stat(priv.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        sd_bus* raw = nullptr;
        int r = sd().sd_bus_new(&raw);
        BusPtr bus(raw);
        if (r >= 0) r = sd().sd_bus_set_address(bus.get(), ("unix:path=" + address_escape(priv)).c_str());
        if (r >= 0) r = sd().sd_bus_start(bus.get());
        if (r >= 0 && peer_is_trusted(bus.get())) {
            via = priv;
            return bus;
        }
        tried = priv + ": " + (r < 0 ? util::errno_text(-r) : std::string("its peer is neither you nor root"));
    } else {
        tried = "no " + priv;
    }
    // The user bus: $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus.
    sd_bus* raw = nullptr;
    int r;
    const char* addr = std::getenv("DBUS_SESSION_BUS_ADDRESS");
    if ((addr && *addr) || std::getenv("XDG_RUNTIME_DIR")) {
        r = sd().sd_bus_open_user(&raw);
    } else {
        // Without either variable sd-bus gives up; the user bus sits beside the
        // private socket.
        r = sd().sd_bus_new(&raw);
        if (r >= 0) r = sd().sd_bus_set_address(raw, ("unix:path=" + address_escape(dir + "/bus")).c_str());
        if (r >= 0) r = sd().sd_bus_set_bus_client(raw, 1);
        if (r >= 0) r = sd().sd_bus_start(raw);
    }
    BusPtr bus(raw);
    if (r >= 0) {
        via = "the user bus";
        return bus;
    }
    why_not = "no systemd user manager could be reached to ask for a delegated scope (" + tried +
              "; the user bus: " + util::errno_text(-r) + ")";
    return nullptr;
}

// The placeholder: a child that only waits, so that the scope has a process before
// the sandbox exists and agentjail's own process (a library host's) is never moved.
// It has no exit signal (a host reaping with waitpid(-1) never sees it), closes every
// fd but its end of the pipe (it must not hold a host's pipe open), and exits when the
// pipe's other end closes: at release(), or when agentjail dies, so that a SIGKILLed
// agentjail leaves an empty scope that systemd removes.
class Placeholder {
public:
    Placeholder() = default;
    Placeholder(const Placeholder&) = delete;
    Placeholder& operator=(const Placeholder&) = delete;
    ~Placeholder() { stop(); }

    Result<void> start() {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) {
            int e = errno;
            return Error(ErrorKind::setup, e, "pipe: " + util::errno_text(e));
        }
        sys::UniqueFd rd(p[0]);
        write_end_.reset(p[1]);
        // No signal may run a host's handler in the child before it reset them.
        sigset_t all, old;
        sigfillset(&all);
        ::pthread_sigmask(SIG_SETMASK, &all, &old);
        long pid = sys::ret(::syscall(SYS_clone, 0 /* no exit signal */, 0, 0, 0, 0));
        if (pid == 0) child(rd.get());  // never returns
        int e = static_cast<int>(-pid);
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
        if (pid < 0) {
            write_end_.reset();
            return Error(ErrorKind::setup, e, "start the scope's placeholder process: " + util::errno_text(e));
        }
        pid_ = static_cast<pid_t>(pid);
        return {};
    }

    pid_t pid() const { return pid_; }

    // Ends the placeholder and reaps it.
    void stop() noexcept {
        if (pid_ <= 0) return;
        write_end_.reset();
        auto start = std::chrono::steady_clock::now();
        bool killed = false;
        for (;;) {
            int st = 0;
            pid_t r = ::waitpid(pid_, &st, __WCLONE | WNOHANG);
            if (r == pid_ || (r < 0 && errno != EINTR)) break;
            if (!killed && std::chrono::steady_clock::now() - start > std::chrono::seconds(1)) {
                ::kill(pid_, SIGKILL);
                killed = true;
            }
            pause_ms(1);
        }
        pid_ = -1;
    }

private:
    // Only raw system calls and async-signal-safe functions: this is a copy of a
    // possibly multi-threaded process.
    [[noreturn]] static void child(int rd) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
        // The terminal's keys reach the whole process group; the placeholder must
        // not end the scope under a running sandbox (it would not: the scope stays
        // populated; but it would end early and leave nothing to hold it).
        struct sigaction ign {};
        ign.sa_handler = SIG_IGN;
        for (int sig : {SIGINT, SIGQUIT, SIGTSTP, SIGHUP, SIGPIPE, SIGTTIN, SIGTTOU}) ::sigaction(sig, &ign, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
        ::prctl(PR_SET_NAME, "aj-scope-hold", 0, 0, 0);
        if (::dup2(rd, 0) < 0) ::syscall(SYS_exit_group, 1);
        if (sys::close_range(1, ~0U, 0) < 0)
            for (int fd = 1; fd < 4096; ++fd) ::close(fd);
        char c;
        while (::read(0, &c, 1) < 0 && errno == EINTR) {
        }
        ::syscall(SYS_exit_group, 0);
        __builtin_unreachable();
    }

    pid_t pid_ = -1;
    sys::UniqueFd write_end_;
};

// What the JobRemoved signal said about our unit.
struct JobWatch {
    std::string unit;
    bool removed = false;
    std::string result;
};

int on_job_removed(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* w = static_cast<JobWatch*>(userdata);
    std::uint32_t id = 0;
    const char *job = nullptr, *unit = nullptr, *result = nullptr;
    if (sd().sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0) return 0;
    if (unit && w->unit == unit) {
        w->removed = true;
        w->result = result ? result : "";
    }
    return 0;
}

// The scope's cgroup directory, from the placeholder's /proc/PID/cgroup, once it ends
// in the scope's name.
std::string scope_dir_of(const Hierarchy& h, pid_t pid, const std::string& unit) {
    auto text = read_text("/proc/" + std::to_string(pid) + "/cgroup").value_or("");
    size_t at_line = 0;
    while (at_line < text.size()) {
        size_t end = text.find('\n', at_line);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at_line, end - at_line);
        at_line = end + 1;
        if (!util::starts_with(line, "0::/")) continue;
        std::string path = line.substr(3);
        if (path.size() <= unit.size() || path.compare(path.size() - unit.size(), unit.size(), unit) != 0 ||
            path[path.size() - unit.size() - 1] != '/')
            return {};
        Hierarchy at = h;
        at.self = path;
        return at.self_dir();
    }
    return {};
}

// "agentjail-<pid>-<random>.scope": unique across pid namespaces of the same user.
std::string scope_name() {
    unsigned char r[6] = {};
    if (::getrandom(r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
        auto t = std::chrono::steady_clock::now().time_since_epoch().count();
        for (size_t i = 0; i < sizeof r; ++i) r[i] = static_cast<unsigned char>(t >> (8 * i));
    }
    char hex[sizeof r * 2 + 1];
    for (size_t i = 0; i < sizeof r; ++i) std::snprintf(hex + 2 * i, 3, "%02x", r[i]);
    return "agentjail-" + std::to_string(::getpid()) + "-" + hex + ".scope";
}

// Holds the scope until the run's group is gone: then the placeholder leaves, the
// scope is empty and systemd stops it and removes its cgroup (with ours inside).
class ScopeAnchor final : public Anchor {
public:
    ScopeAnchor(std::unique_ptr<Placeholder> ph, std::string scope_dir, std::string hold_dir, std::string unit,
                std::string via, BusPtr bus)
        : ph_(std::move(ph)), scope_dir_(std::move(scope_dir)), hold_dir_(std::move(hold_dir)),
          unit_(std::move(unit)), via_(std::move(via)), bus_(std::move(bus)), attach_needed_(bus_ != nullptr) {}
    ~ScopeAnchor() override { (void)release(); }

    // Kept only when needed: the bus is open for attach().
    bool needs_attach() const override { return attach_needed_; }

    // The manager moves the init (AttachProcessesToUnit; on a systemd host a user
    // manager that may not do the move itself asks the system manager, which answers
    // later), then we wait until the kernel shows it there.
    Result<void> attach(pid_t pid, const std::string& sub) override {
        if (!bus_)
            return Error(ErrorKind::setup, ENOTCONN, "the systemd user manager's connection is gone: cannot move pid " +
                                                         std::to_string(pid) + " into " + unit_);
        // One move per scope; then the connection goes (unread signals must not pile up).
        BusPtr bus = std::move(bus_);
        sd_bus_error err = SD_BUS_ERROR_NULL;
        sd_bus_message* reply = nullptr;
        std::string path = "/" + sub;
        int r = sd().sd_bus_call_method(bus.get(), "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                   "org.freedesktop.systemd1.Manager", "AttachProcessesToUnit", &err, &reply,
                                   "ssau", unit_.c_str(), path.c_str(), 1, static_cast<std::uint32_t>(pid));
        sd().sd_bus_message_unref(reply);
        if (r < 0) {
            std::string msg = bus_error_text(r, &err);
            sd().sd_bus_error_free(&err);
            return Error(ErrorKind::setup, -r,
                         "the systemd user manager (" + via_ + ") did not move the sandbox into " + unit_ + path +
                             ": " + msg);
        }
        sd().sd_bus_error_free(&err);
        std::string want = unit_ + path;
        auto deadline = std::chrono::steady_clock::now() + job_timeout;
        int delay = 1;
        for (;;) {
            auto text = read_text("/proc/" + std::to_string(pid) + "/cgroup").value_or("");
            while (!text.empty() && text.back() == '\n') text.pop_back();
            if (text.size() >= want.size() && text.compare(text.size() - want.size(), want.size(), want) == 0)
                return {};
            if (std::chrono::steady_clock::now() > deadline)
                return Error(ErrorKind::setup, ETIMEDOUT,
                             "the sandbox was not moved into " + want + " within " +
                                 std::to_string(job_timeout.count()) + " s (it is in " + text + ")");
            pause_ms(delay);
            delay = std::min(delay * 2, 20);
        }
    }

    Result<void> release() override {
        bus_.reset();
        if (!ph_) return {};
        ph_->stop();
        ph_.reset();
        for (int i = 0; i < 100 && ::rmdir(hold_dir_.c_str()) != 0 && errno == EBUSY; ++i) pause_ms(2);
        // systemd notices the empty scope (cgroup.events) and removes it; wait for it
        // a little, so that a caller that checks right after sees nothing left. Not
        // removed here ourselves: the unit is systemd's to stop.
        auto start = std::chrono::steady_clock::now();
        int delay = 1;
        while (exists(scope_dir_)) {
            if (std::chrono::steady_clock::now() - start > std::chrono::seconds(3))
                return Error(ErrorKind::setup, EBUSY,
                             "the systemd scope " + scope_dir_ + " was still there 3 s after it was left empty");
            pause_ms(delay);
            delay = std::min(delay * 2, 20);
        }
        return {};
    }

private:
    std::unique_ptr<Placeholder> ph_;
    std::string scope_dir_, hold_dir_, unit_, via_;
    BusPtr bus_;
    bool attach_needed_;
};

// Whether this process may create a child in dir: CLONE_INTO_CGROUP (like a move)
// needs write access to cgroup.procs of the common ancestor of our cgroup and dir.
// A login shell's session-N.scope and the user manager's tree meet in a
// user-UID.slice that is root's: then the manager must move the init for us.
bool may_clone_into(const Hierarchy& h, const std::string& dir) {
    std::string self = h.self_dir();
    if (self.empty()) return false;
    std::string common = self;
    while (!util::path_within(dir, common)) {
        size_t slash = common.rfind('/');
        if (slash == std::string::npos || slash == 0) return false;
        common.resize(slash);
    }
    if (!util::path_within(common, h.mount)) return false;
    return ::access((common + "/cgroup.procs").c_str(), W_OK) == 0;
}

}  // namespace

Result<std::unique_ptr<Group>> create_systemd_scope(const Hierarchy& h, const limits::Settings& s,
                                                    const std::vector<std::string>& want, std::string& why_not) {
    if (!load_sd_bus(why_not)) return std::unique_ptr<Group>();
    std::string via;
    BusPtr bus = connect_user_manager(via, why_not);
    if (!bus) return std::unique_ptr<Group>();

    auto ph = std::make_unique<Placeholder>();
    if (auto r = ph->start(); !r) return std::move(r).error();

    std::string unit = scope_name();
    JobWatch watch{unit, false, {}};
    // Direct connections (the private socket) carry no sender; on the bus, only the
    // manager's signals count.
    const char* sender = sd().sd_bus_is_bus_client(bus.get()) > 0 ? "org.freedesktop.systemd1" : nullptr;
    sd_bus_slot* slot = nullptr;
    int r = sd().sd_bus_match_signal(bus.get(), &slot, sender, "/org/freedesktop/systemd1",
                                "org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, &watch);
    auto bus_failed = [&](const std::string& what, int rc, const sd_bus_error* e) {
        why_not = "the systemd user manager (" + via + ") did not give a delegated scope: " + what + ": " +
                  bus_error_text(rc, e);
        return std::unique_ptr<Group>();
    };
    if (r < 0) return bus_failed("watch its jobs", r, nullptr);
    struct SlotUnref {
        sd_bus_slot* s;
        ~SlotUnref() { sd().sd_bus_slot_unref(s); }
    } slot_guard{slot};

    sd_bus_message* raw_msg = nullptr;
    r = sd().sd_bus_message_new_method_call(bus.get(), &raw_msg, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "StartTransientUnit");
    struct MsgUnref {
        sd_bus_message* m;
        ~MsgUnref() { sd().sd_bus_message_unref(m); }
    } msg_guard{raw_msg};
    std::string desc = "agentjail sandbox of pid " + std::to_string(::getpid());
    // Delegate=yes: the scope's subtree is ours to divide (its cgroup.subtree_control
    // and children). CollectMode: a scope that failed is not kept around either.
    if (r >= 0) r = sd().sd_bus_message_append(raw_msg, "ss", unit.c_str(), "fail");
    if (r >= 0) r = sd().sd_bus_message_open_container(raw_msg, 'a', "(sv)");
    if (r >= 0) r = sd().sd_bus_message_append(raw_msg, "(sv)", "Description", "s", desc.c_str());
    if (r >= 0) r = sd().sd_bus_message_append(raw_msg, "(sv)", "PIDs", "au", 1, static_cast<std::uint32_t>(ph->pid()));
    if (r >= 0) r = sd().sd_bus_message_append(raw_msg, "(sv)", "Delegate", "b", 1);
    if (r >= 0) r = sd().sd_bus_message_append(raw_msg, "(sv)", "CollectMode", "s", "inactive-or-failed");
    if (r >= 0) r = sd().sd_bus_message_close_container(raw_msg);
    if (r >= 0) r = sd().sd_bus_message_append(raw_msg, "a(sa(sv))", 0);
    if (r < 0) return bus_failed("build StartTransientUnit", r, nullptr);

    sd_bus_error err = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    auto timeout_us = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(job_timeout).count());
    r = sd().sd_bus_call(bus.get(), raw_msg, timeout_us, &err, &reply);
    sd().sd_bus_message_unref(reply);
    if (r < 0) {
        auto g = bus_failed("StartTransientUnit " + unit, r, &err);
        sd().sd_bus_error_free(&err);
        return g;
    }
    sd().sd_bus_error_free(&err);

    // Wait for the job: done when systemd says so (JobRemoved), or as soon as the
    // placeholder shows up in the scope's cgroup (the move is what we need).
    auto deadline = std::chrono::steady_clock::now() + job_timeout;
    std::string scope_dir;
    for (;;) {
        int p;
        while ((p = sd().sd_bus_process(bus.get(), nullptr)) > 0) {
        }
        if (watch.removed && watch.result != "done") {
            why_not = "the systemd user manager (" + via + ") could not start " + unit + " (job result: " +
                      watch.result + ")";
            return std::unique_ptr<Group>();
        }
        scope_dir = scope_dir_of(h, ph->pid(), unit);
        if (!scope_dir.empty()) break;
        if (watch.removed) {
            why_not = "systemd started " + unit + ", but the placeholder process is not in its cgroup (" +
                      read_text("/proc/" + std::to_string(ph->pid()) + "/cgroup").value_or("gone") + ")";
            return std::unique_ptr<Group>();
        }
        auto now = std::chrono::steady_clock::now();
        if (p < 0 || now >= deadline) {
            why_not = "the systemd user manager (" + via + ") did not start " + unit + " within " +
                      std::to_string(job_timeout.count()) + " s" + (p < 0 ? ": " + util::errno_text(-p) : "");
            return std::unique_ptr<Group>();
        }
        auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
        (void)sd().sd_bus_wait(bus.get(), static_cast<std::uint64_t>(std::min<long long>(left, 20000)));
    }
    // The bus stays open only when the manager will have to move the init.
    if (may_clone_into(h, scope_dir)) bus.reset();

    // Delegate=yes made the scope's directory and its cgroup.procs and
    // cgroup.subtree_control ours; check rather than trust.
    if (!writable(scope_dir, {"cgroup.procs", "cgroup.subtree_control"})) {
        why_not = "systemd's scope " + scope_dir + " is not writable by uid " + std::to_string(::geteuid()) +
                  " (not delegated)";
        return std::unique_ptr<Group>();
    }
    auto avail = words(read_text(scope_dir + "/cgroup.controllers").value_or(""));
    std::vector<std::string> missing;
    for (const auto& c : required_controllers(s))
        if (!contains(avail, c)) missing.push_back(c);
    if (!missing.empty()) {
        why_not = "systemd's scope " + scope_dir + " has no " + join(missing) +
                  " controller (the user manager was not given it: Delegate= of user@.service)";
        return std::unique_ptr<Group>();
    }
    // The placeholder moves into a leaf: a group that passes controllers down must
    // hold no process itself (cgroup v2's no-internal-processes rule).
    std::string hold = scope_dir + "/holder";
    if (::mkdir(hold.c_str(), 0755) != 0) {
        int e = errno;
        return Error(ErrorKind::setup, e, "create cgroup " + hold + ": " + util::errno_text(e));
    }
    auto anchor = std::make_unique<ScopeAnchor>(std::move(ph), scope_dir, hold, unit, via, std::move(bus));
    // (ph was moved: its pid is the first entry of the scope's cgroup.procs.)
    auto procs = read_procs(scope_dir);
    for (pid_t pid : procs)
        if (auto w = write_text(hold + "/cgroup.procs", std::to_string(pid)); !w) return std::move(w).error();
    std::vector<std::string> usable;
    for (const auto& c : want)
        if (contains(avail, c)) usable.push_back(c);
    std::string add;
    for (const auto& c : usable) add += (add.empty() ? "+" : " +") + c;
    if (!add.empty())
        if (auto w = write_text(scope_dir + "/cgroup.subtree_control", add); !w) return std::move(w).error();
    return make_v2_group(Kind::v2_delegated, scope_dir, s, Via::systemd_scope, unit, std::move(anchor));
}

}  // namespace agentjail::cgroup::detail
