// A property a fuzz target asserts: a sanitizer sees memory errors and undefined behaviour, but not a
// decoder that accepts what it must refuse, so each target states what must hold and aborts when it does
// not (libFuzzer then saves the input as a crash, like any other).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                                   \
  do {                                                                                          \
    if (!(condition)) {                                                                         \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)
