// SPDX-License-Identifier: Apache-2.0
// The proxy on the run's event loop: accepting on the socket inside the sandbox's
// network namespace, its log, the CA, the counters;
// each connection is a session (session.cc), and connections whose requests must be
// checked one by one go on in exchange.cc. Boost.Asio stays inside lib/net.
#include <utility>

#include "net/proxy_impl.hpp"

#include "base/time.hpp"

#include "netrules/http.hpp"
#include "net/secret_source.hpp"
#include "netrules/socks.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"
#include "sys/json_lines.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <ifaddrs.h>
#include <pthread.h>
#include <signal.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_set>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// Bounds the kernel's buffers of one socket (autotuning would grow each to
// tcp_rmem/tcp_wmem's maximum, megabytes, for every connection of the sandbox).
void bound_buffers(int fd, const Bounds& b) {
    int v = b.socket_buffer;
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

void Proxy::Impl::write_log(const nlohmann::ordered_json& j) {
    if (log.fd() < 0) return;
    std::lock_guard lock(log_mu);
    double now = util::monotonic_s();
    // A flood of refused attempts (the sandbox can make them as fast as it can
    // connect) writes a few lines of each kind and counts the rest; the counters
    // of the result record are kept by the callers, exact either way. Allowed
    // lines are the audit of real traffic and are all written.
    if (j.value("decision", "") == "deny") {
        nlohmann::ordered_json kind;
        for (const char* k : {"host", "port", "method", "path", "reason", "rule"})
            if (j.contains(k)) kind[k] = j[k];
        bool admitted = log_limit.admit(
            kind.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace), now);
        if (log_limit.summary_due(now)) write_summaries(now);
        if (!admitted) return;
    }
    write_line(j);
}

void Proxy::Impl::flush_log_summaries() {
    if (log.fd() < 0) return;
    std::lock_guard lock(log_mu);
    write_summaries(util::monotonic_s());
}

void Proxy::Impl::write_summaries(double now) {
    nlohmann::ordered_json base;
    base["time"] = base::iso8601_now();
    base["decision"] = "deny";
    util::write_summaries(log_limit, now, base,
                          [this](const nlohmann::ordered_json& s) { write_line(s); });
}

void Proxy::Impl::write_line(const nlohmann::ordered_json& j) {
    // Also written from the caller's thread (sessions that end while the proxy is
    // destroyed): the sink blocks SIGPIPE around the write wherever it runs.
    (void)sys::write_json_line(log.fd(), j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace));
}

const Gateway* Proxy::Impl::gateway_for(const std::string& host, std::uint16_t port) const {
    for (const auto& g : settings.gateways)
        if (g.host == host && g.port == port) return &g;
    return nullptr;
}

std::vector<SecretUse> Proxy::Impl::secrets_for(const std::string& host, std::uint16_t port) const {
    std::vector<SecretUse> out;
    const auto& secrets = settings.secrets;
    for (size_t i = 0; i < secrets.size() && i < secret_values.size(); ++i) {
        bool match = false;
        for (const auto& r : secrets[i].hosts)
            match = match || matches(r.pattern, host, port, false);
        if (match) out.push_back({secrets[i].placeholder, secret_values[i], secrets[i].headers});
    }
    return out;
}

asio::ip::address to_asio(const Address& a) {
    if (!a.v6) {
        asio::ip::address_v4::bytes_type b;
        std::copy(a.bytes.begin(), a.bytes.begin() + 4, b.begin());
        return asio::ip::address_v4(b);
    }
    asio::ip::address_v6::bytes_type b;
    std::copy(a.bytes.begin(), a.bytes.end(), b.begin());
    return asio::ip::address_v6(b);
}

void Proxy::Impl::refuse_over_limit(tcp::socket s) {
    auto sock = std::make_shared<tcp::socket>(std::move(s));
    auto msg = std::make_shared<std::string>(
        simple_response(503, "Service Unavailable",
                        "agentjail: more than " + std::to_string(settings.max_connections) +
                            " connections at once"));
    asio::async_write(*sock, asio::buffer(*msg), [sock, msg](const error_code&, size_t) {
        error_code e;
        sock->close(e);
    });
}

void Proxy::Impl::accept() {
    acceptor->async_accept([this](const error_code& ec, tcp::socket s) {
        if (stopping) return;
        if (ec) {
            if (ec == asio::error::operation_aborted) return;
            // EMFILE and friends: back off briefly instead of spinning. Anything else
            // means the listening socket is broken: the sandbox has lost its way out,
            // and the result record says so.
            int e = ec.value();
            if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM && e != ECONNABORTED &&
                e != EINTR && e != EPROTO && e != EPERM && e != ETIMEDOUT) {
                fail("accept on the sandbox's proxy socket: " + ec.message());
                return;
            }
            auto t = std::make_shared<asio::steady_timer>(*io, std::chrono::milliseconds(50));
            t->async_wait([this, t](const error_code&) {
                if (!stopping) accept();
            });
            return;
        }
        if (sessions.size() >= settings.max_connections) {
            // Over the per-sandbox limit: answered and closed, never queued.
            denied++;
            nlohmann::ordered_json j;
            j["time"] = base::iso8601_now();
            j["host"] = "";
            j["port"] = 0;
            j["method"] = "?";
            j["decision"] = "deny";
            j["reason"] =
                "more than " + std::to_string(settings.max_connections) + " connections at once";
            j["rule"] = "default";
            j["bytes_up"] = 0;
            j["bytes_down"] = 0;
            write_log(j);
            refuse_over_limit(std::move(s));
        } else {
            (void)fault::hit("proxy.after-accept");
            start_session(*this, std::move(s));
        }
        accept();
    });
}

namespace {

Result<std::string> read_secret(const Secret& sec) {
    std::string why;
    auto spec = parse_source(sec.source, &why);
    if (!spec) return Error(ErrorKind::invalid_input, EINVAL, "secret " + sec.name + ": " + why);
    return read_source(*spec, sec.name);
}

}  // namespace

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Proxy::~Proxy() {
    stop();
    // Sessions still queued in the io_context log from their destructors: the log
    // stays open until they are gone.
    impl_->acceptor.reset();
    impl_->gateway_acceptors.clear();
}

namespace {

// The CAs the proxy itself trusts for upstreams (what set_default_verify_paths
// reads: $SSL_CERT_FILE, else OpenSSL's default file), so that the sandbox trusts
// the same CAs plus the run's.
std::string system_bundle() {
    const char* env = ::getenv(X509_get_default_cert_file_env());
    std::string path = env != nullptr && *env != '\0' ? env : X509_get_default_cert_file();
    sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    std::string out;
    if (!fd) return out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > (64u << 20)) break;
    }
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
}

}  // namespace

Result<void> Proxy::prepare_ca() {
    Impl& m = *impl_;
    if (m.settings.ca_bundle_host.empty() || m.ca) return {};
    auto ca = Ca::create();
    if (!ca) return std::move(ca).error();
    const std::string& file = m.settings.ca_bundle_host;
    std::string dir = file.substr(0, file.rfind('/'));
    auto fail = [&](const std::string& what) {
        int err = errno;
        return Error(ErrorKind::setup, err,
                     "network proxy: CA bundle " + what + ": " + util::errno_text(err));
    };
    // A fresh directory (mkdir fails on one that exists, so nobody can have put a
    // file or a link there first), then the file, exclusively.
    if (::mkdir(dir.c_str(), 0700) != 0) return fail(dir);
    m.ca_dir = dir;
    sys::UniqueFd fd(::open(file.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644));
    if (!fd) return fail(file);
    std::string text = system_bundle() +
                       "# agentjail: this run's CA (TLS interception by the proxy)\n" +
                       (*ca)->cert_pem();
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
        ssize_t n = ::write(fd.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail(file);
        p += n;
        left -= static_cast<size_t>(n);
    }
    m.ca = std::move(*ca);
    return {};
}

Result<std::unique_ptr<Proxy>> Proxy::create(const Settings& settings) {
    auto impl = std::make_unique<Impl>();
    impl->settings = settings;
    if (impl->settings.max_connections == 0) impl->settings.max_connections = 1;
    if (!settings.log_path.empty()) {
        // Never through a link, a FIFO or the sandbox's own files (sys/host_file.hpp).
        auto log = sys::HostLog::open(settings.log_path, sys::HostWrite::append, settings.log_rules, "network log");
        if (!log) return std::move(log).error();
        impl->log = std::move(*log);
    }
    return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Result<void> Proxy::put_log_in_place() { return impl_->log.put_in_place(); }

Result<void> Proxy::serve(boost::asio::io_context& io, sys::UniqueFd listener,
                          std::vector<sys::UniqueFd> gateway_listeners) {
    if (!listener) return Error(ErrorKind::internal, EBADF, "network proxy: no listening socket");
    if (impl_->io != nullptr || impl_->stopped)
        return Error(ErrorKind::internal, EINVAL, "network proxy: already serving");
    for (const auto& sec : impl_->settings.secrets) {
        auto v = read_secret(sec);
        if (!v) return std::move(v).error();
        impl_->secret_values.push_back(std::move(*v));
    }
    try {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
            int err = errno;
            return Error(ErrorKind::setup, err,
                         "network proxy: getsockname: " + util::errno_text(err));
        }
        tcp protocol = ss.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
        // Accepted sockets inherit the listener's buffer sizes (and their lock
        // against autotuning) from their first packet on.
        bound_buffers(listener.get(), impl_->settings.bounds);
        impl_->acceptor.emplace(io);
        impl_->acceptor->assign(protocol, listener.release());
        impl_->accept();
        size_t next = 0;
        for (size_t i = 0; i < impl_->settings.gateways.size(); ++i) {
            if (!impl_->settings.gateways[i].listener) continue;
            if (next >= gateway_listeners.size() || !gateway_listeners[next])
                return Error(ErrorKind::internal, EBADF,
                             "network proxy: no listener for the gateway " +
                                 impl_->settings.gateways[i].var);
            sys::UniqueFd fd = std::move(gateway_listeners[next++]);
            bound_buffers(fd.get(), impl_->settings.bounds);
            auto& a =
                impl_->gateway_acceptors.emplace_back(std::make_unique<tcp::acceptor>(io));
            a->assign(impl_->settings.gateways[i].address.v6 ? tcp::v6() : tcp::v4(), fd.release());
            impl_->accept_gateway(*a, i);
        }
    } catch (const std::exception& e) {
        return Error(ErrorKind::setup, 0, std::string("network proxy: ") + e.what());
    }
    // Served: from now on stop() ends what runs on the loop (a proxy that failed
    // here has nothing of its own running there yet).
    impl_->io = &io;
    return {};
}

Counters Proxy::stop() {
    Impl& m = *impl_;
    if (!m.stopped) {
        m.stopped = true;
        if (m.io != nullptr) {
            m.drain.stop_on(*m.io, [&m] {
                m.stopping = true;
                error_code ec;
                if (m.acceptor) m.acceptor->close(ec);
                for (auto& a : m.gateway_acceptors) a->close(ec);
                std::vector<Connection*> all(m.sessions.begin(), m.sessions.end());
                for (Connection* s : all) s->abort();
                m.session_gone();  // none open: drained already
            });
        }
        // What the limiter counted but did not write, so the log ends with the totals.
        m.flush_log_summaries();
        // The sandbox is gone (stop() comes after its wait()): its CA bundle goes now,
        // before the run's journal (guard/leftovers.hpp) is removed.
        if (!m.ca_dir.empty()) {
            (void)::unlink(m.settings.ca_bundle_host.c_str());
            (void)::rmdir(m.ca_dir.c_str());
        }
    }
    return counters();
}

Counters Proxy::counters() const {
    Counters c{impl_->allowed.load(), impl_->denied.load(), {}, {}, 0};
    {
        std::lock_guard lock(impl_->failure_mu);
        c.failure = impl_->failure;
    }
    std::lock_guard lock(impl_->refusals_mu);
    c.refusals = impl_->refusals.list();
    c.refusals_more = impl_->refusals.more();
    return c;
}

namespace {
// A TOML basic string: JSON's string escapes are TOML's (control characters as \uXXXX).
std::string toml_quoted(const std::string& s) {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

void Proxy::Impl::refused(const char* kind, const std::string& host, std::uint16_t port, const std::string& method,
                          const std::string& path, const std::string& reason, const std::string& rule) {
    const bool web_port = port == 80 || port == 443;
    std::string where = host.empty() ? std::string("(no destination)") : host + ":" + std::to_string(port);
    std::string what = where;
    const bool request = !path.empty() && method != "CONNECT";
    if (request) what += " " + method + " " + path;
    // What would allow it: a name no rule allows, --allow-host; a request a rule's
    // methods or paths refuse, a rule that names them; a deny rule, its removal.
    // Nothing for an address (pin the name instead) or a failure upstream.
    std::string allow, key, value;
    const bool named = !host.empty() && !parse_numeric_host(host) && check_name_syntax(host).empty();
    if (std::string(kind) == "policy" && named) {
        const std::string spec = web_port ? host : host + ":" + std::to_string(port);
        if (rule.empty() || rule == "default") {
            allow = "--allow-host " + spec;
            key = "network.allow";
            value = toml_quoted(spec);
        } else if (request) {
            value = "{ host = " + toml_quoted(spec) + ", methods = [" + toml_quoted(method) + "], paths = [" +
                    toml_quoted(path) + "] }";
            allow = value + " in [network] allow (" + rule + " does not allow it)";
            key = "network.allow";
        } else {
            allow = "the deny rule " + rule + " refuses it";
        }
    }
    std::lock_guard lock(refusals_mu);
    refusals.add("network", std::move(what), std::string(kind) == "policy" ? reason : std::string(kind) + ": " + reason,
                 std::move(allow), std::move(key), std::move(value));
}

asio::ssl::context& Proxy::Impl::tls_client() {
    if (!tls_ctx) {
        asio::ssl::context ctx(asio::ssl::context::tls_client);
        // The system's CAs (SSL_CERT_FILE / SSL_CERT_DIR are honoured); peers are verified.
        ctx.set_default_verify_paths();
        ctx.set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                        asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
        tls_ctx.emplace(std::move(ctx));
    }
    return *tls_ctx;
}

void Proxy::Impl::fail(const std::string& why) {
    {
        std::lock_guard lock(failure_mu);
        if (failure.empty()) failure = "network proxy: " + why;
    }
    nlohmann::ordered_json j;
    j["time"] = base::iso8601_now();
    j["host"] = "";
    j["port"] = 0;
    j["method"] = "?";
    j["decision"] = "error";
    j["reason"] = "network proxy: " + why;
    j["rule"] = "default";
    write_log(j);
}

const std::vector<Address>& Proxy::Impl::own_addresses() {
    auto now = std::chrono::steady_clock::now();
    if (host_addresses_read != std::chrono::steady_clock::time_point{} &&
        now - host_addresses_read < std::chrono::seconds(1))
        return host_addresses;
    host_addresses_read = now;
    // Read where the proxy runs, in the host's network namespace: every address of
    // every interface, whatever its range (a public address of the host's own
    // reaches its services just as 127.0.0.1 does). Kept as it was if the read fails.
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return host_addresses;
    std::vector<Address> out;
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr) continue;
        Address a;
        if (i->ifa_addr->sa_family == AF_INET) {
            const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
            std::memcpy(a.bytes.data(), &in->sin_addr, 4);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
            a.v6 = true;
            std::memcpy(a.bytes.data(), &in6->sin6_addr, 16);
        } else {
            continue;
        }
        if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    }
    ::freeifaddrs(list);
    host_addresses = std::move(out);
    return host_addresses;
}

}  // namespace agentjail::net
