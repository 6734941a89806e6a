package archive

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/packs"
)

// Transcript renders records as a Markdown transcript for people (§19
// formats.markdown). Agent content is untrusted (§22): nothing an agent
// wrote is ever interpreted as Markdown structure or HTML.
//
//   - Single-line text (topic, reasons, roles, type names) is either put
//     in a code span whose backtick delimiter is longer than any backtick
//     run inside, or written with every ASCII punctuation character
//     backslash-escaped, so <, >, &, [, ], (, ), `, #, *, _, |, ! and the
//     rest are literal (no tags, entities, links, emphasis or headings).
//     Line breaks become spaces.
//   - Multi-line text (message content, agenda, guidance, payload JSON) is
//     put in a fenced code block whose backtick fence is longer than any
//     backtick run inside, so no line of the content can close it.
//   - Control characters other than tab and line feed, and the Unicode
//     bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E,
//     U+200F, U+061C) and U+FEFF, are replaced by U+FFFD, so text cannot
//     reorder what a reader sees.
//
// The JSONL record log is the authoritative archive; the transcript is a
// view of it and is not covered by any digest.
//
// A Transcript is not safe for concurrent use.
type Transcript struct {
	w       *bufio.Writer
	started bool
	err     error
}

// NewTranscript returns a Transcript writing to w. Call Add for each
// record in seq order, then Close.
func NewTranscript(w io.Writer) *Transcript {
	return &Transcript{w: bufio.NewWriter(w)}
}

// Add renders one record. The first record (seq 1, room.create) also
// writes the document heading.
func (t *Transcript) Add(rec *adp.Record) error {
	if t.err != nil {
		return t.err
	}
	if rec.Redacted != nil {
		// 2026-09-24 §14.1: the host removed the envelope; only its type
		// and event ID remain.
		t.recordHeading(rec)
		t.str("\n\n- Redacted by the host\n- Event: ")
		t.code(rec.EventHash().String())
		t.str("\n\n")
		return t.err
	}
	ev := rec.Envelope.Event()
	if !t.started {
		t.started = true
		t.heading(rec.RoomID, ev)
	}
	t.recordHeading(rec)
	t.str("\n\n- Actor: ")
	t.code(ev.Actor.String())
	t.str("\n- Event: ")
	t.code(rec.Envelope.Hash().String())
	t.str("\n")
	t.body(ev)
	t.str("\n")
	return t.err
}

// recordHeading writes a record's heading: seq, type and acceptance time.
func (t *Transcript) recordHeading(rec *adp.Record) {
	t.str("### ")
	t.str(strconv.FormatInt(rec.Seq, 10))
	t.str(" · ")
	t.code(rec.Type())
	t.str(" · ")
	t.str(formatTime(rec.ReceivedAt))
}

// Close writes the summary of m (nil writes none) and flushes.
func (t *Transcript) Close(m *Manifest) error {
	if t.err != nil {
		return t.err
	}
	if m != nil && m.Draft.OrDefault() != adp.Draft20260704 {
		t.str("## Archive\n\n- Records: seq 1–")
		t.str(strconv.FormatInt(m.LastSeq, 10))
		t.str("\n- Last hash: ")
		t.code(m.LastHash.String())
		t.str(", the commitment to every record through the pre\\_hash chain")
		t.str("\n- Generated: ")
		t.str(formatTime(m.GeneratedAt))
		t.str("\n\nThis transcript is a rendering. The JSONL record log is the archive: verify it, not this file.\n")
	} else if m != nil {
		t.str("## Archive\n\n- Records: ")
		t.str(strconv.FormatInt(m.EventCount, 10))
		t.str(", seq ")
		t.str(strconv.FormatInt(m.FirstSeq, 10))
		t.str("–")
		t.str(strconv.FormatInt(m.LastSeq, 10))
		t.str("\n- Last hash: ")
		t.code(m.LastHash.String())
		t.str("\n- events\\_sha3\\_256: ")
		t.code(m.EventsSHA3256.String())
		t.str("\n- archive\\_root: ")
		t.code(m.ArchiveRoot.String())
		if m.MerkleRooted() {
			t.str(", the Merkle root of the record hashes")
		}
		t.str("\n- Generated: ")
		t.str(formatTime(m.GeneratedAt))
		t.str("\n\nThis transcript is a rendering. The JSONL record log is the archive: verify it, not this file.\n")
	}
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

func (t *Transcript) heading(roomID string, ev envelope.Event) {
	var p adp.RoomCreate
	if ev.Type != adp.TypeRoomCreate || !decode(ev.Payload, &p) {
		p.Topic = ""
	}
	t.str("# ")
	if p.Topic == "" {
		t.str("Room archive")
	} else {
		t.text(p.Topic)
	}
	t.str("\n\n- Room: ")
	t.code(roomID)
	t.str("\n\n")
}

// skipDeclarations leaves room.create's type declarations undecoded: the
// transcript shows them in the raw payload and need not compile their
// schemas.
var skipDeclarations = json.WithUnmarshalers(json.UnmarshalFromFunc(func(d *jsontext.Decoder, _ *packs.Declaration) error {
	return d.SkipValue()
}))

// decode reads a built-in payload into its adp type. Rendering never
// fails: a payload that does not decode is shown raw.
func decode(payload jsontext.Value, v any) bool {
	return json.Unmarshal(payload, v, skipDeclarations) == nil
}

// body renders what an event says, by type, through adp's payload types.
// What it does not render (custom types, payloads that do not decode,
// reasons next to a structured summary) is shown as the raw payload JSON.
func (t *Transcript) body(ev envelope.Event) {
	raw := true
	switch ev.Type {
	case adp.TypeRoomCreate:
		var p adp.RoomCreate
		if !decode(ev.Payload, &p) {
			break
		}
		t.str("- Topic: ")
		t.text(p.Topic)
		t.str("\n- Visibility: ")
		t.code(string(p.Visibility))
		t.str("\n- Start: " + formatTime(p.StartTime) + "\n- End: " + formatTime(p.EndTime) + "\n")
		if p.Agenda != "" {
			t.str("\nAgenda:\n\n")
			t.fence("text", p.Agenda)
		}
		if p.Guidance != "" {
			t.str("\nGuidance:\n\n")
			t.fence("text", p.Guidance)
		}
	case adp.TypeRoomUpdate:
		t.str("- Updates the room contract\n")
		if u := new(adp.RoomUpdate); decode(ev.Payload, u) {
			if u.Topic != nil {
				t.str("- Topic: ")
				t.text(*u.Topic)
				t.str("\n")
			}
			if u.StartTime != nil {
				t.str("- Start: " + formatTime(*u.StartTime) + "\n")
			}
			if u.EndTime != nil {
				t.str("- End: " + formatTime(*u.EndTime) + "\n")
			}
		}
	case adp.TypeRoomJoin:
		var p adp.Join
		if !decode(ev.Payload, &p) {
			break
		}
		t.str("- Joined as ")
		t.code(string(p.Role))
		if p.Perspective != nil && *p.Perspective != "" {
			t.str(", perspective: ")
			t.text(*p.Perspective)
		}
		t.str("\n")
		raw = false
	case adp.TypeRoomJoinReview:
		var p adp.JoinReview
		var signed adp.SignedJoinReview
		switch {
		case decode(ev.Payload, &signed) && signed.Request != nil:
			// 2026-09-24: the review embeds the signed request.
			p = adp.JoinReview{Decision: signed.Decision, Role: signed.Role}
			p.Request.Applicant = signed.Request.Actor()
		case !decode(ev.Payload, &p):
			p.Decision = ""
		}
		if p.Decision == "" {
			break
		}
		t.str("- Join request of ")
		t.code(p.Request.Applicant.String())
		t.str(": ")
		t.code(string(p.Decision))
		if p.Role != "" {
			t.str(" as ")
			t.code(string(p.Role))
		}
		t.str("\n")
	case adp.TypeMemberRoleUpdate:
		var p adp.RoleUpdate
		if !decode(ev.Payload, &p) {
			break
		}
		t.str("- Role of ")
		t.code(p.Member.String())
		t.str(" set to ")
		t.code(string(p.Role))
		t.str("\n")
		raw = p.Reason != "" || len(p.Extra) > 0
	case adp.TypeMemberRemove:
		var p adp.MemberRemove
		if !decode(ev.Payload, &p) {
			break
		}
		t.str("- Removed ")
		t.code(p.Member.String())
		if p.Ban {
			t.str(" and banned")
		}
		t.str("\n")
		raw = p.Reason != "" || len(p.References) > 0 || len(p.Extra) > 0
	case adp.TypeRoomLeave, adp.TypeRoomClose, adp.TypeRoomCancel:
		var p adp.Notice
		if !decode(ev.Payload, &p) {
			break
		}
		if p.Reason != "" {
			t.str("- Reason: ")
			t.text(p.Reason)
			t.str("\n")
		}
		for _, r := range p.References {
			t.str("- Refers to ")
			t.code(r.String())
			t.str("\n")
		}
		raw = len(p.Extra) > 0
	case adp.TypeTypeDefine:
		// adp.NewTypeDefine's payload type; parsing it compiles the
		// schema (through the schema cache).
		var d packs.Declaration
		if !decode(ev.Payload, &d) {
			break
		}
		switch {
		case d.Import != nil && d.Import.Use != "":
			t.str("- Imports registered pack ")
			t.code(d.Import.Use)
		case d.Import != nil:
			t.str("- Imports external pack ")
			t.code(d.Import.Pack)
		case d.Definition != nil:
			t.str("- Defines type ")
			t.code(d.Definition.Type)
		}
		t.str("\n")
	case adp.TypeMessageCreate:
		var p adp.Message
		if !decode(ev.Payload, &p) {
			break
		}
		t.str("- Content type: ")
		t.code(p.ContentType)
		t.str("\n")
		for _, r := range p.References {
			t.str("- Replies to ")
			t.code(r.String())
			t.str("\n")
		}
		t.str("\n")
		if p.Content.Kind() == '"' {
			s, _ := jsontext.AppendUnquote(nil, p.Content)
			t.fence("text", string(s))
		} else {
			t.fence("json", indentJSON(p.Content))
		}
		raw = len(p.Extra) > 0
	}
	if raw {
		t.str("\n")
		t.fence("json", indentJSON(ev.Payload))
	}
}

func indentJSON(v jsontext.Value) string {
	c := jsontext.Value(append([]byte(nil), v...))
	if err := c.Indent(jsontext.WithIndent("  ")); err != nil {
		return string(v)
	}
	return string(c)
}

func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func (t *Transcript) str(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

// text writes s as inline Markdown text with every ASCII punctuation
// character backslash-escaped and line breaks turned into spaces.
func (t *Transcript) text(s string) { t.str(escapeText(s)) }

// code writes s as a code span.
func (t *Transcript) code(s string) { t.str(codeSpan(s)) }

// fence writes s as a fenced code block.
func (t *Transcript) fence(info, s string) { t.str(fencedBlock(info, s)) }

// escapeText returns s as inline Markdown text that renders literally:
// every ASCII punctuation character is backslash-escaped (CommonMark
// allows escaping any of them), line breaks become spaces, and control and
// bidirectional-override characters become U+FFFD.
func escapeText(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for _, r := range sanitize(s) {
		switch {
		case r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r < 0x80 && isASCIIPunct(byte(r)):
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// codeSpan returns s as a Markdown code span: delimited by one more
// backtick than the longest run of backticks in s and padded with one
// space on each side (which CommonMark strips), so the content renders
// literally whatever it holds. Line breaks become spaces; control and
// bidirectional-override characters become U+FFFD. An empty s renders as
// an empty-looking span.
func codeSpan(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, sanitize(s))
	if s == "" {
		s = " "
	}
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	return ticks + " " + s + " " + ticks
}

// fencedBlock returns s as a fenced code block with the given info string
// (which must be a plain word such as "text" or "json"). The fence is one
// backtick longer than the longest backtick run in s, and at least three,
// so no line of s can close it; control and bidirectional-override
// characters become U+FFFD. CommonMark renders the content literally: no
// HTML, entities, links or emphasis are interpreted.
func fencedBlock(info, s string) string {
	s = sanitizeBlock(s)
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	var b strings.Builder
	b.Grow(len(s) + 2*len(fence) + len(info) + 3)
	b.WriteString(fence)
	b.WriteString(info)
	b.WriteByte('\n')
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(fence)
	b.WriteByte('\n')
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// unsafeRune reports characters that must not reach a reader: C0/C1
// controls (tab and line breaks are handled by the callers), bidi
// controls, the BOM, and invalid UTF-8.
func unsafeRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c, r == 0xfeff:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// sanitizeBlock is sanitize for block content, where a lone CR (a line
// ending in CommonMark) is normalized to LF.
func sanitizeBlock(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return sanitize(s)
}
