// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: run a program and capture its output, make and remove
// scratch directories. Used by the integration and escape tiers.
#pragma once

#include <string>
#include <vector>

namespace ajtest {

struct RunOutput {
    int status = -1;       // exit code, or 128+N when killed by signal N
    std::string out;       // stdout
    std::string err;       // stderr
};

// Runs argv (argv[0] is a path or looked up in PATH) with the given extra
// environment (NAME=VALUE, added to or replacing the current one), stdin from
// /dev/null unless `input` is set, and waits for it.
RunOutput run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
              const std::string* input = nullptr, const std::string& cwd = {});

// Runs the agentjail binary under test with args.
RunOutput agentjail(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                    const std::string& cwd = {});

// Path of the agentjail binary and of a static test helper by name.
std::string agentjail_bin();
std::string helper(const std::string& name);

// A scratch directory, canonical, removed with everything in it on destruction.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "aj-test");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    // Writes a file (creating parent directories) and returns its path.
    std::string write(const std::string& rel, const std::string& content, unsigned mode = 0644) const;
    std::string mkdir(const std::string& rel, unsigned mode = 0755) const;

private:
    std::string path_;
};

std::string read_file(const std::string& path);
bool exists(const std::string& path);
std::string trim(const std::string& s);
// A fresh random token such as AJ-CANARY-3f9a..., for canary secrets.
std::string canary();

}  // namespace ajtest
