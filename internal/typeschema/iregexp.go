package typeschema

import (
	"fmt"
	"unicode/utf8"
)

// checkIRegexp applies rule 2 of the type schema profile (2026-09-24
// draft §12.3.1) to a pattern value or patternProperties key: an I-Regexp
// (RFC 9485 §5) without the \p{…} and \P{…} category escapes and without
// "." outside a character class, optionally preceded by "^" and followed
// by "$". "^" and "$" are anchors only as the first and last character;
// anywhere else outside a class they are refused (the draft's vectors
// refuse "a^b" and "a$b"), although plain I-Regexp reads them as
// literals.
//
// What the profile admits means the same in every common engine, and in
// Go's RE2 with Perl syntax in particular: the pattern is compiled as it
// stands, with JSON Schema's unanchored search.
func checkIRegexp(p string) error {
	if !utf8.ValidString(p) {
		return fmt.Errorf("not valid UTF-8")
	}
	body := p
	if len(body) > 0 && body[0] == '^' {
		body = body[1:]
	}
	if n := len(body) - 1; n >= 0 && body[n] == '$' {
		// After an odd number of backslashes the "$" is escaped, not an
		// anchor (and I-Regexp has no such escape: the scan refuses it).
		k := 0
		for k < n && body[n-1-k] == '\\' {
			k++
		}
		if k%2 == 0 {
			body = body[:n]
		}
	}
	s := iregexpScanner{src: body}
	if err := s.regexp(0); err != nil {
		return err
	}
	if s.pos < len(s.src) {
		return s.errorf("unexpected %q", s.src[s.pos])
	}
	return nil
}

// maxIRegexpDepth bounds group nesting, so a hostile pattern cannot
// exhaust the stack; the RE2 compile of an admitted pattern has its own,
// lower bound.
const maxIRegexpDepth = 1000

// iregexpScanner is a recursive-descent reader of the RFC 9485 grammar.
type iregexpScanner struct {
	src string
	pos int
}

func (s *iregexpScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *iregexpScanner) peek() (byte, bool) {
	if s.pos < len(s.src) {
		return s.src[s.pos], true
	}
	return 0, false
}

// regexp reads i-regexp = branch *( "|" branch ).
func (s *iregexpScanner) regexp(depth int) error {
	if depth > maxIRegexpDepth {
		return s.errorf("groups nest deeper than %d", maxIRegexpDepth)
	}
	for {
		if err := s.branch(depth); err != nil {
			return err
		}
		if c, ok := s.peek(); !ok || c != '|' {
			return nil
		}
		s.pos++
	}
}

// branch reads *piece, up to "|", ")" or the end.
func (s *iregexpScanner) branch(depth int) error {
	for {
		c, ok := s.peek()
		if !ok || c == '|' || c == ')' {
			return nil
		}
		if err := s.atom(depth); err != nil {
			return err
		}
		if err := s.quantifier(); err != nil {
			return err
		}
	}
}

// atom reads NormalChar / charClass / "(" i-regexp ")", where the profile
// leaves charClass only SingleCharEsc and charClassExpr.
func (s *iregexpScanner) atom(depth int) error {
	c := s.src[s.pos]
	switch c {
	case '(':
		s.pos++
		if err := s.regexp(depth + 1); err != nil {
			return err
		}
		if c, ok := s.peek(); !ok || c != ')' {
			return s.errorf("unclosed group")
		}
		s.pos++
		return nil
	case '[':
		return s.classExpr()
	case '\\':
		return s.escape()
	case '.':
		return s.errorf(`"." outside a character class (the type schema profile excludes it)`)
	case '^', '$':
		return s.errorf("%q is an anchor only as the first or last character", c)
	case ')', '*', '+', '?', '{', '}', ']', '|':
		return s.errorf("unexpected %q", c)
	}
	_, n := utf8.DecodeRuneInString(s.src[s.pos:])
	s.pos += n
	return nil
}

// quantifier reads an optional ( "*" / "+" / "?" ) / "{" n [ "," [ m ] ] "}".
// A quantifier is not itself quantified: "a*?" and "a{2}?" (lazy forms in
// other dialects) fail at the second one, which starts no atom.
func (s *iregexpScanner) quantifier() error {
	c, ok := s.peek()
	if !ok {
		return nil
	}
	switch c {
	case '*', '+', '?':
		s.pos++
		return nil
	case '{':
	default:
		return nil
	}
	s.pos++
	lo, ok := s.number()
	if !ok {
		return s.errorf("a range quantifier needs a number")
	}
	hi := lo
	if c, _ := s.peek(); c == ',' {
		s.pos++
		hi = -1
		if c, _ := s.peek(); c >= '0' && c <= '9' {
			hi, _ = s.number()
		}
	}
	if c, ok := s.peek(); !ok || c != '}' {
		return s.errorf("unclosed range quantifier")
	}
	s.pos++
	if hi >= 0 && hi < lo {
		return s.errorf("range quantifier {%d,%d} is empty", lo, hi)
	}
	return nil
}

// number reads 1*DIGIT, saturating far above any bound RE2 admits.
func (s *iregexpScanner) number() (int, bool) {
	start, n := s.pos, 0
	for s.pos < len(s.src) && s.src[s.pos] >= '0' && s.src[s.pos] <= '9' {
		n = min(n*10+int(s.src[s.pos]-'0'), 1<<20)
		s.pos++
	}
	return n, s.pos > start
}

// escape reads SingleCharEsc: "\" and one of ( ) * + - . ? [ \ ] ^ { | }
// n r t. Inside a class the same set applies. Multi-character escapes
// (\d, \w, \s, …), back references and the \p/\P category escapes are
// refused.
func (s *iregexpScanner) escape() error {
	s.pos++ // the backslash
	c, ok := s.peek()
	if !ok {
		return s.errorf("trailing backslash")
	}
	switch c {
	case '(', ')', '*', '+', '-', '.', '?', '[', '\\', ']', '^', '{', '|', '}', 'n', 'r', 't':
		s.pos++
		return nil
	case 'p', 'P':
		return s.errorf(`the \%c{…} category escape is excluded by the type schema profile`, c)
	}
	return s.errorf(`\%c is not an I-Regexp escape`, c)
}

// classExpr reads "[" [ "^" ] ( "-" / CCE1 ) *CCE1 [ "-" ] "]" with
// CCE1 = ( CCchar [ "-" CCchar ] ) and CCchar any character but "-", "[",
// "\", "]", or a SingleCharEsc.
func (s *iregexpScanner) classExpr() error {
	s.pos++ // "["
	if c, _ := s.peek(); c == '^' {
		s.pos++
	}
	first := true
	for {
		c, ok := s.peek()
		if !ok {
			return s.errorf("unclosed character class")
		}
		switch {
		case c == ']' && !first:
			s.pos++
			return nil
		case c == '-':
			// A "-" is a literal only first or last.
			s.pos++
			if first {
				first = false
				continue
			}
			if c, ok := s.peek(); ok && c == ']' {
				s.pos++
				return nil
			}
			return s.errorf(`"-" inside a character class must be first, last, or in a range`)
		}
		first = false
		lo, err := s.classChar()
		if err != nil {
			return err
		}
		// An optional range: CCchar "-" CCchar, unless the "-" is the
		// class's last character.
		if c, _ := s.peek(); c == '-' && s.pos+1 < len(s.src) && s.src[s.pos+1] != ']' {
			s.pos++
			hi, err := s.classChar()
			if err != nil {
				return err
			}
			if hi < lo {
				return s.errorf("character range %q-%q is reversed", lo, hi)
			}
		}
	}
}

// classChar reads one CCchar and returns the character it stands for.
func (s *iregexpScanner) classChar() (rune, error) {
	c := s.src[s.pos]
	switch c {
	case '\\':
		if err := s.escape(); err != nil {
			return 0, err
		}
		switch e := rune(s.src[s.pos-1]); e {
		case 'n':
			return '\n', nil
		case 'r':
			return '\r', nil
		case 't':
			return '\t', nil
		default:
			return e, nil
		}
	case '[', ']', '-':
		return 0, s.errorf("%q must be escaped inside a character class", c)
	}
	r, n := utf8.DecodeRuneInString(s.src[s.pos:])
	s.pos += n
	return r, nil
}
