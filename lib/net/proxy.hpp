// SPDX-License-Identifier: Apache-2.0
// The network proxy: serves the listening socket the sandbox's init opened inside
// the sandbox's network namespace, on the run's Boost.Asio loop in the host's
// network (HTTP CONNECT, absolute-form HTTP, SOCKS5), enforcing the host rules.
#pragma once

#include "netrules/settings.hpp"
#include "sys/fd.hpp"
#include "sys/host_file.hpp"

#include "base/error.hpp"

#include <cstddef>
#include <cstdint>
#include "base/outcome.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace agentjail::net {

struct Counters {
    std::uint64_t allowed = 0;
    std::uint64_t denied = 0;
    // Set when the proxy itself failed during the run (it stopped accepting, or
    // its thread ended on an error): the cause, for the result record.
    std::string failure;
    // What was refused or failed, by host and reason (the first distinct ones).
    std::vector<Refusal> refusals;
    std::uint64_t refusals_more = 0;
};

class Proxy {
public:
    // Opens the log (so a bad --net-log fails before anything is cloned).
    static Result<std::unique_ptr<Proxy>> create(const Settings& settings);
    ~Proxy();
    Proxy(const Proxy&) = delete;
    Proxy& operator=(const Proxy&) = delete;

    // Makes the per-run CA (key and certificate, in this process's memory only) and
    // writes the CA bundle file, when the settings ask for interception. Call it after
    // the sandbox was cloned and before it runs (launch's before_release), so the key
    // is in no memory the sandbox was copied from; a no-op without interception.
    Result<void> prepare_ca();
    // Starts serving `listener` (a listening TCP socket) on `io` (the run's loop,
    // which must outlive the proxy and run until stop() returned), and the gateways'
    // listeners inside the sandbox, one per Gateway with `listener`, in the order of
    // settings.gateways.
    Result<void> serve(boost::asio::io_context& io, sys::UniqueFd listener,
                       std::vector<sys::UniqueFd> gateway_listeners = {});
    // Stops accepting and ends every connection (each one logged), on the loop, and
    // waits (2 s at most) until the last one is gone. Idempotent; returns the final
    // counts.
    Counters stop();
    Counters counters() const;
    // After stop(), once nothing of the sandbox is left: a log kept aside (one the
    // sandbox could write: sys::HostLog) goes to its path.
    Result<void> put_log_in_place();

    struct Impl;

private:
    explicit Proxy(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace agentjail::net
