// tinydynamo C++ kernel prelude (book chapter 10, "C++ code generation").
// Every generated kernel file starts with this: plain C++, no torch headers, so it compiles in
// a fraction of a second. Kernels get raw pointers; sizes and strides are constants, or int64_t
// arguments (s0, s1...) when the graph was traced with dynamic shapes (book chapter 12).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// Errors found inside a kernel (an index out of range, an integer division by zero) are
// recorded in the error flag of the call: each entry point declares its own ``td_error``, passes
// its address to the kernels that can find an error, and returns it; the Python wrapper raises
// the matching error. A flag per call, not a global: calls from several threads run at once,
// and an error must reach the call that found it and no other. (Several OpenMP threads of one
// call may set it together, hence the atomic store.)
enum { TD_OK = 0, TD_INDEX_OUT_OF_BOUNDS = 1, TD_INTEGER_DIVISION_BY_ZERO = 2 };

static inline void td_set_error(int* error, int code) { __atomic_store_n(error, code, __ATOMIC_RELAXED); }

// Index arithmetic that may see negative numbers rounds toward minus infinity, as Python does.
static inline int64_t td_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t td_floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// An index read from a tensor (gather): check it, and never read out of bounds.
static inline int64_t td_check_index(int64_t i, int64_t size, int* error) {
  if (i < 0 || i >= size) {
    td_set_error(error, TD_INDEX_OUT_OF_BOUNDS);
    return 0;
  }
  return i;
}

// Integer division and remainder round toward zero (C's / and %), as torch's do. Division by
// zero is an error instead of a crash; x / -1 wraps for the most negative x (we compile -fwrapv).
template <typename T> static inline T td_div_trunc(T a, T b, int* error) {
  if (b == 0) { td_set_error(error, TD_INTEGER_DIVISION_BY_ZERO); return 0; }
  if (std::is_signed<T>::value && b == static_cast<T>(-1)) return static_cast<T>(-a);
  return static_cast<T>(a / b);
}
template <typename T> static inline T td_fmod_int(T a, T b, int* error) {
  if (b == 0) { td_set_error(error, TD_INTEGER_DIVISION_BY_ZERO); return 0; }
  if (std::is_signed<T>::value && b == static_cast<T>(-1)) return 0;
  return static_cast<T>(a % b);
}

// Integer power by squaring; a negative exponent gives 0 except for bases 1 and -1.
template <typename T> static inline T td_ipow(T base, T exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == static_cast<T>(-1)) return (exponent % 2 == 0) ? 1 : static_cast<T>(-1);
    return 0;
  }
  T result = 1;
  while (exponent) {
    if (exponent & 1) result = static_cast<T>(result * base);
    base = static_cast<T>(base * base);
    exponent >>= 1;
  }
  return result;
}

// maximum/minimum propagate nan, as torch.maximum does (std::max does not).
// A float converted to an integer type as eager computes it on x86 (C++ leaves NaN and values out
// of range undefined): they give the most negative int32 or int64 ("integer indefinite"), and the
// narrower types go through int32, keeping its low bits.
template <typename T> static inline T td_float_to_int(double x) {
  if constexpr (sizeof(T) == 8) {
    return (x != x || x >= 0x1p63 || x < -0x1p63) ? INT64_MIN : static_cast<T>(x);
  }
  int32_t wide = (x != x || x >= 0x1p31 || x < -0x1p31) ? INT32_MIN : static_cast<int32_t>(x);
  return static_cast<T>(wide);
}
template <typename T> static inline T td_maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> static inline T td_minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
// sign(nan) is 0, as in torch.sign.
template <typename T> static inline T td_sign(T a) { return a > 0 ? T(1) : (a < 0 ? T(-1) : T(0)); }

// exp without glibc's slow path where eager's result is 0. Its vector expf falls back to scalar
// code for every vector that holds one lane whose result is below float's smallest normal number
// (x < -87.3, -inf included): a causal attention mask, half -inf, makes softmax three times
// slower. An input whose exp rounds to 0 (x < -104 for float, -inf included) is replaced by a
// harmless one before the call, and its result by 0 after. Subnormal results (-104 < x < -87.3)
// still take the slow path: they are exact, as eager's (log(exp(-90)) is -90, not -inf).
// GCC sees through a select on the result: since the select throws that lane's result away, it
// calls exp on x itself. So the result is cleared with a bitwise and, which GCC does not undo;
// and the bounds are variables, or GCC would fold exp(constant).
float td_exp_safe_input = 0.0f;
float td_expf_floor = -104.0f;
double td_exp_floor = -746.0;
template <typename T, typename Bits> static inline T td_zero_unless(T value, bool keep) {
  Bits bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits &= keep ? ~Bits(0) : Bits(0);
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}
static inline float td_expf(float x) {
  bool zero = x < td_expf_floor;
  return td_zero_unless<float, uint32_t>(expf(zero ? td_exp_safe_input : x), !zero);
}
static inline double td_exp(double x) {
  bool zero = x < td_exp_floor;
  return td_zero_unless<double, uint64_t>(exp(zero ? td_exp_safe_input : x), !zero);
}

// Low precision floats are stored as 16 bits and computed in float; each op's result is rounded
// back to the storage precision, so values match eager's op by op.
typedef uint16_t td_bfloat16;
static inline float td_bf16_to_float(td_bfloat16 v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
static inline td_bfloat16 td_float_to_bf16(float f) {
  if (f != f) return 0x7FC0;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<td_bfloat16>(bits >> 16);
}
static inline float td_round_bf16(float f) { return td_bf16_to_float(td_float_to_bf16(f)); }
#ifdef __FLT16_MAX__  // the compiler has _Float16 (GCC 12 and later on x86-64): float16 works
static inline float td_round_f16(float f) { return static_cast<float>(static_cast<_Float16>(f)); }
#endif
