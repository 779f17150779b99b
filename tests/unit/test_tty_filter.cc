// SPDX-License-Identifier: Apache-2.0
// The pty relay's output filter: what reaches the user's terminal, byte for byte,
// including sequences split across reads at every offset.
#include "tty/filter.hpp"

#include <gtest/gtest.h>

#include <string>

using agentjail::tty::OutputFilter;

namespace {

std::string run(const std::string& in) {
    OutputFilter f;
    std::string out;
    f.feed(in.data(), in.size(), out);
    return out;
}

// The same input fed in two pieces, split at every offset: the result never depends
// on where a read ended.
void expect_split_invariant(const std::string& in) {
    const std::string whole = run(in);
    for (size_t cut = 0; cut <= in.size(); ++cut) {
        OutputFilter f;
        std::string out;
        f.feed(in.data(), cut, out);
        f.feed(in.data() + cut, in.size() - cut, out);
        EXPECT_EQ(out, whole) << "split at " << cut;
    }
}

}  // namespace

TEST(TtyFilter, TextColoursAndCursorPass) {
    const std::string s =
        "plain text\r\n\x1b[1;31mred\x1b[0m \x1b[2J\x1b[H\x1b[?1049h\x1b(B\x1b"
        "7 tab\there\x07";
    EXPECT_EQ(run(s), s);
}

TEST(TtyFilter, Utf8PassesWholeAndLoneC1IsDropped) {
    const std::string utf8 = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0\xc2\xbf.";
    EXPECT_EQ(run(utf8), utf8);
    // A raw 0x9b (8-bit CSI) or 0x9d (8-bit OSC) outside a UTF-8 sequence.
    EXPECT_EQ(run("a\x9b"
                  "31mb\x9d"
                  "52;c;x\x07"),
              "a31mb52;c;x\x07");
    expect_split_invariant(utf8);
}

TEST(TtyFilter, ClipboardWritesAndReadsAreDropped) {
    EXPECT_EQ(run("a\x1b]52;c;SGVsbG8=\x07"
                  "b"),
              "ab");
    EXPECT_EQ(run("a\x1b]52;c;?\x1b\\b"), "ab");
    OutputFilter f;
    std::string out;
    f.feed("\x1b]52;c;", 7, out);
    EXPECT_EQ(f.dropped(), 0u);
    f.feed("QQ==\x07", 5, out);
    EXPECT_EQ(out, "");
    EXPECT_EQ(f.dropped(), 1u);
}

TEST(TtyFilter, LinksOnlyToTheWeb) {
    const std::string web = "\x1b]8;;https://example.com/a\x1b\\link\x1b]8;;\x1b\\";
    EXPECT_EQ(run(web), web);
    EXPECT_EQ(run("\x1b]8;id=1;HTTP://Example.com\x07x"), "\x1b]8;id=1;HTTP://Example.com\x07x");
    EXPECT_EQ(run("\x1b]8;;file:///etc/passwd\x1b\\x\x1b]8;;\x1b\\"), "x\x1b]8;;\x1b\\");
    EXPECT_EQ(run("\x1b]8;;ssh://host\x07y"), "y");
    EXPECT_EQ(run("\x1b]8;;javascript:alert(1)\x07y"), "y");
}

TEST(TtyFilter, TitlesPassTheirReportsDoNot) {
    EXPECT_EQ(run("\x1b]0;my title\x07"), "\x1b]0;my title\x07");
    EXPECT_EQ(run("\x1b]2;t\x1b\\"), "\x1b]2;t\x1b\\");
    EXPECT_EQ(run("a\x1b[21tb\x1b[20tc"), "abc");
    EXPECT_EQ(run("\x1b[8;40;120t\x1b[14t"),
              "\x1b[8;40;120t\x1b[14t");  // resize, size report: numbers only
}

TEST(TtyFilter, ColourSettingsPassQueriesDoNot) {
    EXPECT_EQ(run("\x1b]4;1;rgb:ff/00/00\x07"), "\x1b]4;1;rgb:ff/00/00\x07");
    EXPECT_EQ(run("\x1b]11;#000000\x07"), "\x1b]11;#000000\x07");
    EXPECT_EQ(run("x\x1b]11;?\x07y\x1b]4;1;?\x1b\\z\x1b]10;?\x07"), "xyz");
}

TEST(TtyFilter, UnknownOscAndStringsAreDroppedWhole) {
    EXPECT_EQ(run("a\x1b]1337;File=name=eA==:AAAA\x07"
                  "b"),
              "ab");  // iTerm2 file transfer
    EXPECT_EQ(run("a\x1b]7;file://host/tmp\x07"
                  "b"),
              "ab");
    EXPECT_EQ(run("a\x1b]9;notify\x07"
                  "b"),
              "ab");
    EXPECT_EQ(run("a\x1bP+q544e\x1b\\b"), "ab");                       // XTGETTCAP
    EXPECT_EQ(run("a\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\b"), "ab");  // tmux passthrough
    EXPECT_EQ(run("a\x1b_Gf=100;AAAA\x1b\\b"), "ab");                  // kitty graphics (APC)
    EXPECT_EQ(run("a\x1b^pm\x1b\\b\x1bXsos\x1b\\c"), "abc");
}

TEST(TtyFilter, StringsEndOnlyAtStringTerminatorOrCancel) {
    // A BEL does not end a DCS: what follows is still inside it for the terminal.
    EXPECT_EQ(run("a\x1bPq\x07\x1b]52;c;eA==\x07still\x1b\\b"), "ab");
    EXPECT_EQ(run("a\x1bPq\x18"
                  "b"),
              "ab");  // CAN cancels
}

TEST(TtyFilter, OverlongOscIsDropped) {
    std::string title(OutputFilter::kMaxOsc + 10, 'x');
    EXPECT_EQ(run("\x1b]0;" + title +
                  "\x07"
                  "after"),
              "after");
}

TEST(TtyFilter, EverySequenceIsSplitInvariant) {
    expect_split_invariant(
        "t\x1b]52;c;SGk=\x07u\x1b]8;;file:///x\x1b\\v\x1b]8;;https://a.b/"
        "\x1b\\w\x1bPx\x1b\\y\x1b[21tz"
        "\x1b[31m\xc3\xa9\x9b\x1b]0;ti\x07\x1b]11;?\x07end");
}

// Issue 26: the 8-bit (C1) forms of what the filter drops in 7-bit form. A terminal
// that honours C1 in UTF-8 reads U+0080-U+009F as ESC plus the control minus 0x40;
// one in 8-bit mode reads the raw bytes so. Each is dropped (or passed in its
// harmless 7-bit form), and the 7-bit control beside it shows the probe reads.
TEST(TtyFilter, C1FormsAreJudgedAsTheir7BitForms) {
    // Control: the 7-bit forms are dropped, allowed ones pass.
    EXPECT_EQ(run("a\x1b]52;c;SGVsbG8=\x07z"), "az");
    EXPECT_EQ(run("a\x1b[31mz"), "a\x1b[31mz");
    // OSC 52 through U+009D (C2 9D), ended by BEL, by ST and by U+009C.
    EXPECT_EQ(run("a\xc2\x9d" "52;c;SGVsbG8=\x07z"), "az");
    EXPECT_EQ(run("a\xc2\x9d" "52;c;SGVsbG8=\x1b\\z"), "az");
    EXPECT_EQ(run("a\xc2\x9d" "52;c;SGVsbG8=\xc2\x9cz"), "az");
    // OSC 8 file:// link through U+009D; a web link passes, in 7-bit form.
    EXPECT_EQ(run("a\xc2\x9d" "8;;file:///etc/passwd\x07x\xc2\x9d" "8;;\x07z"), "ax\x1b]8;;\x07z");
    EXPECT_EQ(run("\xc2\x9d" "8;;https://example.com\xc2\x9cx"), "\x1b]8;;https://example.com\x1b\\x");
    // DECRQSS through U+0090 (DCS), and XTGETTCAP.
    EXPECT_EQ(run("a\xc2\x90$qm\xc2\x9cz"), "az");
    EXPECT_EQ(run("a\xc2\x90+q544e\x1b\\z"), "az");
    // The window-title report through U+009B (CSI 21 t) and the icon's (20 t).
    EXPECT_EQ(run("a\xc2\x9b" "21tz"), "az");
    EXPECT_EQ(run("a\xc2\x9b" "20tz"), "az");
    // Colours through U+009B pass, as the 7-bit CSI.
    EXPECT_EQ(run("a\xc2\x9b" "31mz"), "a\x1b[31mz");
    // APC, PM, SOS through U+009F, U+009E, U+0098.
    EXPECT_EQ(run("a\xc2\x9fGf=100;AAAA\xc2\x9cz"), "az");
    EXPECT_EQ(run("a\xc2\x9ex\xc2\x9cz"), "az");
    EXPECT_EQ(run("a\xc2\x98x\xc2\x9cz"), "az");
}

TEST(TtyFilter, RawC1BytesNeverPassInsideASequence) {
    // A raw 0x9d after ESC ( (an unfinished charset designation): dropped, and what
    // follows is text.
    std::string out = run("a\x1b(\x9d" "52;c;SGVsbG8=\x07z");
    EXPECT_EQ(out.find('\x9d'), std::string::npos) << out;
    // ESC then a raw C1, and a raw C1 inside a CSI's parameters.
    out = run("a\x1b\x9b" "21tz");
    EXPECT_EQ(out.find('\x9b'), std::string::npos) << out;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
    out = run("a\x1b[3\x9d" "52;c;x\x07z");
    EXPECT_EQ(out.find('\x9d'), std::string::npos) << out;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
    // A raw C1 inside a title: the title is dropped whole (an 8-bit terminal would
    // end it at 0x9c and read 0x9d as a new OSC).
    EXPECT_EQ(run("a\x1b]0;t\x9c\x9d" "52;c;SGVsbG8=\x07z"), "az");
    // Written as UTF-8, U+009C ends the title where a C1 terminal ends it (passed,
    // with a 7-bit ST), and the OSC 52 U+009D starts is dropped.
    EXPECT_EQ(run("a\x1b]0;t\xc2\x9c\xc2\x9d" "52;c;SGVsbG8=\x07z"), "a\x1b]0;t\x1b\\z");
    // A title with UTF-8 text passes.
    EXPECT_EQ(run("\x1b]0;caf\xc3\xa9 \xe2\x82\xac\x07"), "\x1b]0;caf\xc3\xa9 \xe2\x82\xac\x07");
}

TEST(TtyFilter, C1FormsAreSplitInvariant) {
    for (const std::string& s :
         {std::string("a\xc2\x9d" "52;c;SGVsbG8=\xc2\x9cz"), std::string("a\xc2\x9b" "31mz\xc3\xa9"),
          std::string("\x1b]0;t\xc2\x9c\xc2\x9d" "52;c;x\x07z"), std::string("a\x1b(\x9d" "52;z"),
          std::string("\xc2\x9d" "8;;https://example.com\xc2\x9cx")})
        expect_split_invariant(s);
}
