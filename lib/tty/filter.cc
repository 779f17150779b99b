// SPDX-License-Identifier: Apache-2.0
// The relay's output filter: a byte-at-a-time state machine after ECMA-48 (the
// states xterm and tmux share), conservative where terminals differ: a string is
// held to end later rather than sooner, so nothing a terminal still reads as part of
// a DCS or OSC is ever passed.
#include "tty/filter.hpp"

#include <cctype>
#include <cstring>

namespace agentjail::tty {

namespace {

constexpr unsigned char ESC = 0x1b;
constexpr unsigned char BEL = 0x07;
constexpr unsigned char CAN = 0x18;
constexpr unsigned char SUB = 0x1a;
constexpr size_t kMaxCsi = 256;

bool starts_with_nocase(const std::string& s, size_t at, const char* prefix) {
    size_t n = std::strlen(prefix);
    if (s.size() - at < n) return false;
    for (size_t i = 0; i < n; ++i)
        if (std::tolower(static_cast<unsigned char>(s[at + i])) != prefix[i]) return false;
    return true;
}

// Whether every byte of s is text: no C0 or DEL, and bytes from 0x80 up only as
// well-formed UTF-8 (a raw 0x9c or 0x9d inside a title is where an 8-bit terminal
// ends it and starts another sequence).
bool text_only(const std::string& s) {
    int need = 0;
    for (unsigned char c : s) {
        if (need > 0) {
            if (c < 0x80 || c > 0xbf) return false;
            --need;
            continue;
        }
        if (c < 0x20 || c == 0x7f) return false;
        if (c < 0x80) continue;
        if (c >= 0xc2 && c <= 0xdf)
            need = 1;
        else if (c >= 0xe0 && c <= 0xef)
            need = 2;
        else if (c >= 0xf0 && c <= 0xf4)
            need = 3;
        else
            return false;
    }
    return need == 0;
}

// Whether an OSC body ("Ps;Pt") acts only on what the terminal shows.
bool osc_allowed(const std::string& body) {
    size_t semi = body.find(';');
    std::string num = body.substr(0, semi);
    if (num.empty() || num.size() > 4) return false;
    for (char c : num)
        if (c < '0' || c > '9') return false;
    int ps = std::stoi(num);
    if (!text_only(body)) return false;
    const bool query = body.find('?') != std::string::npos;
    switch (ps) {
    case 0:
    case 1:
    case 2: return true;  // window and icon titles; their reports (CSI 20/21 t) are dropped
    case 4:
    case 104: return !query;
    case 8: {
        // OSC 8 ; params ; URI. An empty URI closes the link.
        if (semi == std::string::npos) return false;
        size_t uri = body.find(';', semi + 1);
        if (uri == std::string::npos) return false;
        ++uri;
        if (uri == body.size()) return true;
        return starts_with_nocase(body, uri, "https://") ||
               starts_with_nocase(body, uri, "http://") || starts_with_nocase(body, uri, "mailto:");
    }
    default:
        if ((ps >= 10 && ps <= 19) || (ps >= 110 && ps <= 119)) return !query;
        return false;
    }
}

}  // namespace

void OutputFilter::end_osc(std::string& out, bool bel) {
    if (!osc_overflow_ && osc_allowed(osc_)) {
        out += "\x1b]";
        out += osc_;
        if (bel)
            out += static_cast<char>(BEL);
        else
            out += "\x1b\\";
    } else {
        ++dropped_;
    }
    osc_.clear();
    osc_overflow_ = false;
    state_ = State::ground;
}

void OutputFilter::end_csi(unsigned char final_byte, std::string& out) {
    state_ = State::ground;
    if (csi_.size() > kMaxCsi) {
        ++dropped_;
        csi_.clear();
        return;
    }
    if (final_byte == 't') {
        // CSI Ps t: 20 and 21 ask for the icon label and the window title back.
        size_t i = 2;
        int ps = 0;
        bool digits = false;
        while (i < csi_.size() && csi_[i] >= '0' && csi_[i] <= '9') {
            ps = ps * 10 + (csi_[i] - '0');
            digits = true;
            if (ps > 1000) break;
            ++i;
        }
        if (digits && (ps == 20 || ps == 21)) {
            ++dropped_;
            csi_.clear();
            return;
        }
    }
    out += csi_;
    out += static_cast<char>(final_byte);
    csi_.clear();
}

// A C1 control (U+0080-U+009F) written as UTF-8 (C2 80-C2 9F) is what a terminal
// that honours C1 in UTF-8 reads as its 7-bit form, ESC followed by the control
// minus 0x40 (U+009D is ESC ], OSC): it is judged as that form. A raw C1 byte
// (0x80-0x9f outside a UTF-8 sequence, what an 8-bit terminal reads as a control)
// is dropped, and one inside a sequence ends the sequence, dropped.
void OutputFilter::feed(const char* data, size_t n, std::string& out) {
    out.reserve(out.size() + n);
    for (size_t i = 0; i < n; ++i) {
        const auto b = static_cast<unsigned char>(data[i]);
        if (state_ == State::ground && !c2_pending_ && b < 0x80 && b != ESC) {
            // The common case: copy a run of plain bytes in one go.
            size_t j = i + 1;
            while (j < n && static_cast<unsigned char>(data[j]) < 0x80 && static_cast<unsigned char>(data[j]) != ESC)
                ++j;
            out.append(data + i, j - i);
            i = j - 1;
            utf8_need_ = 0;
            continue;
        }
        if (c2_pending_) {
            c2_pending_ = false;
            if (b >= 0x80 && b <= 0x9f) {
                step(ESC, out);
                step(static_cast<unsigned char>(b - 0x40), out);
                continue;
            }
            // Not a C1 control: the lead byte counts where it stood, then b.
            step(0xc2, out, true);
        }
        step(b, out);
    }
}

void OutputFilter::step(unsigned char b, std::string& out, bool lead_seen) {
    // A C1 control written as UTF-8 starts with C2: the next byte says, wherever the
    // filter stands (inside a sequence too: U+009C, ST, ends an OSC or a DCS there).
    if (b == 0xc2 && !lead_seen) {
        c2_pending_ = true;
        return;
    }
    switch (state_) {
    case State::ground: {
        if (b == ESC) {
            state_ = State::esc;
            utf8_need_ = 0;
            break;
        }
        if (b < 0x80) {
            out += static_cast<char>(b);
            utf8_need_ = 0;
            break;
        }
        if (b <= 0xbf) {
            if (utf8_need_ > 0) {
                --utf8_need_;
                out += static_cast<char>(b);
            } else if (b <= 0x9f) {
                ++dropped_;  // a lone C1 control
            } else {
                out += static_cast<char>(b);
            }
            break;
        }
        utf8_need_ = b >= 0xc2 && b <= 0xdf   ? 1
                     : b >= 0xe0 && b <= 0xef ? 2
                     : b >= 0xf0 && b <= 0xf4 ? 3
                                              : 0;
        out += static_cast<char>(b);
        break;
    }
    case State::esc:
        if (b == '[') {
            csi_.assign("\x1b[");
            state_ = State::csi;
        } else if (b == ']') {
            osc_.clear();
            osc_overflow_ = false;
            state_ = State::osc;
        } else if (b == 'P' || b == '_' || b == '^' || b == 'X') {
            ++dropped_;
            state_ = State::str;
        } else if (b == ESC) {
            out += static_cast<char>(ESC);  // stays in esc for the second one
        } else if (b == CAN || b == SUB) {
            state_ = State::ground;  // cancels the sequence
        } else if (b >= 0x20 && b <= 0x2f) {
            out += static_cast<char>(ESC);
            out += static_cast<char>(b);
            state_ = State::esc_intermediate;
        } else if (b < 0x20) {
            // A C0 control inside a sequence is executed by the terminal.
            out += static_cast<char>(b);
        } else if (b >= 0x80) {
            // Not a sequence: the ESC goes, the byte is judged on its own.
            ++dropped_;
            state_ = State::ground;
            step(b, out);
        } else {
            out += static_cast<char>(ESC);
            out += static_cast<char>(b);
            state_ = State::ground;
        }
        break;
    case State::esc_intermediate:
        if (b == CAN || b == SUB) {
            state_ = State::ground;
            break;
        }
        if (b == ESC) {
            state_ = State::esc;
            break;
        }
        if (b >= 0x80) {
            // The sequence is cut short; the byte is judged on its own (a raw C1 is
            // dropped, never passed inside what a terminal still reads as a sequence).
            state_ = State::ground;
            step(b, out);
            break;
        }
        out += static_cast<char>(b);
        if (b >= 0x30 && b <= 0x7e) state_ = State::ground;
        break;
    case State::csi:
        if (b >= 0x40 && b <= 0x7e) {
            end_csi(b, out);
        } else if (b == ESC) {
            csi_.clear();
            ++dropped_;
            state_ = State::esc;
        } else if (b == CAN || b == SUB) {
            csi_.clear();
            state_ = State::ground;
        } else if (b >= 0x80) {
            // Not part of a CSI: the sequence so far is dropped, the byte judged alone.
            csi_.clear();
            ++dropped_;
            state_ = State::ground;
            step(b, out);
        } else if (b < 0x20) {
            out += static_cast<char>(b);
        } else if (csi_.size() <= kMaxCsi) {
            csi_ += static_cast<char>(b);
        } else {
            csi_.resize(kMaxCsi + 1);  // marked too long: dropped at its end
        }
        break;
    case State::osc:
        if (b == BEL) {
            end_osc(out, true);
        } else if (b == ESC) {
            state_ = State::osc_esc;
        } else if (b == CAN || b == SUB) {
            ++dropped_;
            osc_.clear();
            state_ = State::ground;
        } else if (osc_.size() < kMaxOsc) {
            osc_ += static_cast<char>(b);
        } else {
            osc_overflow_ = true;
        }
        break;
    case State::osc_esc:
        if (b == '\\') {
            end_osc(out, false);
        } else {
            // Not a string terminator: the OSC is abandoned, a new sequence starts.
            ++dropped_;
            osc_.clear();
            state_ = State::esc;
            step(b, out);  // judge b as the byte after ESC
        }
        break;
    case State::str:
        if (b == ESC) state_ = State::str_esc;
        if (b == CAN || b == SUB) state_ = State::ground;
        break;
    case State::str_esc:
        // Only ST ends the string here; an ESC followed by anything else stays
        // inside it (some terminals would end it sooner: dropping more is safe).
        if (b == '\\' || b == CAN || b == SUB)
            state_ = State::ground;
        else if (b != ESC)
            state_ = State::str;
        break;
    }
}

}  // namespace agentjail::tty
