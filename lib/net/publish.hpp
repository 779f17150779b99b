// SPDX-License-Identifier: Apache-2.0
// Published ports (--publish PORT[:HOSTPORT], docs/network.md "Publishing a port"):
// agentjail listens on the host's 127.0.0.1:HOSTPORT and relays each connection to
// 127.0.0.1:PORT inside the sandbox's network namespace, through sockets the
// sandbox's init makes there on request.
#pragma once

#include "netrules/settings.hpp"
#include "sys/fd.hpp"

#include "base/error.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace agentjail::net {


// Why a socket from the init: agentjail cannot enter the sandbox's network
// namespace itself (setns(CLONE_NEWNET) needs CAP_SYS_ADMIN in agentjail's own user
// namespace, which an unprivileged caller lacks, and a helper process inside would
// be one more process the command can see and signal). The init is already there
// and outlives the command; a socket keeps the namespace it was made in, so an
// unconnected TCP socket from the init, connected here to 127.0.0.1:PORT, reaches
// the sandbox's loopback and nothing else. The init makes one per request on a
// control socketpair (SOCK_SEQPACKET: one byte asks, one SCM_RIGHTS message
// answers, in order), woken by a signal the kernel raises when the pair is readable
// (F_SETSIG), so its loop stays a sigwaitinfo() loop of raw system calls.
class Publisher {
public:
    // Binds and listens on each host port now, before the command starts: a port in
    // use is an error naming it (the caller exits 125).
    static Result<std::unique_ptr<Publisher>> bind(const std::vector<PublishPort>& ports);
    ~Publisher();
    Publisher(const Publisher&) = delete;
    Publisher& operator=(const Publisher&) = delete;

    // Starts accepting on `io` (the run's loop, which must outlive the publisher and
    // run until stop() returned); `control` is agentjail's end of the init's socketpair.
    Result<void> serve(boost::asio::io_context& io, sys::UniqueFd control);
    // Closes the listeners and every relayed connection, on the loop, and waits (2 s
    // at most) until the last one is gone. Idempotent.
    void stop();

    struct Impl;

private:
    explicit Publisher(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace agentjail::net
