// SPDX-License-Identifier: Apache-2.0
// One run of a sandboxed command, in order: what the C++ API's Sandbox is over.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "run/options.hpp"

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentjail {
namespace policy {
struct Policy;
}

namespace run {

class Run {
public:
    // Plans the run (once), prepares what it needs on the host and launches it.
    static Result<std::unique_ptr<Run>> start(const policy::Policy& policy, const std::vector<std::string>& argv,
                                              const SpawnOptions& options);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    pid_t pid() const noexcept;
    int pidfd() const noexcept;
    // The Sandbox's calls of the same names (lib/api/api.hpp says what each does).
    Result<void> kill(int sig);
    Result<void> stop(int sig);
    Result<RunResult> wait();
    int job_fd() const noexcept;
    std::optional<JobChange> next_job_change();
    bool has_terminal() const noexcept;
    void terminal_resized();
    bool suspend();
    void resume();
    void suspend_terminal();
    void resume_terminal();

    struct State;

private:
    explicit Run(std::unique_ptr<State> s);
    std::unique_ptr<State> l_;
};

}  // namespace run
}  // namespace agentjail
