// SPDX-License-Identifier: Apache-2.0
// A watch on the host that the supervisor serves beside the sandbox: what the launch
// asks of lib/guard's watch of the hidden and protected names, which lib/run hands
// it (launch::Hooks::watch). The launch knows nothing more of it.
#pragma once

namespace agentjail::launch {

class HostWatch {
public:
    virtual ~HostWatch() = default;

    // Readable when the host changed something watched: part of the supervisor's wait.
    virtual int fd() const = 0;
    // Deals with what the host changed, on the run's loop: when fd() is readable, and
    // before a frozen sandbox is thawed (what the host did meanwhile comes first).
    // false: a protection could not be put back; the sandbox must not go on using
    // what it guarded, and the supervisor kills it (the watch says why in its part of
    // the result). No further call follows a false.
    virtual bool handle() = 0;
};

}  // namespace agentjail::launch
