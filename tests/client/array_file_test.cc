// The CLI's file formats without a server: .npy headers as NumPy writes them (and bad ones), text
// round trips of the special floats, raw sizes; and what the fuzzers (tests/fuzz) found. The 8- and
// 16-bit dtypes in every format, with the values that break conversions, and float16 text's rounding.
#include "client/cli/array_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/cli/dtype_names.h"
#include "client/cli/sort_values.h"

namespace gpusort::cli {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  // np.save of np.arange(3, dtype='<u4') writes exactly this 128-byte-aligned v1.0 header.
  const std::string header = NpyHeader(DType::kUint32, {3});
  EXPECT_EQ(header.size() % 64, 0u);
  EXPECT_EQ(header.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_THAT(header, HasSubstr("{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(header.back(), '\n');
  EXPECT_THAT(NpyHeader(DType::kFloat64, {4, 5}), HasSubstr("'shape': (4,5)"));
}

// An .npy renamed .bin (or with no extension) is still read as .npy, by its magic, unless --format says
// otherwise; a raw file is not mistaken for one.
TEST(FileFormats, AnNpyFileIsKnownByItsMagicWhateverItsName) {
  Array a{.dtype = DType::kFloat32, .bytes = {}, .shape = {3}};
  for (float v : {1.5f, -2.0f, 0.25f}) a.bytes.append(reinterpret_cast<const char*>(&v), 4);
  const std::string npy = TempPath("renamed.npy");
  ASSERT_TRUE(WriteArray(npy, FileFormat::kNpy, a).ok());
  std::ifstream in(npy, std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(in)), {});
  for (const std::string name : {"renamed.bin", "renamed", "renamed.txt"}) {
    WriteFile(TempPath(name), content);
    auto format = ChooseReadFormat("", TempPath(name));
    ASSERT_TRUE(format.ok()) << format.status();
    EXPECT_EQ(*format, FileFormat::kNpy) << name;
    auto b = ReadArray(TempPath(name), *format, std::nullopt);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->bytes, a.bytes) << name;
  }
  EXPECT_EQ(*ChooseReadFormat("raw", TempPath("renamed.bin")), FileFormat::kRaw);  // --format wins
  WriteFile(TempPath("plain.bin"), std::string(12, '\x01'));
  EXPECT_EQ(*ChooseReadFormat("", TempPath("plain.bin")), FileFormat::kRaw);
  EXPECT_EQ(*ChooseReadFormat("", TempPath("missing.npy")), FileFormat::kNpy);  // ReadArray says NOT_FOUND
}

// An output name whose extension the CLI does not write is refused, not written raw under that name.
TEST(FileFormats, WritingAnExtensionTheCliDoesNotWriteIsRefused) {
  for (const std::string name : {"o.npz", "o.parquet", "dir.v2/o.npz"}) {
    auto format = ChooseWriteFormat("", TempPath(name));
    EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(std::string(format.status().message()), HasSubstr("--format")) << name;
  }
  EXPECT_EQ(*ChooseWriteFormat("", TempPath("o.npy")), FileFormat::kNpy);
  EXPECT_EQ(*ChooseWriteFormat("", TempPath("o.txt")), FileFormat::kText);
  EXPECT_EQ(*ChooseWriteFormat("", TempPath("o.bin")), FileFormat::kRaw);
  EXPECT_EQ(*ChooseWriteFormat("", TempPath("dir.v2/o")), FileFormat::kRaw);  // the dot is the folder's
  EXPECT_EQ(*ChooseWriteFormat("", TempPath(".hidden")), FileFormat::kRaw);   // a dot file, no extension
  EXPECT_EQ(*ChooseWriteFormat("raw", TempPath("o.npz")), FileFormat::kRaw);  // --format wins
}

// A directory used to "size" as 2^63 bytes and end the CLI with std::bad_alloc; a pipe could not be
// sized at all. Both are refused saying what they are.
TEST(FileFormats, ADirectoryOrAPipeIsRefusedSayingWhatItIs) {
  auto dir = ReadArray(::testing::TempDir(), FileFormat::kRaw, DType::kUint32);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(dir.status().message()), HasSubstr("is a directory"));
  auto npy_dir = ReadArray(::testing::TempDir(), FileFormat::kNpy, std::nullopt);
  EXPECT_THAT(std::string(npy_dir.status().message()), HasSubstr("is a directory"));
  auto device = ReadArray("/dev/null", FileFormat::kRaw, DType::kUint32);
  EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(device.status().message()), HasSubstr("not a regular file"));
}

TEST(Npy, RoundTripOneAndTwoDimensions) {
  for (auto shape : {std::vector<std::size_t>{7}, std::vector<std::size_t>{3, 4},
                     std::vector<std::size_t>{0}}) {
    Array a{.dtype = DType::kInt64, .bytes = {}, .shape = shape};
    std::size_t n = 1;
    for (auto d : shape) n *= d;
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t v = -static_cast<int64_t>(i) * 1000003;
      a.bytes.append(reinterpret_cast<const char*>(&v), 8);
    }
    const std::string path = TempPath("rt.npy");
    ASSERT_TRUE(WriteArray(path, FileFormat::kNpy, a).ok());
    auto b = ReadArray(path, FileFormat::kNpy, std::nullopt);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->dtype, DType::kInt64);
    EXPECT_EQ(b->shape, shape);
    EXPECT_EQ(b->bytes, a.bytes);
  }
}

TEST(Npy, BadFilesAreRefusedWithAReason) {
  struct Case { std::string bytes, reason; };
  const std::string good = NpyHeader(DType::kFloat32, {2}) + std::string(8, '\0');
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string three_d = NpyHeader(DType::kFloat32, {1, 1, 2}) + std::string(8, '\0');
  for (const Case& c : {Case{"not numpy at all", "magic"}, Case{big_endian, "unsupported .npy dtype"},
                        Case{fortran, "Fortran"}, Case{good.substr(0, good.size() - 1), "data bytes"},
                        Case{three_d, "dimensions"}, Case{good.substr(0, 20), "truncated"}}) {
    const std::string path = TempPath("bad.npy");
    WriteFile(path, c.bytes);
    auto a = ReadArray(path, FileFormat::kNpy, std::nullopt);
    ASSERT_FALSE(a.ok()) << c.reason;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.reason));
  }
  const std::string path = TempPath("f32.npy");
  WriteFile(path, good);
  auto mismatch = ReadArray(path, FileFormat::kNpy, DType::kInt32);
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("holds f32 but --dtype says i32"));
}

TEST(Npy, ShapeWhoseByteCountOverflowsIsRefused) {
  // npy_reader_fuzzer: 2^63 i8 elements are 2^66 bytes, which wrapped to 0, so a file of the header alone
  // was read as an array of that shape (and (2^62 + 1) x 4 f4 wrapped to 16 bytes).
  for (const auto& [dtype, shape] :
       {std::pair{DType::kInt64, std::vector<std::size_t>{std::size_t{1} << 63}},
        std::pair{DType::kFloat32, std::vector<std::size_t>{(std::size_t{1} << 62) + 1, 4}}}) {
    std::size_t wrapped = ElementSize(dtype);
    for (std::size_t d : shape) wrapped *= d;
    const std::string path = TempPath("huge.npy");
    WriteFile(path, NpyHeader(dtype, shape) + std::string(wrapped, '\0'));
    auto a = ReadArray(path, FileFormat::kNpy, std::nullopt);
    ASSERT_FALSE(a.ok()) << "wrapped to " << wrapped << " bytes";
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("more bytes than any file can"));
  }
}

TEST(Text, SpecialFloatsRoundTripExactly) {
  const double values[] = {-std::numeric_limits<double>::infinity(), -0.0, 0.0, 0.1, 1e-310,
                           std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()};
  Array a{.dtype = DType::kFloat64, .bytes = {}, .shape = {}};
  for (double v : values) a.bytes.append(reinterpret_cast<const char*>(&v), 8);
  const std::string path = TempPath("special.txt");
  ASSERT_TRUE(WriteArray(path, FileFormat::kText, a).ok());
  auto b = ReadArray(path, FileFormat::kText, DType::kFloat64);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->bytes.size(), a.bytes.size());
  for (std::size_t i = 0; i < std::size(values); ++i) {
    double got;
    std::memcpy(&got, b->bytes.data() + 8 * i, 8);
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got));
      EXPECT_EQ(std::signbit(got), std::signbit(values[i])) << i;  // -nan stays negative
    } else {
      EXPECT_EQ(std::memcmp(&got, &values[i], 8), 0) << "value " << i;
    }
  }
}

TEST(Text, IntegersAtTheirLimitsAndBadLines) {
  const std::string path = TempPath("ints.txt");
  WriteFile(path, "18446744073709551615\n0\n\n# a comment\n  42  \n");
  auto a = ReadArray(path, FileFormat::kText, DType::kUint64);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->count(), 3u);
  WriteFile(path, "1\n2\n18446744073709551616\n");
  auto overflow = ReadArray(path, FileFormat::kText, DType::kUint64);
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr(":3: "));
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr("out of range"));
  WriteFile(path, "1\nseven\n");
  auto junk = ReadArray(path, FileFormat::kText, DType::kInt32);
  EXPECT_THAT(std::string(junk.status().message()), HasSubstr("'seven' is not a i32 number"));
  const std::string no_dtype(ReadArray(path, FileFormat::kText, std::nullopt).status().message());
  EXPECT_THAT(no_dtype, HasSubstr("'seven' is not a f64 number"));
  EXPECT_THAT(no_dtype, HasSubstr("read as i64, u64 or f64"));
  EXPECT_THAT(std::string(ReadArray(path, FileFormat::kRaw, std::nullopt).status().message()),
              HasSubstr("--dtype is required"));
}

// Text without --dtype (a pipe from `gpusort gen`, a file of numbers): the first of i64, u64 and f64 that
// holds every number, so that the numbers written back are the ones read.
TEST(Text, WithoutADTypeTheNarrowestOfI64U64F64ThatHoldsEveryNumber) {
  const std::string path = TempPath("infer.txt");
  struct Case {
    const char* text;
    DType want;
  };
  for (const Case& c : {Case{"3\n-1\n2\n", DType::kInt64}, Case{"# a comment\n\n-9223372036854775808\n0\n", DType::kInt64},
                        Case{"9223372036854775808\n1\n", DType::kUint64}, Case{"18446744073709551615\n", DType::kUint64},
                        Case{"1\n2.5\n", DType::kFloat64}, Case{"-1\n18446744073709551615\n", DType::kFloat64},
                        Case{"nan\n-inf\n0\n-0.0\n1e-320\n", DType::kFloat64}, Case{"", DType::kInt64}}) {
    WriteFile(path, c.text);
    auto a = ReadArray(path, FileFormat::kText, std::nullopt);
    ASSERT_TRUE(a.ok()) << c.text << ": " << a.status();
    EXPECT_EQ(a->dtype, c.want) << c.text;
  }
  WriteFile(path, "5\n-7\n");
  auto a = ReadArray(path, FileFormat::kText, std::nullopt);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->count(), 2u);
  int64_t values[2];
  std::memcpy(values, a->bytes.data(), sizeof values);
  EXPECT_EQ(values[0], 5);
  EXPECT_EQ(values[1], -7);
}

TEST(Text, OneSignAtMost) {
  // text_reader_fuzzer: "--0" read as 0 (the float path takes one '-' off, from_chars took another), and
  // "+-5" as -5.
  const std::string path = TempPath("signs.txt");
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUint32,
                          DType::kFloat16, DType::kBFloat16, DType::kInt16, DType::kUint16, DType::kInt8,
                          DType::kUint8}) {
    for (const char* text : {"--0", "+-5", "-+5", "++5", "--nan", "+-inf"}) {
      WriteFile(path, std::string("1\n") + text + "\n");
      auto a = ReadArray(path, FileFormat::kText, dtype);
      ASSERT_FALSE(a.ok()) << text << " as " << DTypeName(dtype);
      EXPECT_THAT(std::string(a.status().message()), HasSubstr(":2: '" + std::string(text) + "' is not a"));
    }
    WriteFile(path, "+5\n-5\n");
    const bool is_unsigned = dtype == DType::kUint32 || dtype == DType::kUint16 || dtype == DType::kUint8;
    EXPECT_EQ(ReadArray(path, FileFormat::kText, dtype).ok(), !is_unsigned) << DTypeName(dtype);
  }
}

// Adversarial keys of every 8- and 16-bit dtype, as bit patterns: NaNs of both signs and several payloads
// (quiet, signaling, all ones), +-0.0, +-inf, the smallest and largest subnormals and normals, extremes.
struct NarrowCase {
  DType dtype;
  std::vector<uint16_t> bits;  // each one element; 8-bit dtypes use the low byte
};
const std::vector<NarrowCase>& NarrowCases() {
  static const std::vector<NarrowCase> kCases = {
      {DType::kFloat16, {0x7C01, 0x7E00, 0x7FFF, 0x7D55, 0xFC01, 0xFE00, 0xFFFF, 0x0000, 0x8000, 0x7C00, 0xFC00,
                           0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0x3555, 0x2E66, 0x2400}},
      {DType::kBFloat16, {0x7F81, 0x7FC0, 0x7FFF, 0xFF81, 0xFFC0, 0xFFFF, 0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001,
                            0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x3F80, 0x4049, 0x3DCD}},
      {DType::kInt16, {0x8000, 0xFFFF, 0x0000, 0x0001, 0x7FFF, 0xCFC7}},  // INT16_MIN, -1, 0, 1, INT16_MAX, -12345
      {DType::kUint16, {0x0000, 0x0001, 0x7FFF, 0x8000, 0xFFFF}},
      {DType::kInt8, {0x80, 0xFF, 0x00, 0x01, 0x7F}},  // INT8_MIN, -1, 0, 1, INT8_MAX
      {DType::kUint8, {0x00, 0x01, 0x7F, 0x80, 0xFF}}};
  return kCases;
}

Array NarrowArray(const NarrowCase& c) {
  Array a{.dtype = c.dtype, .bytes = {}, .shape = {c.bits.size()}};
  for (uint16_t b : c.bits) a.bytes.append(reinterpret_cast<const char*>(&b), ElementSize(c.dtype));  // LE host
  return a;
}

bool IsNarrowNaN(DType dtype, uint16_t bits) {
  if (dtype == DType::kFloat16) return (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0;
  return dtype == DType::kBFloat16 && (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0;
}

TEST(NarrowDTypes, NpyHeadersAreWhatNumpyWrites) {
  // np.dtype(t).str for float16, int16, uint16, int8, uint8 (numpy 1.24.2); np.save writes it as descr.
  for (const auto& [dtype, descr] : {std::pair{DType::kFloat16, "<f2"}, std::pair{DType::kInt16, "<i2"},
                                     std::pair{DType::kUint16, "<u2"}, std::pair{DType::kInt8, "|i1"},
                                     std::pair{DType::kUint8, "|u1"}}) {
    const std::string header = NpyHeader(dtype, {3});
    EXPECT_EQ(header.size() % 64, 0u);
    EXPECT_THAT(header, HasSubstr("{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (3,), }"));
  }
  // A 1-byte type has no byte order: '<i1' and '>u1' (which other writers may use) are i8 and u8.
  for (const auto& [descr, dtype] : {std::pair{"<i1", DType::kInt8}, std::pair{">u1", DType::kUint8}}) {
    std::string file = NpyHeader(dtype, {2}) + std::string(2, '\x05');
    file.replace(file.find(dtype == DType::kInt8 ? "|i1" : "|u1"), 3, descr);
    const std::string path = TempPath("alias.npy");
    WriteFile(path, file);
    auto a = ReadArray(path, FileFormat::kNpy, std::nullopt);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->dtype, dtype);
    EXPECT_EQ(a->bytes, "\x05\x05");
  }
  // Big-endian 2-byte keys are refused, as big-endian 4- and 8-byte ones are.
  std::string big = NpyHeader(DType::kFloat16, {1}) + "ab";
  big.replace(big.find("<f2"), 3, ">f2");
  WriteFile(TempPath("big.npy"), big);
  EXPECT_THAT(std::string(ReadArray(TempPath("big.npy"), FileFormat::kNpy, std::nullopt).status().message()),
              HasSubstr("unsupported .npy dtype '>f2'"));
}

TEST(NarrowDTypes, BFloat16IsNoNpyAndSaysWhatIs) {
  const std::string path = TempPath("bf16.npy");
  std::remove(path.c_str());
  const absl::Status s = WriteArray(path, FileFormat::kNpy, NarrowArray(NarrowCases()[1]));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("NumPy has no bfloat16"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw"));
  EXPECT_FALSE(std::ifstream(path).good()) << "no empty file left behind";
}

TEST(NarrowDTypes, AdversarialValuesRoundTripThroughEveryFormat) {
  for (const NarrowCase& c : NarrowCases()) {
    SCOPED_TRACE(DTypeName(c.dtype));
    const Array a = NarrowArray(c);
    for (FileFormat format : {FileFormat::kNpy, FileFormat::kRaw, FileFormat::kText}) {
      if (format == FileFormat::kNpy && c.dtype == DType::kBFloat16) continue;
      const std::string path = TempPath("narrow.any");
      ASSERT_TRUE(WriteArray(path, format, a).ok());
      auto b = ReadArray(path, format, format == FileFormat::kNpy ? std::nullopt : std::optional(c.dtype));
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(b->dtype, c.dtype);
      EXPECT_EQ(b->shape, a.shape);
      ASSERT_EQ(b->bytes.size(), a.bytes.size());
      if (format != FileFormat::kText) {
        EXPECT_EQ(b->bytes, a.bytes) << "NaN payloads included";
        continue;
      }
      for (std::size_t i = 0; i < c.bits.size(); ++i) {  // text keeps a NaN's sign, not its payload
        uint16_t got = 0;
        std::memcpy(&got, b->bytes.data() + i * ElementSize(c.dtype), ElementSize(c.dtype));
        if (IsNarrowNaN(c.dtype, c.bits[i]))
          EXPECT_TRUE(IsNarrowNaN(c.dtype, got) && (got & 0x8000) == (c.bits[i] & 0x8000)) << std::hex << got;
        else
          EXPECT_EQ(got, c.bits[i]) << FormatNumber(c.dtype, a.bytes.data() + i * ElementSize(c.dtype));
      }
    }
  }
}

TEST(NarrowDTypes, EveryPatternPrintsAsTextThatReadsBackToIt) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kInt16, DType::kUint16, DType::kInt8,
                          DType::kUint8}) {
    const uint32_t patterns = ElementSize(dtype) == 1 ? 256 : 65536;
    for (uint32_t p = 0; p < patterns; ++p) {
      const auto bits = static_cast<uint16_t>(p);
      const std::string text = FormatNumber(dtype, reinterpret_cast<const char*>(&bits));
      std::string back;
      ASSERT_TRUE(AppendParsedNumber(dtype, text, &back).ok()) << text;
      uint16_t got = 0;
      std::memcpy(&got, back.data(), back.size());
      if (IsNarrowNaN(dtype, bits)) {
        ASSERT_EQ(text, bits & 0x8000 ? "-nan" : "nan");
        ASSERT_TRUE(IsNarrowNaN(dtype, got) && (got & 0x8000) == (bits & 0x8000)) << text;
      } else {
        ASSERT_EQ(got, bits) << DTypeName(dtype) << " " << text;
      }
    }
  }
  // The shortest text, as NumPy's repr gives it (numpy 1.24.2: repr(np.uint16(b).view(np.float16))).
  for (const auto& [bits, text] : {std::pair<uint16_t, std::string>{0x2E66, "0.1"}, {0x3555, "0.3333"},
                                   {0x2400, "0.01563"}, {0x0001, "6e-08"}, {0x8001, "-6e-08"}, {0x0400, "6.104e-05"},
                                   {0x3C01, "1.001"}, {0xC248, "-3.14"}, {0x7BFF, "65500"}, {0x8000, "-0"}}) {
    EXPECT_EQ(FormatNumber(DType::kFloat16, reinterpret_cast<const char*>(&bits)), text);
  }
}

uint16_t ParseNarrow(DType dtype, const std::string& text) {
  std::string bytes;
  const absl::Status s = AppendParsedNumber(dtype, text, &bytes);
  EXPECT_TRUE(s.ok()) << text << ": " << s;
  uint16_t bits = 0;
  std::memcpy(&bits, bytes.data(), std::min<std::size_t>(bytes.size(), 2));
  return bits;
}

TEST(NarrowDTypes, Float16TextRoundsToNearestEvenAsNumpyDoes) {
  // /usr/bin/python3 (numpy 1.24.2): np.float64(text).astype(np.float16).view(np.uint16), which rounds
  // once from the double; these texts are far enough from a tie that the double's rounding cannot matter.
  const std::pair<const char*, uint16_t> numpy[] = {
      {"0.1", 0x2E66},    {"-0.1", 0xAE66},     {"1", 0x3C00},      {"3.14159", 0x4248}, {"65504", 0x7BFF},
      {"65519.99", 0x7BFF}, {"-65504", 0xFBFF}, {"6e-08", 0x0001},  {"5.960464477539063e-08", 0x0001},
      {"6.1e-05", 0x03FF}, {"6.097555160522461e-05", 0x03FF},       {"0.333333", 0x3555}, {"2.5", 0x4100},
      {"1000.5", 0x63D1}, {"1001.5", 0x63D3},   {"2049", 0x6800},   {"2051", 0x6802},    {"-2051", 0xE802},
      {"0.00006103515625", 0x0400}, {"1e-7", 0x0002}, {"3e-8", 0x0001}, {"123.456", 0x57B7},
      {"-7.8125e-3", 0xA000}, {"0.5e-4", 0x0347}, {"1E+2", 0x5640}, {"+2.5", 0x4100}, {"-0", 0x8000},
      {"nan", 0x7E00},    {"-nan", 0xFE00},     {"inf", 0x7C00},    {"-inf", 0xFC00}};
  for (const auto& [text, bits] : numpy) EXPECT_EQ(ParseNarrow(DType::kFloat16, text), bits) << text;
  // Ties decided by digits past a double's precision, derived by hand: 1.00048828125 is exactly halfway
  // between 1 (0x3C00) and 1.0009765625 (0x3C01), 65520 between 65504 and infinity, 2^-25 between 0 and
  // the smallest subnormal. A double reads each longer text below as the tie itself, so numpy (through
  // the double) gives 0x3C00 for the first; rounded once from the decimal it is above the tie: 0x3C01.
  const std::pair<const char*, uint16_t> ties[] = {
      {"1.000488281250000000001", 0x3C01}, {"1.000488281249999999999", 0x3C00}, {"1.00048828125", 0x3C00},
      {"1.00146484375", 0x3C02},  // exactly halfway between 0x3C01 and 0x3C02: to the even one
      {"65519.999999999999999", 0x7BFF}, {"2.98023223876953125000001e-8", 0x0001},
      {"-2.98023223876953125000001e-8", 0x8001}};
  for (const auto& [text, bits] : ties) EXPECT_EQ(ParseNarrow(DType::kFloat16, text), bits) << text;
}

TEST(NarrowDTypes, TextOutOfRangeIsAnErrorNamingTheValue) {
  const std::pair<DType, const char*> bad[] = {
      {DType::kInt16, "32768"},  {DType::kInt16, "-32769"}, {DType::kUint16, "65536"},
      {DType::kInt8, "128"},     {DType::kInt8, "-129"},    {DType::kUint8, "256"},
      {DType::kFloat16, "65520"}, {DType::kFloat16, "-1e5"}, {DType::kFloat16, "1e-8"},
      {DType::kFloat16, "2.98023223876953125e-8"},  // the tie between 0 and 2^-24: to 0, even
      {DType::kBFloat16, "1e39"}, {DType::kBFloat16, "-1e-41"}};
  for (const auto& [dtype, text] : bad) {
    std::string bytes;
    const absl::Status s = AppendParsedNumber(dtype, text, &bytes);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("'" + std::string(text) + "' is out of range for " + DTypeName(dtype)));
  }
  const std::pair<DType, const char*> edges[] = {
      {DType::kInt16, "-32768"}, {DType::kInt16, "32767"}, {DType::kUint16, "65535"}, {DType::kInt8, "-128"},
      {DType::kUint8, "255"}};
  for (const auto& [dtype, text] : edges) {
    std::string bytes;
    EXPECT_TRUE(AppendParsedNumber(dtype, text, &bytes).ok()) << text;
  }
  EXPECT_EQ(ParseNarrow(DType::kBFloat16, "3.3895313892515355e38"), 0x7F7F);  // the largest
  EXPECT_EQ(ParseNarrow(DType::kBFloat16, "9.2e-41"), 0x0001);                // the smallest subnormal
  std::string bytes;
  EXPECT_THAT(std::string(AppendParsedNumber(DType::kUint8, "-1", &bytes).message()), HasSubstr("not a u8 number"));
}

TEST(Raw, SizeMustBeWholeElements) {
  const std::string path = TempPath("odd.bin");
  WriteFile(path, std::string(10, 'x'));
  EXPECT_THAT(std::string(ReadArray(path, FileFormat::kRaw, DType::kUint64).status().message()),
              HasSubstr("not a whole number"));
  auto ok = ReadArray(path, FileFormat::kRaw, std::nullopt);
  EXPECT_FALSE(ok.ok());
}

TEST(Format, ChosenByFlagThenExtension) {
  EXPECT_EQ(*ChooseFormat("", "a.npy"), FileFormat::kNpy);
  EXPECT_EQ(*ChooseFormat("", "a.txt"), FileFormat::kText);
  EXPECT_EQ(*ChooseFormat("", "a.csv"), FileFormat::kText);
  EXPECT_EQ(*ChooseFormat("", "a.bin"), FileFormat::kRaw);
  EXPECT_EQ(*ChooseFormat("text", "a.npy"), FileFormat::kText);
  EXPECT_FALSE(ChooseFormat("parquet", "a.npy").ok());
}

// `gpusort sort --values`: raw bytes of --value-width, or a typed .npy, one value per key; every
// combination the command cannot use is refused before the server is asked.
TEST(SortValues, RawAndNpyValuesAreCheckedAgainstTheKeys) {
  const std::string raw = ::testing::TempDir() + "/values.bin";
  {
    std::ofstream out(raw, std::ios::binary);
    out << std::string("abcdef");
  }
  auto none = ReadValues("", 0, "", 2, false);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto three = ReadValues(raw, 3, "out.bin", 2, false);
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_TRUE(three->has_value());
  EXPECT_EQ((*three)->bytes, "abcdef");
  EXPECT_FALSE(ReadValues(raw, 4, "out.bin", 2, false).ok());    // 6 bytes are not 2 values of 4
  EXPECT_FALSE(ReadValues(raw, 0, "out.bin", 2, false).ok());    // raw needs a width
  EXPECT_FALSE(ReadValues(raw, 257, "out.bin", 1, false).ok());  // at most 256 bytes a value
  EXPECT_FALSE(ReadValues(raw, 3, "", 2, false).ok());           // nowhere to write them
  EXPECT_FALSE(ReadValues(raw, 3, "out.bin", 2, true).ok());     // with the permutation: one payload
  EXPECT_FALSE(ReadValues("", 3, "", 2, false).ok());            // a width without values
  const std::string npy = ::testing::TempDir() + "/values.npy";
  Array doubles{.dtype = DType::kFloat64, .bytes = std::string(3 * 8, '\0'), .shape = {3}};
  ASSERT_TRUE(WriteArray(npy, FileFormat::kNpy, doubles).ok());
  auto typed = ReadValues(npy, 0, "out.npy", 3, false);
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ((*typed)->dtype, DType::kFloat64);
  EXPECT_FALSE(ReadValues(npy, 0, "out.npy", 4, false).ok());  // 3 values for 4 keys
}

}  // namespace
}  // namespace gpusort::cli
