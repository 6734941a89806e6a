package identity

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// ratOf is the exact value of a JSON number whose exponent is small.
func ratOf(s string) (*big.Rat, bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// FuzzNumericDate: whatever parseNumericDate accepts is a non-negative
// value at most 2^53−1, and cmp orders it exactly as big.Rat does.
func FuzzNumericDate(f *testing.F) {
	for _, s := range [][2]string{
		{"1779753700.5", "1779753700.50"}, {"0", "0.0"}, {"1e-10", "0.0000000001"},
		{"17797537000000000001e-10", "1779753700.0000000001"}, {"9007199254740991", "9.007199254740991e15"},
		{"0.09", "0.1"}, {"12.001", "12.01"}, {"1E2", "100.000"}, {"5", "4.99999999999999999999"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		da, okA := parseNumber(a)
		db, okB := parseNumber(b)
		if !okA || !okB {
			return
		}
		ra, ok1 := ratOf(a)
		rb, ok2 := ratOf(b)
		if !ok1 || !ok2 {
			return
		}
		max := new(big.Rat).SetInt64(strictjson.MaxSafeInteger)
		if ra.Sign() < 0 || ra.Cmp(max) > 0 {
			t.Fatalf("%s accepted", a)
		}
		if got, want := da.cmp(db), ra.Cmp(rb); got != want {
			t.Fatalf("cmp(%s, %s) = %d, big.Rat says %d", a, b, got, want)
		}
		if got, want := da.add(7).cmp(db), new(big.Rat).Add(ra, big.NewRat(7, 1)).Cmp(rb); got != want {
			t.Fatalf("cmp(%s + 7, %s) = %d, big.Rat says %d", a, b, got, want)
		}
	})
}

// parseNumber applies the JSON grammar and number policy first, as
// VerifyRequestToken does.
func parseNumber(s string) (numericDate, bool) {
	if strictjson.Validate([]byte(s)) != nil || len(s) == 0 || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return numericDate{}, false
	}
	return parseNumericDate([]byte(s))
}

func TestNumericDateClock(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		date string
	}{
		{time.Unix(1779753700, 0), "1779753700"},
		{time.Unix(1779753700, 500_000_000), "1779753700.5"},
		{time.Unix(1779753700, 1), "1779753700.000000001"},
		{time.Unix(0, 10), "0.00000001"},
	} {
		d, ok := parseNumericDate([]byte(c.date))
		if !ok || dateOf(c.t).cmp(d) != 0 || !d.time().Equal(c.t) {
			t.Errorf("%s: dateOf(%v) = %+v, parsed %+v (%v), time %v", c.date, c.t, dateOf(c.t), d, ok, d.time())
		}
	}
	if d, _ := parseNumericDate([]byte("1.0000000019")); !d.time().Equal(time.Unix(1, 1)) {
		t.Errorf("sub-nanosecond fraction: %v", d.time())
	}
}
