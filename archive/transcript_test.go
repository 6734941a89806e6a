package archive_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
)

// mdBlock is a fenced code block found by scanMarkdown.
type mdBlock struct{ info, content string }

var fenceOpen = regexp.MustCompile("^(`{3,})([^`]*)$")

// scanMarkdown splits a document the way CommonMark does for the two
// constructs the transcript relies on: fenced code blocks (opened by a
// line of ≥3 backticks at column 0, closed only by a line of at least as
// many backticks and nothing else) and, outside them, code spans (a run of
// n backticks closed by the next run of exactly n). It returns the blocks,
// the code spans and the remaining inline text, where Markdown structure
// could be interpreted.
func scanMarkdown(t *testing.T, doc string) (blocks []mdBlock, spans []string, text []string) {
	t.Helper()
	ls := strings.Split(doc, "\n")
	for i := 0; i < len(ls); i++ {
		if m := fenceOpen.FindStringSubmatch(ls[i]); m != nil {
			n := len(m[1])
			var body []string
			closed := false
			for i++; i < len(ls); i++ {
				l := strings.TrimRight(ls[i], " ")
				if len(l) >= n && strings.Trim(l, "`") == "" {
					closed = true
					break
				}
				body = append(body, ls[i])
			}
			if !closed {
				t.Fatalf("unclosed fence %q", m[1])
			}
			blocks = append(blocks, mdBlock{m[2], strings.Join(body, "\n")})
			continue
		}
		rest := ls[i]
		var outside strings.Builder
		for {
			j := strings.IndexByte(rest, '`')
			if j < 0 {
				outside.WriteString(rest)
				break
			}
			outside.WriteString(rest[:j])
			n := j
			for n < len(rest) && rest[n] == '`' {
				n++
			}
			run := rest[j:n]
			// Find the closing run of exactly the same length.
			k, found := n, -1
			for k < len(rest) {
				a := strings.IndexByte(rest[k:], '`')
				if a < 0 {
					break
				}
				b := k + a
				e := b
				for e < len(rest) && rest[e] == '`' {
					e++
				}
				if e-b == len(run) {
					found = b
					spans = append(spans, rest[n:b])
					rest = rest[e:]
					break
				}
				k = e
			}
			if found < 0 {
				t.Fatalf("unmatched backtick run %q in line %q", run, ls[i])
			}
		}
		text = append(text, outside.String())
	}
	return blocks, spans, text
}

// unescaped reports ASCII punctuation in s that is not backslash-escaped.
func unescaped(s string, set string) (byte, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte(set, s[i]) >= 0 {
			return s[i], true
		}
	}
	return 0, false
}

func TestTranscriptRendersHostileContentInert(t *testing.T) {
	recs, _, _ := externalRoom(t)
	_, _, md := build(t, recs, fixedClock)
	doc := string(md)
	blocks, spans, text := scanMarkdown(t, doc)

	// Outside code blocks and spans, nothing can open a tag, an entity, a
	// link, emphasis or a heading that the renderer did not write itself.
	ownHeading := regexp.MustCompile(`^(# |## |### \d+ · )`)
	for _, l := range text {
		if c, bad := unescaped(l, "<>&[]()*_!|~"); bad {
			t.Errorf("unescaped %q in %q", c, l)
		}
		if strings.HasPrefix(strings.TrimLeft(l, " "), "#") && !ownHeading.MatchString(l) {
			t.Errorf("stray heading %q", l)
		}
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, ">") {
			t.Errorf("indented code or quote from content: %q", l)
		}
	}
	if !strings.HasPrefix(doc, `# \<img src\=x onerror\=alert\(1\)\> \# Topic \& \[link\]\(javascript\:alert\(1\)\) \`+"`code\\`\n") {
		t.Errorf("heading: %q", doc[:strings.IndexByte(doc, '\n')])
	}
	// The hostile message survives verbatim inside one fenced block, with
	// the bidi override neutralized.
	want := strings.ReplaceAll(hostileMessage, "\u202e", "\uFFFD")
	found := false
	for _, b := range blocks {
		if b.content == want {
			found = true
			if b.info != "text" {
				t.Errorf("message block info %q", b.info)
			}
		}
		if strings.ContainsRune(b.content, '\u202e') {
			t.Error("a bidi override reached the transcript")
		}
	}
	if !found {
		t.Errorf("message content not found verbatim in a fenced block:\n%s", doc)
	}
	// Perspectives and reasons are escaped text; types and ids code spans.
	if !strings.Contains(doc, `perspective: \]\(javascript\:alert\(1\)\) \<i\>reviewer\<\/i\>`) {
		t.Error("perspective not escaped")
	}
	if !strings.Contains(doc, `Reason: done \# \[x\]\(y\)`) {
		t.Error("reason not escaped")
	}
	for _, s := range []string{" review.finding ", " triage.label ", " " + recs[0].Envelope.Actor().String() + " "} {
		if !contains(spans, s) {
			t.Errorf("no code span %q", s)
		}
	}
	if !strings.Contains(doc, "## Archive") || !strings.Contains(doc, "events\\_sha3\\_256") {
		t.Error("no archive summary")
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestEscapers(t *testing.T) {
	for _, s := range []string{
		"", "plain", "`", "``a``", "<script>alert(1)</script>", "[x](javascript:alert(1))", "# h", "&amp;",
		"a\nb\r\nc", "````\n```\n", "\u202eabc\u2066", "tab\there", "\x00\x1b[31m", "\xff\xfe", " ` ", "*_~|!",
	} {
		checkEscapers(t, s)
	}
}

func checkEscapers(t *testing.T, s string) {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || r >= 0x7f && r < 0xa0, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r == 0x200e, r == 0x200f, r == 0x061c, r == 0xfeff, r == utf8.RuneError:
			return utf8.RuneError
		}
		return r
	}, s)

	// FencedBlock: one block whose content is the text, line ends
	// normalized.
	blocks, _, text := scanMarkdown(t, archive.FencedBlock("text", s))
	body := strings.ReplaceAll(strings.ReplaceAll(clean, "\r\n", "\n"), "\r", "\n")
	if len(blocks) != 1 || blocks[0].content != strings.TrimSuffix(body, "\n") || blocks[0].info != "text" {
		t.Errorf("FencedBlock(%q) = %+v", s, blocks)
	}
	for _, l := range text {
		if l != "" {
			t.Errorf("FencedBlock(%q) leaves text %q", s, l)
		}
	}

	// CodeSpan: one span holding the text (CommonMark strips the padding).
	inline := strings.NewReplacer("\r", " ", "\n", " ").Replace(clean)
	_, spans, text := scanMarkdown(t, archive.CodeSpan(s))
	if inline == "" {
		inline = " "
	}
	if len(spans) != 1 || spans[0] != " "+inline+" " || strings.Join(text, "") != "" {
		t.Errorf("CodeSpan(%q): spans %q text %q", s, spans, text)
	}

	// EscapeText: one line, every ASCII punctuation escaped; removing the
	// escapes gives the text back.
	e := archive.EscapeText(s)
	if strings.ContainsAny(e, "\r\n") {
		t.Errorf("EscapeText(%q) = %q spans lines", s, e)
	}
	var un strings.Builder
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c == '\\' {
			i++
			un.WriteByte(e[i])
			continue
		}
		if c < 0x80 && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0 {
			t.Errorf("EscapeText(%q): unescaped %q", s, c)
		}
		un.WriteByte(c)
	}
	if un.String() != inline && !(inline == " " && un.String() == "") {
		t.Errorf("EscapeText(%q) unescapes to %q, want %q", s, un.String(), inline)
	}
}

func FuzzEscapers(f *testing.F) {
	for _, s := range []string{"", "`", "<a>", "```\n```", "\u202e", "[x](y)", "# h\n> q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkEscapers(t, s)
	})
}

// Payloads are read through adp's types: a notice's references are
// rendered, and its extension data is shown raw.
func TestTranscriptRendersNoticeReferences(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg005xx", nil)
	w.Must(adp.NewRoomCreate(w.Ctx, w.Author("creator"), adp.RoomCreate{Topic: "Notes", Visibility: adp.VisibilityPublic,
		StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(time.Hour).UnixMilli()}))
	m1 := say(w, "creator", "the conclusion")
	w.Must(adp.NewClose(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomClose),
		adp.Notice{Reason: "settled", References: []envelope.Hash{m1.Envelope.Hash()}, Extra: jsontext.Value(`{"k":"v"}`)}))
	_, _, md := build(t, w.Records, fixedClock)
	doc := string(md)
	for _, want := range []string{"- Reason: settled\n", "- Refers to ` " + m1.Envelope.Hash().String() + " `\n", `"k": "v"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("transcript lacks %q:\n%s", want, doc)
		}
	}
}
