// SPDX-License-Identifier: Apache-2.0
// What the network part of a plan carries (plain data, no Asio): the host rules,
// secrets, gateways, the proxy's bounds and log, published ports. The proxy and
// the publisher (lib/net) serve it; the plan builds it.
#pragma once

#include "netrules/address.hpp"
#include "netrules/rules.hpp"
#include "sys/host_file.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::net {

// A secret the proxy adds to plain-HTTP requests for its hosts. The value is read
// from the source only when the proxy starts serving (after the sandbox exists),
// so it is never in the memory the sandbox was cloned from through the plan.
struct Secret {
    std::string name;
    // The source chosen when the run was planned, paths absolute: "env:VAR",
    // "file:/p", "dotenv:/p/.env[#KEY]", "json:/p/f.json#a.b" (net/secret_source.hpp).
    std::string source;
    std::string placeholder;  // what the command's $NAME holds
    std::vector<Rule> hosts;
    // Request headers that may carry it besides Authorization and x-api-key
    // ([secrets] NAME = { ..., headers = ["X-Goog-Api-Key"] }).
    std::vector<std::string> headers;
    // For explain: why this source (the alternatives before it that were not
    // available), whether the placeholder is stable, an expiry.
    std::string detail;
};

// A model gateway ([network] gateways, docs/network.md "Model gateways on
// loopback"): the origin a variable such as ANTHROPIC_BASE_URL names. Exactly that
// origin is allowed (loopback and private addresses included, for it only). A
// loopback origin also gets a listener at the same address and port inside the
// sandbox (opened by the init, served here): each connection on it is relayed to
// the host's origin with every request parsed, checked and logged, and the secrets
// bound to it put in, over plain HTTP too (the origin never leaves the machine).
struct Gateway {
    std::string var;         // "ANTHROPIC_BASE_URL"
    std::string url;         // its value
    bool https = false;
    std::string host;        // normalised: "127.0.0.1", "localhost", "gw.example.com"
    std::uint16_t port = 0;
    bool loopback = false;   // 127/8, ::1 or localhost
    // Loopback only: the address of the listener inside, which is also where the
    // proxy connects on the host (localhost: 127.0.0.1). `listener`: this entry opens
    // it (two variables naming one origin share the first one's).
    Address address;
    bool listener = false;
};

// What the proxy enforces, as the plan carries it (plain data, no Asio).
// What one run's proxy may hold (docs/network.md, "Bounds"): connections at once,
// each socket's kernel buffers, the splice pipes and the buffers of the copy path.
// The plan derives them from the run's memory limit (bounds_for()).
struct Bounds {
    std::size_t max_connections = 256;  // concurrent connections per sandbox
    // SO_RCVBUF and SO_SNDBUF of every socket (the kernel doubles it for its own
    // bookkeeping and stops autotuning): a connection holds at most 4 such buffers.
    int socket_buffer = 128 * 1024;
    int pipe_size = 16 * 1024;            // F_SETPIPE_SZ of each splice pipe (4 pages)
    std::size_t max_pipes = 128;          // splice pipes open at once (two per relayed tunnel)
    std::size_t copy_buffer = 16 * 1024;  // per direction, when a tunnel gets no pipes
};
// Bounds for a run: max_connections is the policy's, but at most one per 2 MiB of
// the memory limit (at least 8), so that the kernel memory the proxy can be made to
// hold (about 1 MiB per connection) stays under half of the sandbox's own limit.
Bounds bounds_for(std::optional<std::uint64_t> memory_limit, std::size_t policy_max_connections);

struct Settings {
    Rules rules;
    std::string log_path;              // one JSON line per attempt; "" for none
    sys::HostFileRules log_rules;      // what log_path must stay clear of (sys/host_file.hpp)
    std::size_t max_connections =
        256;  // concurrent connections per sandbox (bounds.max_connections)
    Bounds bounds;
    std::uint16_t port = 3128;         // where the proxy listens inside the sandbox
    // Optional secrets left out because none of their sources is available, with why
    // ("ANTHROPIC_API_KEY not set (optional: $ANTHROPIC_API_KEY is not set)"); explain only.
    std::vector<std::string> secrets_not_set;
    std::vector<Secret> secrets;
    std::vector<Gateway> gateways;
    // TLS interception (docs/network.md): destinations whose rules need to see the
    // requests (methods/paths, or a secret bound to the host) are served with
    // certificates of a per-run CA. The proxy writes its certificate, after the
    // sandbox's system bundle, to ca_bundle_host (in a fresh directory it creates),
    // which the sandbox gets read-only at ca_bundle_inside. "" when nothing is
    // intercepted.
    std::string ca_bundle_host;
    std::string ca_bundle_inside;
};

// A published port (--publish PORT[:HOSTPORT], lib/net/publish.hpp).
struct PublishPort {
    std::uint16_t port = 0;       // inside, on the sandbox's 127.0.0.1
    std::uint16_t host_port = 0;  // on the host's 127.0.0.1
};

}  // namespace agentjail::net
