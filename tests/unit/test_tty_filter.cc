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
    const std::string utf8 =
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\x9b";  // U+009B as UTF-8 is text
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
