// SPDX-License-Identifier: Apache-2.0
#include "netrules/chunked.hpp"

#include <algorithm>

namespace agentjail::net {

namespace {

constexpr int max_trailers = 64;

// Whether the text of a line (before its CRLF) holds no CR, LF or NUL.
bool clean_line(std::string_view text) {
    return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

}  // namespace

ChunkedFraming::Line ChunkedFraming::on_line(std::string_view line) {
    auto broken = [this] {
        state_ = State::broken;
        return Line::bad;
    };
    if (line.size() < 2 || line.size() > max_chunk_line + 2 || line.substr(line.size() - 2) != "\r\n" ||
        !clean_line(line.substr(0, line.size() - 2)))
        return broken();
    std::string_view text = line.substr(0, line.size() - 2);
    switch (state_) {
    case State::size: {
        // Hex digits, then optional whitespace and ";extensions" (dropped).
        std::string_view size = text.substr(0, text.find(';'));
        while (!size.empty() && (size.back() == ' ' || size.back() == '\t')) size.remove_suffix(1);
        if (size.empty() || size.size() > 15 ||
            size.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
            return broken();
        std::uint64_t n = 0;
        for (char c : size) {
            int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
            n = n * 16 + static_cast<std::uint64_t>(d);
        }
        size_ = n;
        ndigits_ = size.size();
        std::copy(size.begin(), size.end(), digits_);
        if (n == 0) {
            state_ = State::trailers;
            return Line::last;
        }
        state_ = State::data;
        return Line::chunk;
    }
    case State::chunk_end:
        if (!text.empty()) return broken();
        state_ = State::size;
        return Line::chunk_end;
    case State::trailers:
        if (text.empty()) {
            state_ = State::done;
            return Line::end;
        }
        if (++trailers_ > max_trailers) return broken();
        return Line::trailer;
    case State::data:  // a line where the data should be: the caller skipped it
    case State::done:
    case State::broken: break;
    }
    return broken();
}

}  // namespace agentjail::net
