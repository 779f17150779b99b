// SPDX-License-Identifier: Apache-2.0
// A chunked body as the proxy relays it: the input is the byte stream, cut into
// CRLF lines and chunk data the way lib/net/exchange_body.cc reads it. Invariants: a
// chunk's size text reads back as its size, nothing follows `end` or `bad`, and a
// stream that ends cleanly carried exactly the data its size lines announced.
#include "fuzz.hpp"

#include "netrules/chunked.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using agentjail::net::ChunkedFraming;
    std::string_view s = ajfuzz::as_text(data, size);
    ChunkedFraming f;
    std::uint64_t announced = 0, carried = 0;
    for (;;) {
        size_t eol = s.find("\r\n");
        if (eol == std::string_view::npos || eol > agentjail::net::max_chunk_line + 8) return 0;
        std::string_view line = s.substr(0, eol + 2);
        s.remove_prefix(eol + 2);
        switch (f.on_line(line)) {
        case ChunkedFraming::Line::bad:
            // Broken for good: no later line is accepted.
            AJ_FUZZ_CHECK(f.on_line("0\r\n") == ChunkedFraming::Line::bad);
            return 0;
        case ChunkedFraming::Line::chunk: {
            std::uint64_t n = f.chunk_size();
            AJ_FUZZ_CHECK(n > 0);
            std::uint64_t back = std::stoull(std::string(f.size_text()), nullptr, 16);
            AJ_FUZZ_CHECK(back == n);
            announced += n;
            if (n > s.size()) return 0;  // the stream ends inside the data
            carried += n;
            s.remove_prefix(n);
            f.data_done();
            break;
        }
        case ChunkedFraming::Line::end:
            AJ_FUZZ_CHECK(announced == carried);
            AJ_FUZZ_CHECK(f.on_line("\r\n") == ChunkedFraming::Line::bad);
            return 0;
        case ChunkedFraming::Line::chunk_end:
        case ChunkedFraming::Line::last:
        case ChunkedFraming::Line::trailer: break;
        }
    }
}
