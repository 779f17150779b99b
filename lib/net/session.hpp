// SPDX-License-Identifier: Apache-2.0
// One client connection of the proxy (a Session), private to lib/net: its state and
// its steps, the request read and checked (session.cc) and the destination connected
// and relayed (session_relay.cc).
#pragma once

#include "net/proxy_impl.hpp"

#include <boost/asio.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace agentjail::net {

// Takes a SIGPIPE this thread raised off its pending set. The proxy's thread blocks
// SIGPIPE (serve()), so a splice(2) into a socket the client closed, which raises
// SIGPIPE unlike send(MSG_NOSIGNAL), leaves it pending on this thread instead of
// killing the process; it is taken here so that it is not left pending. A
// process-wide SIG_IGN is not used: the library may live in a host that wants its
// own SIGPIPE disposition.
// A pipe for splice(2) relaying, of the run's pipe size (a small pipe: the user's
// pipe quota, pipe-user-pages-soft, is shared by all of the user's programs, and a
// user over it gets 8 KiB pipes everywhere). Not open when the run's pipe budget is
// spent or pipes cannot be had (EMFILE): then the relay copies through a buffer.
struct SplicePipe {
    int r = -1, w = -1;
    size_t pending = 0;  // bytes in the pipe, not yet written on
    size_t* open_count = nullptr;
    SplicePipe() = default;
    bool make(size_t& count, const Bounds& b) {
        if (count >= b.max_pipes) return false;
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
        r = fds[0];
        w = fds[1];
        (void)::fcntl(w, F_SETPIPE_SZ, b.pipe_size);
        open_count = &count;
        ++count;
        return true;
    }
    ~SplicePipe() { close(); }
    SplicePipe(const SplicePipe&) = delete;
    SplicePipe& operator=(const SplicePipe&) = delete;
    bool open() const { return r >= 0; }
    void close() {
        if (r >= 0) ::close(r);
        if (w >= 0) ::close(w);
        if (r >= 0 && open_count != nullptr) --*open_count;
        r = w = -1;
        open_count = nullptr;
    }
};

// One client connection, from its first byte to the end of its relay.
class Session : public Connection, public std::enable_shared_from_this<Session> {
public:
    Session(Proxy::Impl& px, boost::asio::ip::tcp::socket client);
    ~Session();

    void start();
    void abort() override;

private:
    enum class Proto { unknown, http, socks };

    // The request read and checked, refusals and the log line (session.cc).
    void arm_timer(std::chrono::seconds d);
    void read_head();
    void on_head_data();
    void on_socks_data();
    void socks_fail(unsigned char code, const std::string& why);
    void decide(const std::string& raw_host, std::uint16_t port);
    void pick_secrets();
    void on_resolved(const boost::system::error_code& ec,
                     boost::asio::ip::tcp::resolver::results_type results);
    void deny(const std::string& reason, const std::string& rule);
    void refuse(int code, const char* status, const std::string& body, const std::string& reason);
    void reply_and_close(const std::string& bytes, const std::string& reason);
    // An allowed destination that failed upstream: `error` is "unresolved" or
    // "unreachable" (the response's header, the log's "error", the run's tally).
    void reply_error(int code, const char* status, const std::string& body, unsigned char socks_code,
                     const char* error);
    void write_and_close(std::string bytes);
    void log();

    // The destination connected, then handed to an exchange or relayed both ways
    // (session_relay.cc).
    void allow_and_connect();
    void connect_next();
    void hand_over();
    void on_connected();
    void relay_both();
    void pump(boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to, SplicePipe& p,
              std::uint64_t& count);
    template <class From, class To>
    void relay(From& from, To& to, std::vector<char>& buf, std::uint64_t& count);

    Proxy::Impl& px_;
    boost::asio::ip::tcp::socket client_;
    boost::asio::ip::tcp::socket upstream_;
    boost::asio::ip::tcp::resolver resolver_;
    boost::asio::steady_timer timer_;
    std::chrono::system_clock::time_point started_;
    Proto proto_ = Proto::unknown;
    int socks_stage_ = 0;
    std::unique_ptr<std::array<char, 4096>> head_buf_;
    std::string inbuf_;
    std::string leftover_;
    Request req_;
    std::string host_, method_, reason_, rule_, last_error_;
    std::string error_;  // reply_error()'s kind: the log's "error"
    std::uint16_t port_ = 0;
    bool allowed_ = false;
    bool logged_ = false;
    bool connecting_ = false;
    bool timed_out_ = false;
    bool tls_upstream_ = false;
    bool gateway_ = false;    // allowed as a model gateway's origin (no range check)
    bool exchange_ = false;   // plain HTTP whose requests the exchange forwards
    bool intercept_ = false;  // a tunnel the exchange intercepts
    std::uint16_t connect_port_ = 0;
    std::string path_;        // the request's normalised path (plain HTTP), for the log
    std::string first_path_;  // with its query, as it goes upstream
    std::vector<boost::asio::ip::tcp::endpoint> endpoints_;
    size_t next_endpoint_ = 0;
    int closed_dirs_ = 0;
    std::uint64_t bytes_up_ = 0, bytes_down_ = 0;
    std::vector<char> up_buf_, down_buf_;
    SplicePipe up_pipe_, down_pipe_;
};

}  // namespace agentjail::net
