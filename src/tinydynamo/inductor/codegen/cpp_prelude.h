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

// float exp, inline, so that a loop calling it vectorizes without a call per vector (which spills
// every vector register) and without libmvec's scalar path for lanes whose result is subnormal or
// 0 (x < -87.3, the -inf of an attention mask included). Cephes' method: exp(x) = 2^n exp(r), with
// n = round(x / ln 2) (adding and subtracting 1.5 * 2^23 rounds to nearest) and r = x - n ln 2 in
// two parts (exact), exp(r) by a degree-7 polynomial on |r| <= ln(2)/2: within 1.02 ulp of the
// exact result over the whole range, subnormal results included, which 2^n reaches in two steps
// of half the exponent each (only the last multiplication rounds).
static inline float td_float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
static inline float td_expf(float x) {
  float clamped = x != x ? 0.0f : (x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x));
  float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t k = static_cast<int32_t>(n);
  int32_t half = k / 2;
  float result = y * td_float_from_bits(static_cast<uint32_t>(half + 127) << 23)
                   * td_float_from_bits(static_cast<uint32_t>(k - half + 127) << 23);
  if (x > 88.72283935546875f) result = std::numeric_limits<float>::infinity();
  if (x < -103.97208f) result = 0.0f;
  return x != x ? x : result;
}

// double exp without glibc's slow path where eager's result is 0: libmvec's vector exp falls back
// to scalar code for every vector that holds one lane whose result is subnormal or 0. An input
// whose exp rounds to 0 (x < -746, -inf included) is replaced by a harmless one before the call,
// and its result by 0 after. The bounds are variables, not constants: GCC would fold
// exp(constant) and call exp on x itself.
double td_exp_safe_input = 0.0;
double td_exp_floor = -746.0;
static inline double td_exp(double x) {
  double result = exp(x < td_exp_floor ? td_exp_safe_input : x);
  return x < td_exp_floor ? 0.0 : result;
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
