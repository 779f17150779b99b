// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: process running with captured output, scratch directories.
#include "test_support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

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

TempDir::~TempDir() {
    std::error_code ec;
    // Make everything writable first: tests create mode-000 files and dirs.
    for (auto it = std::filesystem::recursive_directory_iterator(
             path_, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_symlink()) chmod(it->path().c_str(), 0700);
    }
    chmod(path_.c_str(), 0700);
    std::filesystem::remove_all(path_, ec);
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

}  // namespace ajtest
