package typeschema

import (
	"errors"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// laterPatterns are the 2026-09-24 vectors' patterns (§12.3.1 rule 2).
type laterPatterns struct {
	Valid   []string `json:"valid"`
	Invalid []string `json:"invalid"`
}

func readLaterPatterns(t testing.TB) laterPatterns {
	t.Helper()
	var v struct {
		Patterns laterPatterns `json:"patterns"`
	}
	if err := strictjson.UnmarshalOpen(fixtures.LaterVectors, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Patterns.Valid) == 0 || len(v.Patterns.Invalid) == 0 {
		t.Fatal("the vectors lost their patterns")
	}
	return v.Patterns
}

// The vectors' patterns alone (2026-09-24 §12.3.1 rule 2); packs'
// TestLaterVectorPatterns checks them in declarations.
func TestLaterVectorPatterns(t *testing.T) {
	v := readLaterPatterns(t)
	for _, p := range v.Valid {
		if err := checkIRegexp(p); err != nil {
			t.Errorf("valid pattern %q: %v", p, err)
		}
	}
	for _, p := range v.Invalid {
		if err := checkIRegexp(p); err == nil {
			t.Errorf("invalid pattern %q accepted", p)
		}
	}
}

// More of rule 2 than the vectors show: anchors, escapes and classes.
func TestIRegexpProfile(t *testing.T) {
	for _, p := range []string{
		"", "^", "$", "^abc$", `\\$`, `^\^$`, `[$^]`, `a[^-]`, `[-a]`, `[a-]`, `[\]\[\-]`,
		`x{0}`, `x{2,5}`, `(a|b|)`, `()`, `é+`, `[α-ω]{3}`, `\{\}\|\(\)\*\+\?\.`, `a,b/c:d@e~f`,
	} {
		if err := checkIRegexp(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{
		`^^a`, `a$$`, `\$`, `\\\$`, `.`, `[a-b-c]`, `[]`, `[^]`, `[a`, `x{5,2}`, `x{,2}`, `\P{L}`,
		`\b`, `\D`, `\0`, `a**`, `(?i)a`, `*a`, `a|*`, `[[:alpha:]]`, "\xff",
	} {
		if err := checkIRegexp(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	// Deep nesting is refused without exhausting the stack.
	if err := checkIRegexp(strings.Repeat("(", 5000) + strings.Repeat(")", 5000)); err == nil {
		t.Error("5,000 nested groups accepted")
	}
}

// FuzzIRegexp: the profile's pattern check never panics, and every
// pattern it admits is one Go's RE2 parses with the meaning the profile
// gives it (the profile excludes exactly what engines disagree on), save
// for a repetition count beyond RE2's bound of 1000, which is
// schema_unsupported.
func FuzzIRegexp(f *testing.F) {
	v := readLaterPatterns(f)
	for _, p := range append(v.Valid, v.Invalid...) {
		f.Add(p)
	}
	for _, p := range []string{`\\$`, `[\]-]`, `x{1001}`, `(a|)*`, `^[^$]$`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 4096 {
			return
		}
		if checkIRegexp(p) != nil {
			return
		}
		if _, err := syntax.Parse(p, syntax.Perl); err != nil {
			var se *syntax.Error
			if errors.As(err, &se) && se.Code == syntax.ErrInvalidRepeatSize {
				return
			}
			t.Fatalf("admitted %q, which RE2 refuses: %v", p, err)
		}
		if strings.ContainsAny(strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$"), ".") && !strings.Contains(p, `\.`) && !strings.Contains(p, "[") {
			t.Fatalf("admitted %q with a dot outside a class", p)
		}
	})
}
