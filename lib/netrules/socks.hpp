// SPDX-License-Identifier: Apache-2.0
// The proxy's SOCKS5 messages (RFC 1928): the client's greeting and its CONNECT
// request, parsed from the bytes read so far. No authentication, CONNECT only;
// names are resolved by the proxy (socks5h), so the sandbox needs no resolver.
#pragma once

#include "netrules/http.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace agentjail::net {

// A SOCKS5 greeting or request is never longer than this (4 + 1 + 255 + 2 bytes
// for a request, 2 + 255 for a greeting): more is refused as malformed.
inline constexpr size_t max_socks_bytes = 600;

struct SocksGreeting {
    ParseStatus status = ParseStatus::incomplete;  // ok, incomplete or too_large
    size_t size = 0;       // bytes of the greeting
    bool no_auth = false;  // the client offered "no authentication" (0x00)
};
// The greeting at the start of buf: version, method count, methods. Its version
// byte (0x05) is what told the proxy the connection speaks SOCKS5.
SocksGreeting parse_socks_greeting(std::string_view buf);

struct SocksRequest {
    ParseStatus status = ParseStatus::incomplete;  // ok, incomplete, bad, too_large
    size_t size = 0;        // bytes of the request (what follows is the tunnel's)
    std::string host;       // the name as sent, or an address's text form
    std::uint16_t port = 0;
    unsigned char reply = 0;  // for bad: the reply code (RFC 1928 6: 1, 7 or 8)
    std::string error;        // for bad and too_large
};
// The CONNECT request at the start of buf.
SocksRequest parse_socks_request(std::string_view buf);

}  // namespace agentjail::net
