// SPDX-License-Identifier: Apache-2.0
// Response heads from an upstream and the framing of their bodies, for each request
// method that changes it. Invariants: an accepted head fits in the buffer; a body
// is never both counted and chunked; HEAD, 1xx, 204 and 304 have none.
#include "fuzz.hpp"

#include "netrules/http.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace agentjail::net;
    if (size > 2 * max_head_size) return 0;
    std::string_view buf = ajfuzz::as_text(data, size);
    ResponseParse r = parse_response_head(buf);
    if (r.status != ParseStatus::ok) return 0;
    AJ_FUZZ_CHECK(r.head_size > 0 && r.head_size <= buf.size());
    for (std::string_view method : {"GET", "HEAD", "POST", "CONNECT"}) {
        Body b;
        std::string why;
        if (!response_body(r.response, method, b, why)) {
            AJ_FUZZ_CHECK(!why.empty());
            continue;
        }
        int s = r.response.status;
        if (method == "HEAD" || (s >= 100 && s < 200) || s == 204 || s == 304)
            AJ_FUZZ_CHECK(b.framing == Framing::none);
        if (b.framing != Framing::length) AJ_FUZZ_CHECK(b.length == 0);
    }
    return 0;
}
