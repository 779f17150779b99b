// SPDX-License-Identifier: Apache-2.0
// The proxy's shared state, private to lib/net: what the connection handlers of
// proxy.cc (sessions: the first request, the checks, the connect, the relay) and
// exchange.cc (intercepted connections: every request checked) both use.
#pragma once

#include <utility>

#include "net/ca.hpp"
#include "netrules/http.hpp"
#include "net/drain.hpp"
#include "net/proxy.hpp"
#include "netrules/redact.hpp"
#include "sys/fd.hpp"
#include "sys/host_file.hpp"
#include "util/log_limit.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace agentjail::net {

// A connection the proxy ends when it stops (io thread only).
class Connection {
public:
    virtual ~Connection() = default;
    virtual void abort() = 0;
};

struct Proxy::Impl {
    Settings settings;
    boost::asio::io_context* io = nullptr;  // the run's loop (Proxy::serve), not owned
    std::optional<boost::asio::ip::tcp::acceptor> acceptor;
    // Says when a stopping proxy's last connection is gone (stop()).
    Drain drain;
    // A connection ended (its destructor, on the loop): the last one of a stopping
    // proxy says the proxy is drained.
    void session_gone() {
        if (stopping && sessions.empty()) drain.done();
    }
    sys::HostLog log;  // --net-log (sys/host_file.hpp): its fd() is -1 without one
    std::mutex log_mu;
    util::LogLimiter log_limit;  // deny lines of a flood are counted, not written (log_mu)
    std::atomic<std::uint64_t> allowed{0}, denied{0};
    // What was refused (kind "policy") or failed for the sandbox ("unresolved",
    // "unreachable"): the run's summary and `agentjail log`. `method` and `path`
    // when a request was refused rather than its destination.
    std::mutex refusals_mu;
    RefusalTally refusals;
    void refused(const char* kind, const std::string& host, std::uint16_t port, const std::string& method,
                 const std::string& path, const std::string& reason, const std::string& rule);
    std::unordered_set<Connection*> sessions;  // io thread only
    size_t pipes_open = 0;                     // splice pipes of the run (io thread only)
    // The proxy's own failure during the run (Counters::failure); set on the io thread.
    std::mutex failure_mu;
    std::string failure;
    void fail(const std::string& why);
    // The host's own interface addresses (refreshed at most once a second), which
    // the proxy treats like loopback: they reach the host's services.
    std::vector<Address> host_addresses;
    std::chrono::steady_clock::time_point host_addresses_read{};
    const std::vector<Address>& own_addresses();
    bool stopping = false;                     // io thread only
    bool stopped = false;
    // Secrets: their values (read in serve(), index as settings.secrets) and the
    // TLS client context for upstreams of requests that carry one or that are
    // intercepted.
    std::vector<std::string> secret_values;
    // Made on the first upstream TLS leg (io thread only): reading the system's CA
    // file parses about 140 certificates, 15 ms that a run which never connects
    // should not pay. Throws what asio throws when the trust store cannot be set up.
    boost::asio::ssl::context& tls_client();
    std::optional<boost::asio::ssl::context> tls_ctx;
    // The per-run CA (prepare_ca()); null when nothing is intercepted.
    std::unique_ptr<Ca> ca;
    std::string ca_dir;  // the directory of settings.ca_bundle_host, removed at the end

    void accept();
    // A connection over settings.max_connections (the proxy's or a gateway's
    // listener): a 503 to the client, then closed, never queued.
    void refuse_over_limit(boost::asio::ip::tcp::socket s);
    // The gateways' listeners inside the sandbox (gateway.cc): each connection is
    // relayed to the gateway's origin on the host as an intercepted exchange.
    std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> gateway_acceptors;
    void accept_gateway(boost::asio::ip::tcp::acceptor& a, size_t gateway);
    const Gateway* gateway_for(const std::string& host, std::uint16_t port) const;
    // One JSON line to the log: fields escaped (util::inert_json), deny lines
    // through the limiter; flush_log_summaries() writes the counts it holds.
    void write_log(const nlohmann::ordered_json& j);
    void flush_log_summaries();
    void write_summaries(double now);                  // log_mu held
    void write_line(const nlohmann::ordered_json& j);  // log_mu held
    // The secrets bound to host:port (placeholder, value, the headers they may go in).
    std::vector<SecretUse> secrets_for(const std::string& host, std::uint16_t port) const;
};

// What a session hands over to an exchange once the destination is connected.
struct ExchangeStart {
    enum class Kind {
        tunnel,  // CONNECT or SOCKS5 answered: TLS (intercepted) or plain HTTP follows
        plain,   // an absolute-form request with per-request rules or secrets
    };
    ExchangeStart(boost::asio::ip::tcp::socket c, boost::asio::ip::tcp::socket u)
        : client(std::move(c)), upstream(std::move(u)) {}
    Kind kind = Kind::tunnel;
    boost::asio::ip::tcp::socket client;
    boost::asio::ip::tcp::socket upstream;
    std::string host;                 // the checked destination (normalised)
    std::uint16_t port = 0;           // as the client asked for it
    std::uint16_t upstream_port = 0;  // where the proxy connected (443 for a secret's port 80)
    std::string client_bytes;         // read from the client beyond what was parsed
    Request first;                    // plain: the request, already checked
    std::string first_path;           // plain: its normalised path and query
    bool upstream_tls = false;        // the upstream leg is TLS (plain: for secrets; gateway: https)
    // A loopback gateway's origin (proxy.hpp Gateway): secrets go in although the
    // upstream leg is plain HTTP, since it never leaves the machine.
    bool inject_plain = false;
    std::string method;               // the tunnel's "CONNECT" or "SOCKS5", for its log line
    std::string rule;                 // the rule that allowed the destination
    std::chrono::system_clock::time_point started;
};

// How long the proxy waits for an upstream connection (a session's, a gateway's).
inline constexpr auto connect_timeout = std::chrono::seconds(15);

// Every socket of the run gets the run's kernel buffer sizes (proxy.cc).
void bound_buffers(int fd, const Bounds& b);

// An address of the policy as asio's (proxy.cc).
boost::asio::ip::address to_asio(const Address& a);

// Serves one client connection of the proxy (session.cc), on its io thread.
void start_session(Proxy::Impl& px, boost::asio::ip::tcp::socket client);

// Runs the exchange on the proxy's io thread (call it there).
void start_exchange(Proxy::Impl& px, ExchangeStart&& start);

}  // namespace agentjail::net
