package identity

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// numericDate is an RFC 7519 NumericDate held exactly: whole seconds plus
// a fraction of a second in decimal digits. Request tokens compare iat,
// exp and nbf with the clock at the nanosecond and with each other at full
// precision, so no float rounding can move a boundary.
type numericDate struct {
	sec int64 // 0 … 2^53−1
	// The fraction is 0.[zeros × '0'][frac]: frac has no trailing zeros
	// and, when not empty, a non-zero first digit. zeros is kept as a
	// count so that "1e-999999" costs no memory.
	zeros int64
	frac  string
}

// parseNumericDate reads a JSON number as a non-negative NumericDate: an
// integer or a number with a fraction or an exponent, within 0 … 2^53−1.
// A minus sign (including "-0") is refused, as are exponents beyond ±2^40.
// raw must already satisfy the JSON number grammar.
func parseNumericDate(raw []byte) (numericDate, bool) {
	s := string(raw)
	if s == "" || s[0] == '-' {
		return numericDate{}, false
	}
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.ParseInt(strings.TrimPrefix(s[i+1:], "+"), 10, 64)
		if err != nil || e > 1<<40 || e < -(1<<40) {
			return numericDate{}, false
		}
		exp = e
	}
	intPart, fracPart, _ := strings.Cut(mant, ".")
	if intPart == "" || strings.Trim(intPart+fracPart, "0123456789") != "" {
		return numericDate{}, false
	}
	// value = 0.digits × 10^point
	digits := intPart + fracPart
	point := int64(len(intPart)) + exp
	lead := len(digits) - len(strings.TrimLeft(digits, "0"))
	digits, point = digits[lead:], point-int64(lead)
	digits = strings.TrimRight(digits, "0")
	if digits == "" {
		return numericDate{}, true // zero
	}
	if point > 16 {
		return numericDate{}, false // ≥ 10^16 > 2^53−1
	}
	var d numericDate
	if point <= 0 {
		d.zeros, d.frac = -point, digits
		return d, true
	}
	whole := digits[:min(int64(len(digits)), point)]
	for int64(len(whole)) < point {
		whole += "0"
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n > strictjson.MaxSafeInteger {
		return numericDate{}, false
	}
	d.sec = n
	if int64(len(digits)) > point {
		if n == strictjson.MaxSafeInteger {
			return numericDate{}, false // above 2^53−1
		}
		rest := digits[point:]
		trimmed := strings.TrimLeft(rest, "0")
		d.zeros, d.frac = int64(len(rest)-len(trimmed)), trimmed
	}
	return d, true
}

// dateOf is t as a NumericDate (t.Unix() whole seconds, which is the floor
// also before 1970, and the nanoseconds as the fraction).
func dateOf(t time.Time) numericDate {
	d := numericDate{sec: t.Unix()}
	if ns := t.Nanosecond(); ns != 0 {
		f := strconv.Itoa(ns)
		f = strings.Repeat("0", 9-len(f)) + f
		f = strings.TrimRight(f, "0")
		trimmed := strings.TrimLeft(f, "0")
		d.zeros, d.frac = int64(len(f)-len(trimmed)), trimmed
	}
	return d
}

// add returns d plus whole seconds.
func (d numericDate) add(secs int64) numericDate {
	d.sec += secs
	return d
}

// cmp compares d and e exactly: -1, 0 or +1.
func (d numericDate) cmp(e numericDate) int {
	switch {
	case d.sec != e.sec:
		if d.sec < e.sec {
			return -1
		}
		return 1
	case d.frac == "" || e.frac == "":
		// At most one fraction is non-zero.
		if d.frac == e.frac {
			return 0
		}
		if d.frac == "" {
			return -1
		}
		return 1
	case d.zeros != e.zeros:
		// More leading zeros is a smaller fraction.
		if d.zeros > e.zeros {
			return -1
		}
		return 1
	}
	// Same leading zeros, first digits non-zero, no trailing zeros: the
	// decimal order is the string order.
	return strings.Compare(d.frac, e.frac)
}

// time returns d as a time.Time, truncating a fraction finer than a
// nanosecond.
func (d numericDate) time() time.Time {
	var ns int64
	if d.frac != "" && d.zeros < 9 {
		f := strings.Repeat("0", int(d.zeros)) + d.frac
		if len(f) > 9 {
			f = f[:9]
		}
		f += strings.Repeat("0", 9-len(f))
		ns, _ = strconv.ParseInt(f, 10, 64)
	}
	return time.Unix(d.sec, ns)
}
