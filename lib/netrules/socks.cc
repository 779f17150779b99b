// SPDX-License-Identifier: Apache-2.0
#include "netrules/socks.hpp"

#include "netrules/address.hpp"

#include <algorithm>

namespace agentjail::net {

SocksGreeting parse_socks_greeting(std::string_view buf) {
    SocksGreeting g;
    const auto* b = reinterpret_cast<const unsigned char*>(buf.data());
    size_t n = buf.size();
    if (n > max_socks_bytes) {
        g.status = ParseStatus::too_large;
        return g;
    }
    if (n < 2 || n < 2u + b[1]) return g;
    for (size_t i = 0; i < b[1]; ++i) g.no_auth = g.no_auth || b[2 + i] == 0x00;
    g.size = 2u + b[1];
    g.status = ParseStatus::ok;
    return g;
}

SocksRequest parse_socks_request(std::string_view buf) {
    SocksRequest r;
    auto fail = [&r](unsigned char code, const char* why, ParseStatus status = ParseStatus::bad) {
        r.status = status;
        r.reply = code;
        r.error = why;
        return r;
    };
    const auto* b = reinterpret_cast<const unsigned char*>(buf.data());
    size_t n = buf.size();
    if (n > max_socks_bytes) return fail(1, "malformed SOCKS5 request", ParseStatus::too_large);
    if (n < 5) return r;
    if (b[0] != 0x05) return fail(1, "malformed SOCKS5 request");
    size_t need = 0;
    switch (b[3]) {
    case 0x01: need = 4 + 4 + 2; break;
    case 0x03: need = 4 + 1 + b[4] + 2; break;
    case 0x04: need = 4 + 16 + 2; break;
    default: return fail(8, "SOCKS5 address type not supported");
    }
    if (n < need) return r;
    if (b[1] != 0x01) return fail(7, "only the SOCKS5 CONNECT command is supported");
    if (b[3] == 0x03) {
        r.host.assign(reinterpret_cast<const char*>(b + 5), b[4]);
        if (r.host.empty() || r.host.find('\0') != std::string::npos)
            return fail(1, "malformed SOCKS5 host name");
    } else {
        Address a;
        a.v6 = b[3] == 0x04;
        std::copy(b + 4, b + (a.v6 ? 20 : 8), a.bytes.begin());
        r.host = a.to_string();
    }
    r.port = static_cast<std::uint16_t>((b[need - 2] << 8) | b[need - 1]);
    if (r.port == 0) return fail(1, "port 0");
    r.size = need;
    r.status = ParseStatus::ok;
    return r;
}

}  // namespace agentjail::net
