// SPDX-License-Identifier: Apache-2.0
// The output filter of the pty relay: drops the terminal sequences that act on the
// user's machine or answer into the input stream, passes everything else unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace agentjail::tty {

// A streaming filter over what the sandbox writes to the user's terminal. State
// carries across calls, so a sequence split between two reads is judged whole.
//
// Dropped (each is an action on the user's machine or on what they type next):
//  - OSC 52 (clipboard read or write), OSC 8 links other than http, https and mailto
//    (a file:// link opens a host path on click), every OSC query ('?' as the value:
//    colour reports answer into the input stream), and every OSC the list below does
//    not name (notifications, cwd reports, iTerm2/kitty file transfer, fonts...);
//  - DCS, APC, PM and SOS strings whole (tmux/screen passthrough, DECRQSS and
//    XTGETTCAP reports, DECUDK key redefinition, kitty graphics);
//  - CSI 20 t and CSI 21 t (icon and window title reports: the title is text the
//    sandbox set, typed back as input, which lands in the user's shell once the run
//    ended);
//  - raw 8-bit C1 controls (0x80-0x9f outside a UTF-8 sequence), which terminals in
//    8-bit mode read as ESC-sequences, and any sequence such a byte cuts short.
// A C1 control written as UTF-8 (U+0080-U+009F, which terminals that honour C1 in
// UTF-8 act on) is judged as its 7-bit form: U+009D as ESC ], U+009B as ESC [,
// U+0090 as ESC P, U+009C as ESC \ (and passed, when it is, in that 7-bit form).
// Passed: text, C0 controls, CSI (cursor, colours, modes), OSC 0/1/2 titles, OSC
// 4/10-19/104/110-119 colour settings (not queries), OSC 8 web links.
class OutputFilter {
public:
    // Appends the filtered form of data to out.
    void feed(const char* data, size_t n, std::string& out);
    // Sequences dropped so far.
    std::uint64_t dropped() const noexcept { return dropped_; }

    // Longest OSC kept for judging; longer ones are dropped whole.
    static constexpr size_t kMaxOsc = 4096;

private:
    enum class State : std::uint8_t {
        ground,
        esc,               // after ESC
        csi,               // ESC [ ... (parameters and intermediates)
        osc,               // ESC ] ... collecting into osc_
        osc_esc,           // ESC inside an OSC: ST (ESC \) or a new sequence
        str,               // DCS/APC/PM/SOS body: dropped
        str_esc,           // ESC inside such a string
        esc_intermediate,  // ESC followed by intermediates (0x20-0x2f), e.g. ESC ( B
    };
    // One byte through the state machine; lead_seen: a C2 already known not to
    // start a C1 control.
    void step(unsigned char b, std::string& out, bool lead_seen = false);
    void end_osc(std::string& out, bool bel);
    void end_csi(unsigned char final_byte, std::string& out);

    State state_ = State::ground;
    int utf8_need_ = 0;  // continuation bytes still expected
    bool c2_pending_ = false;  // a C2 byte read: U+0080-U+009F (C1) or text, by the next byte
    bool osc_overflow_ = false;
    std::string osc_;  // the OSC body (after ESC ])
    std::string csi_;  // the CSI sequence so far, including ESC [
    std::uint64_t dropped_ = 0;
};

}  // namespace agentjail::tty
