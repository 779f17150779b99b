// SPDX-License-Identifier: Apache-2.0
// SOCKS5 greetings and CONNECT requests, as the proxy reads them: the input is the
// client's bytes, greeting first. Invariants: what is accepted fits in what was
// read; a request names a host and a port other than 0, and a refusal carries a
// reply code of RFC 1928 and a reason.
#include "fuzz.hpp"

#include "netrules/socks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace agentjail::net;
    std::string_view buf = ajfuzz::as_text(data, size);
    SocksGreeting g = parse_socks_greeting(buf);
    if (g.status == ParseStatus::ok) {
        AJ_FUZZ_CHECK(g.size >= 2 && g.size <= buf.size());
        buf.remove_prefix(g.size);
    }
    SocksRequest r = parse_socks_request(buf);
    switch (r.status) {
    case ParseStatus::ok:
        AJ_FUZZ_CHECK(r.size >= 8 && r.size <= buf.size());  // 4 + 1 + a 1-byte name + 2
        AJ_FUZZ_CHECK(!r.host.empty() && r.port != 0);
        AJ_FUZZ_CHECK(r.host.find('\0') == std::string::npos);
        break;
    case ParseStatus::bad:
    case ParseStatus::too_large:
        AJ_FUZZ_CHECK(r.reply == 1 || r.reply == 7 || r.reply == 8);
        AJ_FUZZ_CHECK(!r.error.empty());
        break;
    case ParseStatus::incomplete: AJ_FUZZ_CHECK(buf.size() < max_socks_bytes); break;
    }
    return 0;
}
