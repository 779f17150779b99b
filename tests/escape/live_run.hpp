// SPDX-License-Identifier: Apache-2.0
// A run that waits in the workspace while the host changes it (ws_test.cc,
// view_test.cc): the host's change happens while the sandbox waits, and the probe
// after it measures what holds.
#pragma once

#include "common.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace ajesc {

// A sandboxed loop in the workspace: says it is ready, waits for the host to finish
// its change (the file `probe`), then runs `after`. The host's change and the
// re-application both happen while the sandbox waits, so the probe measures what
// holds once the supervisor had its chance, not the gap itself.
struct LiveRun {
    std::unique_ptr<ajtest::Child> child;
    std::string ws;
};

inline LiveRun start(ajtest::Jail& jail, const std::string& after, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv = {ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) argv.push_back(a);
    argv.push_back("--json");
    for (const auto& f : flags) argv.push_back(f);
    argv.insert(argv.end(), {"--", "/bin/sh", "-c",
                             "touch ready; i=0; while [ ! -e probe ] && [ $i -lt 1000 ]; do sleep 0.01; "
                             "i=$((i+1)); done; " + after});
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.cwd = jail.ws();
    LiveRun r;
    r.ws = jail.ws();
    r.child = std::make_unique<ajtest::Child>(argv, o);
    return r;
}

inline ajtest::RunOutput finish(ajtest::Jail& jail, LiveRun& r) {
    // Well past any re-application (a few ms): then the sandbox probes.
    ajtest::sleep_ms(300);
    int fd = ::open((r.ws + "/probe").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    ajtest::RunOutput out = r.child->wait(30000);
    jail.record(out);
    return out;
}

inline bool ready(const LiveRun& r) { return ajtest::wait_for_file(r.ws + "/ready", 10000); }

inline void host(const std::string& script, const std::string& cwd) {
    ajtest::RunOptions o;
    o.cwd = cwd;
    auto r = ajtest::run_with({"/bin/sh", "-c", script}, o);
    ASSERT_EQ(r.status, 0) << script << "\n" << r.err;
}

}  // namespace ajesc
