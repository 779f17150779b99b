// SPDX-License-Identifier: Apache-2.0
// The proxy's request heads, in both target forms, and what it does with an accepted
// one: the path normalised, the body's framing decided, the head rewritten for the
// upstream. Invariants: an accepted head fits in the buffer and the limit; the head
// the proxy sends on is one its own strict parser accepts again with the same
// method and path, and with no CR or LF where a header could be smuggled.
#include "fuzz.hpp"

#include "netrules/http.hpp"

#include <string>

namespace {

using namespace agentjail::net;

void check(std::string_view buf, TargetForm form) {
    ParseResult r = parse_request_head(buf, form);
    if (r.status != ParseStatus::ok) {
        if (r.status == ParseStatus::bad || r.status == ParseStatus::too_large)
            AJ_FUZZ_CHECK(!r.error.empty());
        return;
    }
    AJ_FUZZ_CHECK(r.head_size > 0 && r.head_size <= buf.size());
    AJ_FUZZ_CHECK(r.head_size <= max_head_size);
    const Request& q = r.request;
    Body body;
    std::string why;
    (void)request_body(q, body, why);
    if (q.connect) return;
    std::string path, query;
    if (!normalize_path(q.path, path, query, why)) return;
    // Normalising is idempotent: what was checked is what is forwarded.
    std::string path2, query2;
    AJ_FUZZ_CHECK(normalize_path(path + query, path2, query2, why));
    AJ_FUZZ_CHECK(path2 == path && query2 == query);

    std::string host = q.host.empty() ? "example.com" : q.host;
    if (host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) return;
    std::string head = exchange_head(q, path + query, host, q.port == 0 ? 80 : q.port, 80, true);
    ParseResult again = parse_request_head(head, TargetForm::origin);
    AJ_FUZZ_CHECK(again.status == ParseStatus::ok);
    AJ_FUZZ_CHECK(again.head_size == head.size());
    AJ_FUZZ_CHECK(again.request.method == q.method);
    AJ_FUZZ_CHECK(again.request.path == path + query);
    (void)origin_form_head(q);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 2 * max_head_size) return 0;
    std::string_view buf = ajfuzz::as_text(data, size);
    check(buf, TargetForm::absolute);
    check(buf, TargetForm::origin);
    return 0;
}
