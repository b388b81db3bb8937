// The CLI's file formats without a server: .npy headers as NumPy writes them (and bad ones), text
// round trips of the special floats, raw sizes; and what the fuzzers (tests/fuzz) found.
#include "client/cli/array_file.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/cli/dtype_names.h"

namespace gpusort::cli {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  // np.save of np.arange(3, dtype='<u4') writes exactly this 128-byte-aligned v1.0 header.
  const std::string header = NpyHeader(v1::DTYPE_UINT32, {3});
  EXPECT_EQ(header.size() % 64, 0u);
  EXPECT_EQ(header.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_THAT(header, HasSubstr("{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(header.back(), '\n');
  EXPECT_THAT(NpyHeader(v1::DTYPE_FLOAT64, {4, 5}), HasSubstr("'shape': (4,5)"));
}

TEST(Npy, RoundTripOneAndTwoDimensions) {
  for (auto shape : {std::vector<std::size_t>{7}, std::vector<std::size_t>{3, 4},
                     std::vector<std::size_t>{0}}) {
    Array a{.dtype = v1::DTYPE_INT64, .bytes = {}, .shape = shape};
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
    EXPECT_EQ(b->dtype, v1::DTYPE_INT64);
    EXPECT_EQ(b->shape, shape);
    EXPECT_EQ(b->bytes, a.bytes);
  }
}

TEST(Npy, BadFilesAreRefusedWithAReason) {
  struct Case { std::string bytes, reason; };
  const std::string good = NpyHeader(v1::DTYPE_FLOAT32, {2}) + std::string(8, '\0');
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string three_d = NpyHeader(v1::DTYPE_FLOAT32, {1, 1, 2}) + std::string(8, '\0');
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
  auto mismatch = ReadArray(path, FileFormat::kNpy, v1::DTYPE_INT32);
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("holds f32 but --dtype says i32"));
}

TEST(Npy, ShapeWhoseByteCountOverflowsIsRefused) {
  // npy_reader_fuzzer: 2^63 i8 elements are 2^66 bytes, which wrapped to 0, so a file of the header alone
  // was read as an array of that shape (and (2^62 + 1) x 4 f4 wrapped to 16 bytes).
  for (const auto& [dtype, shape] : {std::pair{v1::DTYPE_INT64, std::vector<std::size_t>{std::size_t{1} << 63}},
                                     std::pair{v1::DTYPE_FLOAT32, std::vector<std::size_t>{(std::size_t{1} << 62) + 1, 4}}}) {
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
  Array a{.dtype = v1::DTYPE_FLOAT64, .bytes = {}, .shape = {}};
  for (double v : values) a.bytes.append(reinterpret_cast<const char*>(&v), 8);
  const std::string path = TempPath("special.txt");
  ASSERT_TRUE(WriteArray(path, FileFormat::kText, a).ok());
  auto b = ReadArray(path, FileFormat::kText, v1::DTYPE_FLOAT64);
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
  auto a = ReadArray(path, FileFormat::kText, v1::DTYPE_UINT64);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->count(), 3u);
  WriteFile(path, "1\n2\n18446744073709551616\n");
  auto overflow = ReadArray(path, FileFormat::kText, v1::DTYPE_UINT64);
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr(":3: "));
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr("out of range"));
  WriteFile(path, "1\nseven\n");
  auto junk = ReadArray(path, FileFormat::kText, v1::DTYPE_INT32);
  EXPECT_THAT(std::string(junk.status().message()), HasSubstr("'seven' is not a i32 number"));
  EXPECT_THAT(std::string(ReadArray(path, FileFormat::kText, std::nullopt).status().message()),
              HasSubstr("--dtype is required"));
}

TEST(Text, OneSignAtMost) {
  // text_reader_fuzzer: "--0" read as 0 (the float path takes one '-' off, from_chars took another), and
  // "+-5" as -5.
  const std::string path = TempPath("signs.txt");
  for (v1::DType dtype : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_INT32, v1::DTYPE_INT64, v1::DTYPE_UINT32}) {
    for (const char* text : {"--0", "+-5", "-+5", "++5", "--nan", "+-inf"}) {
      WriteFile(path, std::string("1\n") + text + "\n");
      auto a = ReadArray(path, FileFormat::kText, dtype);
      ASSERT_FALSE(a.ok()) << text << " as " << DTypeName(dtype);
      EXPECT_THAT(std::string(a.status().message()), HasSubstr(":2: '" + std::string(text) + "' is not a"));
    }
    WriteFile(path, "+5\n-5\n");
    EXPECT_EQ(ReadArray(path, FileFormat::kText, dtype).ok(), dtype != v1::DTYPE_UINT32) << DTypeName(dtype);
  }
}

TEST(Raw, SizeMustBeWholeElements) {
  const std::string path = TempPath("odd.bin");
  WriteFile(path, std::string(10, 'x'));
  EXPECT_THAT(std::string(ReadArray(path, FileFormat::kRaw, v1::DTYPE_UINT64).status().message()),
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

}  // namespace
}  // namespace gpusort::cli
