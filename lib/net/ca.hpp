// SPDX-License-Identifier: Apache-2.0
// The per-run certificate authority of TLS interception: a CA key and certificate
// made in the supervisor's memory, and leaf certificates for the intercepted hosts,
// minted on demand and cached, each in a server TLS context that offers only
// HTTP/1.1 by ALPN.
#pragma once

#include "base/error.hpp"

#include <memory>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace agentjail::net {

class Ca {
public:
    // A fresh CA (EC P-256, valid 30 days from an hour ago, path length 0), named
    // "agentjail run CA <random>".
    static Result<std::unique_ptr<Ca>> create();
    ~Ca();
    Ca(const Ca&) = delete;
    Ca& operator=(const Ca&) = delete;

    // The CA certificate, PEM. The key has no accessor: it never leaves this object.
    const std::string& cert_pem() const;
    // A server context with a leaf certificate for `host` (a DNS name or an IP
    // address in canonical text), signed by the CA; owned by the Ca, cached (at most
    // a few thousand hosts), valid until the Ca is destroyed. nullptr with `why` set
    // when OpenSSL fails.
    boost::asio::ssl::context* server_context(const std::string& host, std::string& why);

    struct Impl;

private:
    explicit Ca(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace agentjail::net
