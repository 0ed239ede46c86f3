// PythonLineForInstruction against the interpreters themselves: every code
// object of a fixture module (and of a few stdlib modules, for volume) is
// compiled by each interpreter, which prints its co_linetable and co_lines();
// every code unit of every range must map to the line CPython gives it.
#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include "agent/unwind/python/code_object.h"
#include "tests/support/python_interpreters.h"

namespace warpscope {
namespace {

using testing::GuardedBytes;
using testing::TestPython;

// Functions with loops, multi-line expressions, decorators, nested functions,
// a 300-line gap (line jumps past 255, forward and back), a very long line
// (columns past 255), try/finally, async and generators. Output, one line per
// code object: "code FIRSTLINENO HEX|- START:END:LINE|N ...".
constexpr char kLinesScript[] = R"PY(
import sys

GAP = "\n" * 300
TERMS = ", ".join("x + %d" % k for k in range(120))
SRC = '''
import functools

def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while total < i:
            total += 1
    return total

def multiline(a, b):
    x = (a +
         b *
         a)
    y = call(
        a,
        b,
    )[
        0
    ]
    return {
        "k": x,
        "v": y,
    }

def deco(fn):
    @functools.wraps(fn)
    def inner(*args, **kw):
        return fn(*args, **kw)
    return inner

@deco
@deco
def decorated(
        a,
        b=2):
    def nested(c):
        def deeper():
            return c + a
        return deeper
    return nested(b)

def far(n):
    i = 0
    while i < n:
        i += 1''' + GAP + '''        i += 2
    return (i''' + GAP + ''',
        n)

def long_line(x):
    return [''' + TERMS + ''']

class Klass:
    def method(self):
        try:
            return 1 / 0
        except ZeroDivisionError:
            return None
        finally:
            pass

async def coro(xs):
    async for x in xs:
        await x
    return [y async for y in xs]

def gen():
    yield from range(3)
    return (lambda q: q * 2)
'''

def walk(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, type(code)):
            yield from walk(const)

sources = [("line_fixture.py", SRC)]
import argparse, json.decoder, dataclasses
for module in (argparse, json.decoder, dataclasses):
    with open(module.__file__, encoding="utf-8") as f:
        sources.append((module.__file__, f.read()))
for name, src in sources:
    for code in walk(compile(src, name, "exec")):
        ranges = " ".join("%d:%d:%s" % (s, e, "N" if l is None else l) for s, e, l in code.co_lines())
        print("code", code.co_firstlineno, code.co_linetable.hex() or "-", ranges)
)PY";

struct LineRange {
  uint32_t start = 0;  // bytes, as co_lines() gives them
  uint32_t end = 0;
  std::optional<int32_t> line;
};

struct CodeLines {
  int32_t firstlineno = 0;
  std::string table;
  std::vector<LineRange> ranges;
};

StatusOr<std::vector<CodeLines>> ParseLinesOutput(const std::string& out) {
  std::vector<CodeLines> codes;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string tag, hex, range;
    CodeLines code;
    if (!(fields >> tag >> code.firstlineno >> hex) || tag != "code") return InvalidArgumentError("bad line: " + line);
    if (hex != "-") {
      StatusOr<std::string> table = testing::FromHex(hex);
      if (!table.ok()) return table.status();
      code.table = *table;
    }
    while (fields >> range) {
      LineRange r;
      char line_text[16] = {};
      if (std::sscanf(range.c_str(), "%u:%u:%15s", &r.start, &r.end, line_text) != 3) {
        return InvalidArgumentError("bad range: " + range);
      }
      if (std::string(line_text) != "N") r.line = std::stoi(line_text);
      code.ranges.push_back(r);
    }
    codes.push_back(std::move(code));
  }
  return codes;
}

PythonLineTableFormat FormatFor(const PythonVersion& v) {
  return v.minor == 10 ? PythonLineTableFormat::kLnotab310 : PythonLineTableFormat::kLocations311;
}

// Truncated copies of a real table: whatever they answer, they answer from
// inside the table (the guard page faults otherwise) and never a negative line.
void CheckTruncations(PythonLineTableFormat format, const CodeLines& code) {
  std::vector<size_t> lengths;
  for (size_t n = 0; n < code.table.size() && n < 40; ++n) lengths.push_back(n);
  lengths.push_back(code.table.size() / 2);
  for (size_t n : lengths) {
    GuardedBytes prefix(std::string_view(code.table).substr(0, n));
    for (uint32_t idx : {0u, 1u, 3u, 17u, 200u, 5000u}) {
      EXPECT_GE(PythonLineForInstruction(format, prefix.view(), code.firstlineno, idx), 0);
    }
  }
}

TEST(PythonLineTableTest, AgreesWithCoLinesOfEveryInterpreter) {
  StatusOr<std::vector<TestPython>> pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok()) << pythons.status().ToString();
  testing::TempDir dir;
  StatusOr<std::string> script = dir.WriteFile("lines.py", kLinesScript);
  ASSERT_TRUE(script.ok());
  std::vector<std::string> exercised;
  for (const TestPython& py : *pythons) {
    SCOPED_TRACE(testing::Describe(py));
    if (py.version.major != 3 || py.version.minor < 10) {
      std::cout << "[ python   ] no co_lines() before 3.10, skipping " << testing::Describe(py) << "\n";
      continue;
    }
    StatusOr<std::string> out = testing::RunPythonScript(py.path, *script);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    StatusOr<std::vector<CodeLines>> codes = ParseLinesOutput(*out);
    ASSERT_TRUE(codes.ok()) << codes.status().ToString();
    const PythonLineTableFormat format = FormatFor(py.version);

    size_t units = 0, mismatches = 0, code_index = 0;
    bool saw_no_line = false, saw_backward = false, saw_far_jump = false;
    for (const CodeLines& code : *codes) {
      GuardedBytes table(code.table);
      uint32_t table_end = 0;
      std::optional<int32_t> previous;
      for (const LineRange& r : code.ranges) {
        saw_no_line |= !r.line.has_value();
        if (r.line && previous) {
          saw_backward |= *r.line < *previous;
          saw_far_jump |= std::abs(*r.line - *previous) > 255;
        }
        if (r.line) previous = r.line;
        table_end = std::max(table_end, r.end / 2);
        for (uint32_t idx = r.start / 2; idx < r.end / 2; ++idx, ++units) {
          const int32_t want = r.line.value_or(code.firstlineno);
          const int32_t got = PythonLineForInstruction(format, table.view(), code.firstlineno, idx);
          if (got != want && ++mismatches <= 20) {
            ADD_FAILURE() << "code at line " << code.firstlineno << ", unit " << idx << ": got " << got
                          << ", CPython says " << want;
          }
        }
      }
      for (uint32_t idx : {table_end, table_end + 1, table_end + 1000, UINT32_MAX}) {
        EXPECT_EQ(PythonLineForInstruction(format, table.view(), code.firstlineno, idx), code.firstlineno)
            << "past the end of the code at line " << code.firstlineno;
      }
      if (code_index++ % 8 == 0) CheckTruncations(format, code);
    }
    EXPECT_EQ(mismatches, 0u);
    EXPECT_GT(codes->size(), 200u);
    // The fixture must keep exercising the hard cases, in every format.
    EXPECT_TRUE(saw_no_line);
    EXPECT_TRUE(saw_backward);
    EXPECT_TRUE(saw_far_jump);
    std::cout << "[ python   ] " << testing::Describe(py) << ": " << codes->size() << " code objects, " << units
              << " code units agree with co_lines()\n";
    exercised.push_back(py.version.ToString());
  }
  EXPECT_FALSE(exercised.empty());
}

TEST(PythonLineTableTest, HandBuiltLnotab310) {
  const auto line = [](std::string_view t, int32_t first, uint32_t idx) {
    GuardedBytes g(t);
    return PythonLineForInstruction(PythonLineTableFormat::kLnotab310, g.view(), first, idx);
  };
  EXPECT_EQ(line(std::string_view("\x02\x05", 2), 1, 0), 6);
  EXPECT_EQ(line(std::string_view("\x02\x05", 2), 1, 1), 1);  // past the end
  EXPECT_EQ(line(std::string_view("\x02\x05\x04", 3), 1, 1), 1);  // odd trailing byte ignored
  // A zero-width range moves the line but covers nothing.
  EXPECT_EQ(line(std::string_view("\x00\x03\x02\x01", 4), 10, 0), 14);
  // -128: no line for the range, computed line unchanged.
  EXPECT_EQ(line(std::string_view("\x02\x80\x02\x01", 4), 10, 0), 10);
  EXPECT_EQ(line(std::string_view("\x02\x80\x02\x01", 4), 10, 1), 11);
  // Lines below zero fall back to the first line.
  EXPECT_EQ(line(std::string_view("\x02\x81", 2), 3, 0), 3);
  EXPECT_EQ(line("", 7, 0), 7);
}

TEST(PythonLineTableTest, HandBuiltLocations311) {
  // code 11 (+1, len 1) | code 12 (+2, len 2) | short (len 1) | none | long (-1) | long varint +300
  const std::string t("\xD8\x00\x04" "\xE1\x00\x04" "\x80\x00" "\xF8" "\xF0\x03\x00\x01\x01" "\xE8\x58\x09", 17);
  GuardedBytes g(t);
  const auto line = [&](uint32_t idx) {
    return PythonLineForInstruction(PythonLineTableFormat::kLocations311, g.view(), 10, idx);
  };
  EXPECT_EQ(line(0), 11);
  EXPECT_EQ(line(1), 13);
  EXPECT_EQ(line(2), 13);
  EXPECT_EQ(line(3), 13);
  EXPECT_EQ(line(4), 10);  // no line
  EXPECT_EQ(line(5), 12);
  EXPECT_EQ(line(6), 312);
  EXPECT_EQ(line(7), 10);  // past the end
}

TEST(PythonLineTableTest, CorruptTablesStayInBounds) {
  for (PythonLineTableFormat format : {PythonLineTableFormat::kLnotab310, PythonLineTableFormat::kLocations311}) {
    // Endless varint continuation, an entry cut before its varint, all ones.
    for (const std::string& t : {"\xF0" + std::string(100, '\x7F'), std::string("\xF0"), std::string("\xE8"),
                                 std::string(64, '\xFF'), std::string(64, '\x80'), std::string(3, '\x00')}) {
      GuardedBytes g(t);
      for (uint32_t idx : {0u, 1u, 5u, 63u, 1000u, UINT32_MAX}) {
        EXPECT_GE(PythonLineForInstruction(format, g.view(), 4, idx), 0);
      }
    }
  }
  std::mt19937 rng(20240601);
  for (int i = 0; i < 20000; ++i) {
    std::string t(rng() % 48, '\0');
    for (char& c : t) c = static_cast<char>(rng());
    const auto format = (i % 2) ? PythonLineTableFormat::kLnotab310 : PythonLineTableFormat::kLocations311;
    const int32_t first = static_cast<int32_t>(rng() % 100000);
    GuardedBytes g(t);
    for (uint32_t idx : {0u, static_cast<uint32_t>(rng() % 256), static_cast<uint32_t>(rng())}) {
      ASSERT_GE(PythonLineForInstruction(format, g.view(), first, idx), 0) << "table of " << t.size() << " bytes";
    }
  }
}

}  // namespace
}  // namespace warpscope
