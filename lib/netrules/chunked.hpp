// SPDX-License-Identifier: Apache-2.0
// The chunked transfer coding (RFC 9112 7.1) as the proxy relays it, one line at a
// time: the relay reads a CRLF-terminated line, hands it here and learns what the
// line was. Strict: a malformed size, a stray CR, LF or NUL inside a line (a server
// that ends lines at a bare LF would read the rest as a request the proxy never
// checked), anything but CRLF after a chunk's data, or too many trailers breaks the
// stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace agentjail::net {

// A chunk-size or trailer line longer than this breaks the stream.
inline constexpr size_t max_chunk_line = 4096;

class ChunkedFraming {
public:
    enum class Line {
        chunk,      // a size line of a chunk with data: chunk_size() bytes follow
        chunk_end,  // the CRLF after a chunk's data
        last,       // the size line "0": trailers follow, up to an empty line
        trailer,    // one trailer field (read, not passed on)
        end,        // the empty line that ends the body
        bad,        // the stream is broken: stop relaying
    };

    // One line as read, with its CRLF. After `chunk`, the caller relays
    // chunk_size() bytes of data and then calls data_done().
    Line on_line(std::string_view line);
    void data_done() { state_ = State::chunk_end; }

    std::uint64_t chunk_size() const { return size_; }
    // The size as sent on: the sender's hex digits without extensions or padding.
    std::string_view size_text() const { return {digits_, ndigits_}; }

private:
    enum class State { size, data, chunk_end, trailers, done, broken };
    State state_ = State::size;
    std::uint64_t size_ = 0;
    char digits_[16] = {};
    size_t ndigits_ = 0;
    int trailers_ = 0;
};

}  // namespace agentjail::net
