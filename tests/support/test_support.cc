// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: process running with captured output, scratch directories.
#include "test_support.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <dirent.h>
#include <signal.h>
#include <time.h>

#include <nlohmann/json.hpp>

extern char** environ;

namespace ajtest {

namespace {
std::string read_all_fds(int out_fd, int err_fd, std::string& out, std::string& err) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_count = 2;
    char buf[65536];
    while (open_count > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return std::strerror(errno);
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
            } else if (n == 0 || (n < 0 && errno != EINTR)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_count;
            }
        }
    }
    return {};
}
}  // namespace

RunOutput run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::string* input, const std::string& cwd) {
    RunOutput r;
    int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    if (input != nullptr && pipe2(in_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");

    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string kv = *e;
        std::string name = kv.substr(0, kv.find('='));
        bool replaced = false;
        for (const auto& x : env)
            if (x.substr(0, x.find('=')) == name) replaced = true;
        if (!replaced) envs.push_back(kv);
    }
    for (const auto& x : env) envs.push_back(x);

    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        if (input != nullptr) {
            dup2(in_pipe[0], 0);
        } else {
            int devnull = open("/dev/null", O_RDONLY);
            dup2(devnull, 0);
        }
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(121);
        std::vector<char*> av, ev;
        for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
        av.push_back(nullptr);
        for (const auto& e : envs) ev.push_back(const_cast<char*>(e.c_str()));
        ev.push_back(nullptr);
        environ = ev.data();
        // The test process ignores SIGPIPE (net_support's servers): a program under
        // test starts with the default, as from a shell, or it could not die of one.
        signal(SIGPIPE, SIG_DFL);
        execvp(av[0], av.data());
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (input != nullptr) {
        close(in_pipe[0]);
        size_t off = 0;
        while (off < input->size()) {
            ssize_t n = write(in_pipe[1], input->data() + off, input->size() - off);
            if (n <= 0) break;
            off += static_cast<size_t>(n);
        }
        close(in_pipe[1]);
    }
    read_all_fds(out_pipe[0], err_pipe[0], r.out, r.err);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

std::string agentjail_bin() { return AJ_BIN; }

std::string helper(const std::string& name) { return std::string(AJ_HELPERS_DIR) + "/" + name; }

int free_port() {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (s >= 0 && ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0) ::close(s);
    return port;
}

RunOutput agentjail(const std::vector<std::string>& args, const std::vector<std::string>& env,
                    const std::string& cwd) {
    std::vector<std::string> argv{agentjail_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, env, nullptr, cwd);
}

TempDir::TempDir(const std::string& prefix) {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = std::filesystem::canonical(buf.data()).string();
}

TempDir::TempDir(const std::string& prefix, const std::string& base) {
    std::string tmpl = base + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed in " + base);
    path_ = std::filesystem::canonical(buf.data()).string();
}

TempDir::~TempDir() {
    // Another agentjail may be removing names in here meanwhile (a run of another
    // test clears the placeholders a killed run left, from its journal): remove_all
    // stops at the first name that vanished under it, so it goes again until the
    // directory is gone (a leftover empty aj-ws-* after a whole suite, session 16).
    for (int round = 0; round < 5; ++round) {
        std::error_code ec;
        // Make everything writable first: tests create mode-000 files and dirs.
        for (auto it = std::filesystem::recursive_directory_iterator(
                 path_, std::filesystem::directory_options::skip_permission_denied, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
            if (!it->is_symlink()) chmod(it->path().c_str(), 0700);
        }
        chmod(path_.c_str(), 0700);
        std::filesystem::remove_all(path_, ec);
        struct stat st {};
        if (::lstat(path_.c_str(), &st) != 0) return;
    }
}

std::string TempDir::write(const std::string& rel, const std::string& content, unsigned mode) const {
    std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p.parent_path());
    {
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << content;
    }
    chmod(p.c_str(), mode);
    return p.string();
}

std::string TempDir::mkdir(const std::string& rel, unsigned mode) const {
    std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p);
    chmod(p.c_str(), mode);
    return p.string();
}

std::set<std::string> dir_entries(const std::string& dir) {
    std::set<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (std::string n = e->d_name; n != "." && n != "..") out.insert(n);
        ::closedir(d);
    }
    return out;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

bool exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::string canary() {
    std::random_device rd;
    std::mt19937_64 g(rd());
    char buf[40];
    snprintf(buf, sizeof buf, "AJ-CANARY-%016llx", static_cast<unsigned long long>(g()));
    return buf;
}

// ---- Added for the integration and escape tiers -------------------------------

namespace {
long long now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int decode_status(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }
}  // namespace

Child::Child(const std::vector<std::string>& argv, const RunOptions& opts) {
    int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    if (!opts.input.empty() && pipe2(in_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");

    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string kv = *e;
        std::string name = kv.substr(0, kv.find('='));
        bool drop = false;
        for (const auto& x : opts.env)
            if (x.substr(0, x.find('=')) == name) drop = true;
        for (const auto& x : opts.unset_env)
            if (x == name) drop = true;
        if (!drop) envs.push_back(kv);
    }
    for (const auto& x : opts.env) envs.push_back(x);
    std::vector<char*> av, ev;
    for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    for (const auto& e : envs) ev.push_back(const_cast<char*>(e.c_str()));
    ev.push_back(nullptr);

    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        if (!opts.input.empty()) {
            dup2(in_pipe[0], 0);
        } else {
            int devnull = open("/dev/null", O_RDONLY);
            dup2(devnull, 0);
        }
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        // Park the sources high first so a target number never clobbers a later source.
        std::vector<int> parked;
        for (const auto& [src, dst] : opts.leak_fds) {
            (void)dst;
            parked.push_back(fcntl(src, F_DUPFD_CLOEXEC, 900));
        }
        for (size_t i = 0; i < opts.leak_fds.size(); ++i) {
            if (parked[i] < 0) _exit(122);
            if (dup2(parked[i], opts.leak_fds[i].second) < 0) _exit(122);  // dup2 clears FD_CLOEXEC
        }
        if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) _exit(121);
        environ = ev.data();
        // The test process ignores SIGPIPE (net_support's servers): a program under
        // test starts with the default, as from a shell, or it could not die of one.
        signal(SIGPIPE, SIG_DFL);
        execvp(av[0], av.data());
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    if (!opts.input.empty()) {
        close(in_pipe[0]);
        size_t off = 0;
        while (off < opts.input.size()) {
            ssize_t n = write(in_pipe[1], opts.input.data() + off, opts.input.size() - off);
            if (n <= 0) break;
            off += static_cast<size_t>(n);
        }
        close(in_pipe[1]);
    }
}

Child::~Child() {
    if (!reaped_ && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

void Child::pump(int timeout_ms) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (out_fd_ < 0 && err_fd_ < 0) {
        if (timeout_ms > 0) sleep_ms(timeout_ms);
        return;
    }
    int n = poll(fds, 2, timeout_ms);
    if (n <= 0) return;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        ssize_t got = read(fds[i].fd, buf, sizeof buf);
        if (got > 0) {
            (i == 0 ? r_.out : r_.err).append(buf, static_cast<size_t>(got));
        } else if (got == 0 || errno != EINTR) {
            close(fds[i].fd);
            (i == 0 ? out_fd_ : err_fd_) = -1;
        }
    }
}

int Child::wait_exit(int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    while (!reaped_) {
        int st = 0;
        pid_t w = waitpid(pid_, &st, WNOHANG);
        if (w == pid_) {
            reaped_ = true;
            r_.status = decode_status(st);
            break;
        }
        if (now_ms() >= deadline) return -1;
        pump(10);
    }
    return r_.status;
}

RunOutput Child::wait(int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    while ((out_fd_ >= 0 || err_fd_ >= 0) && now_ms() < deadline) pump(50);
    if (out_fd_ >= 0 || err_fd_ >= 0 || wait_exit(static_cast<int>(std::max(0LL, deadline - now_ms()))) < 0) {
        r_.timed_out = true;
        if (!reaped_) {
            ::kill(pid_, SIGKILL);
            int st = 0;
            while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
            }
            reaped_ = true;
            r_.status = decode_status(st);
        }
        // Survivors may still hold the pipes: take what is there and stop.
        pump(0);
        if (out_fd_ >= 0) close(out_fd_);
        if (err_fd_ >= 0) close(err_fd_);
        out_fd_ = err_fd_ = -1;
    }
    return r_;
}

RunOutput run_with(const std::vector<std::string>& argv, const RunOptions& opts) {
    Child c(argv, opts);
    return c.wait(opts.timeout_ms);
}

RunOutput agentjail_with(const std::vector<std::string>& args, const RunOptions& opts) {
    std::vector<std::string> argv{agentjail_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_with(argv, opts);
}

Pipe::Pipe(int flags) {
    int p[2];
    if (::pipe2(p, flags) == 0) {
        r = p[0];
        w = p[1];
    }
}

Pipe::~Pipe() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
}

void Pipe::close_write() {
    if (w >= 0) ::close(w);
    w = -1;
}

std::string Pipe::read_all() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(r, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

bool Pipe::eof_within(int timeout_ms) {
    pollfd pf{r, POLLIN, 0};
    if (::poll(&pf, 1, timeout_ms) <= 0) return false;
    char c;
    return ::read(r, &c, 1) == 0;
}

std::string Pipe::line(int timeout_ms) {
    std::string out;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
        pollfd pf{r, POLLIN, 0};
        if (::poll(&pf, 1, 50) <= 0) continue;
        char c;
        if (::read(r, &c, 1) != 1) break;
        if (c == '\n') return out;
        out.push_back(c);
    }
    return out;
}

std::vector<int> pids_with_marker(const std::string& marker) {
    std::vector<int> found;
    DIR* d = opendir("/proc");
    if (d == nullptr) return found;
    int self = getpid();
    while (dirent* e = readdir(d)) {
        char* end = nullptr;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || pid == self) continue;
        std::string cmdline = read_file(std::string("/proc/") + e->d_name + "/cmdline");
        if (cmdline.find(marker) != std::string::npos) {
            // A zombie has an empty cmdline, so what is found here is alive or exiting.
            found.push_back(static_cast<int>(pid));
        }
    }
    closedir(d);
    return found;
}

bool wait_no_pids_with_marker(const std::string& marker, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        if (pids_with_marker(marker).empty()) return true;
        if (now_ms() >= deadline) return false;
        sleep_ms(20);
    }
}

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur)) v.push_back(cur);
    return v;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool wait_for_file(const std::string& path, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    while (!exists(path)) {
        if (now_ms() >= deadline) return false;
        sleep_ms(10);
    }
    return true;
}

Jail::Jail() {
    auto seed = [this](const TempDir& dir, const std::string& label, const std::string& rel,
                       const std::string& prefix, const std::string& suffix, unsigned mode) {
        std::string c = canary();
        std::string path = dir.write(rel, prefix + c + suffix, mode);
        secrets_.emplace_back(label + "/" + rel, c);
        canaries_.push_back(c);
        seeded_.push_back(path);
    };
    chmod(home_.path().c_str(), 0700);
    seed(home_, "home", ".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n", "\n-----END OPENSSH PRIVATE KEY-----\n", 0600);
    chmod((home_.path() + "/.ssh").c_str(), 0700);
    seed(home_, "home", ".aws/credentials", "[default]\naws_access_key_id = AKIA0000\naws_secret_access_key = ", "\n", 0600);
    seed(home_, "home", ".config/gh/hosts.yml", "github.com:\n  oauth_token: ", "\n", 0600);
    seed(home_, "home", ".netrc", "machine example.com login me password ", "\n", 0600);
    seed(ws_, "ws", ".env", "API_KEY=", "\n", 0644);
    seed(ws_, "ws", ".env.local", "DB_PASSWORD=", "\n", 0644);
}

const std::string& Jail::secret(const std::string& which) const {
    for (const auto& [k, v] : secrets_)
        if (k == which) return v;
    throw std::runtime_error("no seeded secret " + which);
}

std::string Jail::new_canary() {
    canaries_.push_back(canary());
    return canaries_.back();
}

std::string Jail::plant(const std::string& rel, const std::string& content, unsigned mode) {
    std::string path = ws_.write(rel, content, mode);
    seeded_.push_back(path);
    return path;
}

std::vector<std::string> Jail::base() const {
    std::vector<std::string> b = {"-C", ws(), "--ro", AJ_HELPERS_DIR};
    b.insert(b.end(), also_.begin(), also_.end());
    return b;
}

RunOutput Jail::run(const std::vector<std::string>& args, RunOptions opts) {
    bool has_home = false;
    for (const auto& e : opts.env) has_home = has_home || e.rfind("HOME=", 0) == 0;
    if (!has_home) opts.env.insert(opts.env.begin(), "HOME=" + home());
    RunOutput r = agentjail_with(args, opts);
    record(r);
    return r;
}

RunOutput Jail::control(const std::vector<std::string>& args, RunOptions opts) {
    bool has_home = false;
    for (const auto& e : opts.env) has_home = has_home || e.rfind("HOME=", 0) == 0;
    if (!has_home) opts.env.insert(opts.env.begin(), "HOME=" + home());
    return agentjail_with(args, opts);
}

RunOutput Jail::control_sh(const std::string& script, const std::vector<std::string>& flags,
                           RunOptions opts) {
    std::vector<std::string> args = base();
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return control(args, std::move(opts));
}

RunOutput Jail::sh(const std::string& script, const std::vector<std::string>& flags, RunOptions opts) {
    std::vector<std::string> args = base();
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return run(args, std::move(opts));
}

RunOutput Jail::host_sh(const std::string& script, RunOptions opts) {
    bool has_home = false;
    for (const auto& e : opts.env) has_home = has_home || e.rfind("HOME=", 0) == 0;
    if (!has_home) opts.env.insert(opts.env.begin(), "HOME=" + home());
    // Positive controls may print canaries on purpose: not recorded.
    return run_with({"/bin/sh", "-c", script}, opts);
}

void Jail::record(const RunOutput& r) { outputs_.push_back(r); }

std::string Jail::leaks() const {
    std::string found;
    for (size_t i = 0; i < outputs_.size(); ++i) {
        for (const auto& c : canaries_) {
            if (contains(outputs_[i].out, c)) found += "canary in stdout of run " + std::to_string(i) + "\n";
            if (contains(outputs_[i].err, c)) found += "canary in stderr of run " + std::to_string(i) + "\n";
        }
    }
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(
             ws(), std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file()) continue;
        std::string p = it->path().string();
        bool seeded = false;
        for (const auto& s : seeded_) seeded = seeded || s == p;
        if (seeded) continue;
        std::string content = read_file(p);
        for (const auto& c : canaries_)
            if (contains(content, c)) found += "canary in workspace file " + p + "\n";
    }
    return found;
}

std::vector<PlannedMount> planned_mounts(const std::vector<std::string>& explain_args,
                                         const std::vector<std::string>& env, std::string* error) {
    std::vector<std::string> args{"explain", "--json"};
    args.insert(args.end(), explain_args.begin(), explain_args.end());
    RunOptions opts;
    opts.env = env;
    RunOutput r = agentjail_with(args, opts);
    std::vector<PlannedMount> mounts;
    if (r.status != 0) {
        if (error) *error = "explain --json exited " + std::to_string(r.status) + ": " + r.err;
        return mounts;
    }
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) {
        if (error) *error = "explain --json printed invalid JSON: " + r.out.substr(0, 200);
        return mounts;
    }
    auto str = [](const nlohmann::json& o, std::initializer_list<const char*> keys) {
        for (const char* k : keys)
            if (o.contains(k) && o[k].is_string()) return o[k].get<std::string>();
        return std::string();
    };
    // Tolerant of where the plan sits ("mounts" at the top or under "plan").
    const nlohmann::json* arr = nullptr;
    if (j.contains("mounts") && j["mounts"].is_array()) arr = &j["mounts"];
    else if (j.contains("plan") && j["plan"].is_object() && j["plan"].contains("mounts")) arr = &j["plan"]["mounts"];
    if (arr == nullptr) {
        if (error) *error = "explain --json has no \"mounts\" array";
        return mounts;
    }
    for (const auto& m : *arr) {
        if (!m.is_object()) continue;
        mounts.push_back({str(m, {"kind", "type"}), str(m, {"src", "source"}), str(m, {"dst", "target", "path"})});
    }
    return mounts;
}

}  // namespace ajtest
