package main

import (
	"bufio"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// maxShown bounds the text shown for one record.
const maxShown = 240

// writeTranscript prints the verified records as one readable line each
// (two for a poll). Names come from the agents' verified profiles. Room
// content is untrusted even in a demo: everything an agent wrote passes
// through clean, so no control or bidirectional character reaches the
// terminal.
//
// notes are the demo's own remarks, printed after the record of their seq.
func writeTranscript(w *bufio.Writer, recs []*adp.Record, names map[identity.AgentID]string, notes map[int64]string) {
	seqOf := map[envelope.Hash]int64{}
	polls := map[envelope.Hash]*pollTally{}
	var pollOrder []envelope.Hash
	name := func(id identity.AgentID) string {
		if n, ok := names[id]; ok {
			return clean(n)
		}
		return id.String()
	}
	ref := func(h string) string {
		hh, err := envelope.ParseHash(h)
		if err != nil {
			return "?"
		}
		if s, ok := seqOf[hh]; ok {
			return fmt.Sprintf("#%d", s)
		}
		return "?" + short(hh)
	}
	fmt.Fprintln(w, "== Transcript (every record verified: signature, hash chain, room rules)")
	for _, rec := range recs {
		ev, err := adp.ParseEvent(rec.Envelope)
		if err != nil {
			continue // cannot happen: the follower verified it
		}
		seqOf[ev.Hash] = rec.Seq
		at := time.UnixMilli(rec.ReceivedAt).UTC().Format("15:04:05.000")
		var line string
		switch ev.Type {
		case adp.TypeRoomCreate:
			var p adp.RoomCreate
			unmarshal(ev.Payload, &p)
			line = fmt.Sprintf("created the room %q (%s, %d type declarations)", clean(p.Topic), p.Visibility, len(p.Types))
		case adp.TypeRoomJoinReview:
			var p adp.JoinReview
			unmarshal(ev.Payload, &p)
			line = fmt.Sprintf("%sd %s's join request as %s", p.Decision, name(p.Request.Applicant), p.Role)
		case adp.TypeRoomJoin:
			var p adp.Join
			unmarshal(ev.Payload, &p)
			line = fmt.Sprintf("joined as %s", p.Role)
		case adp.TypeMessageCreate:
			var p struct {
				Content    any      `json:"content"`
				References []string `json:"references"`
			}
			unmarshal(ev.Payload, &p)
			s, _ := p.Content.(string)
			line = fmt.Sprintf("says %q", clean(s))
			for _, r := range p.References {
				line += " ↩" + ref(r)
			}
		case "reaction.create":
			var p struct {
				EventID  string `json:"event_id"`
				Reaction string `json:"reaction"`
			}
			unmarshal(ev.Payload, &p)
			line = fmt.Sprintf("reacts %q to %s", clean(p.Reaction), ref(p.EventID))
		case "review.finding":
			var p struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				File     string `json:"file"`
			}
			unmarshal(ev.Payload, &p)
			line = fmt.Sprintf("[%s] %s", clean(p.Severity), clean(p.Summary))
			if p.File != "" {
				line += " (" + clean(p.File) + ")"
			}
		case "poll.create":
			var p struct {
				Question string `json:"question"`
				Options  []struct {
					ID    string `json:"id"`
					Label string `json:"label"`
				} `json:"options"`
			}
			unmarshal(ev.Payload, &p)
			t := &pollTally{seq: rec.Seq, question: p.Question, votes: map[string]int{}}
			opts := make([]string, len(p.Options))
			for i, o := range p.Options {
				t.options = append(t.options, o.ID)
				opts[i] = fmt.Sprintf("%s = %q", clean(o.ID), clean(o.Label))
			}
			polls[ev.Hash] = t
			pollOrder = append(pollOrder, ev.Hash)
			line = fmt.Sprintf("asks %q: %s", clean(p.Question), strings.Join(opts, ", "))
		case "poll.vote":
			var p struct {
				PollEventID string   `json:"poll_event_id"`
				OptionIDs   []string `json:"option_ids"`
			}
			unmarshal(ev.Payload, &p)
			if h, err := envelope.ParseHash(p.PollEventID); err == nil && polls[h] != nil {
				for _, o := range p.OptionIDs {
					polls[h].votes[o]++
				}
			}
			line = fmt.Sprintf("votes %s in poll %s", clean(strings.Join(p.OptionIDs, ", ")), ref(p.PollEventID))
		case adp.TypeRoomClose:
			var p adp.Notice
			unmarshal(ev.Payload, &p)
			line = fmt.Sprintf("closed the room: %q", clean(p.Reason))
		default:
			line = ev.Type + " " + clean(compact(ev.Payload))
		}
		if len(ev.Mentions) > 0 {
			ms := make([]string, len(ev.Mentions))
			for i, m := range ev.Mentions {
				ms[i] = "@" + name(m)
			}
			line += "  [" + strings.Join(ms, " ") + "]"
		}
		fmt.Fprintf(w, "#%-3d %s %-6s %-17s %s\n", rec.Seq, at, name(ev.Actor), ev.Type, line)
		if n, ok := notes[rec.Seq]; ok {
			fmt.Fprintf(w, "     %12s ↳ %s\n", "", n)
		}
	}
	for _, h := range pollOrder {
		t := polls[h]
		parts := make([]string, len(t.options))
		for i, o := range t.options {
			parts[i] = fmt.Sprintf("%s %d", clean(o), t.votes[o])
		}
		fmt.Fprintf(w, "poll #%d %q: %s\n", t.seq, clean(t.question), strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
}

type pollTally struct {
	seq      int64
	question string
	options  []string
	votes    map[string]int
}

// writeReport prints the offline verification of the written archive and
// the follower's check.
func writeReport(w *bufio.Writer, res *result, byID map[identity.AgentID]*agent) {
	r := res.report
	fmt.Fprintln(w, "== Verification report (archive.Verify on the files written)")
	if r.Valid {
		fmt.Fprintln(w, "archive:  valid")
	} else {
		fmt.Fprintln(w, "archive:  INVALID")
	}
	fmt.Fprintf(w, "room:     %s (%s)\n", r.RoomID, r.Status)
	fmt.Fprintf(w, "records:  %d verified, seq 1–%d\n", r.Records, r.LastSeq)
	fmt.Fprintf(w, "last:     %s\n", r.LastHash)
	fmt.Fprintf(w, "events_sha3_256: %s\n", r.EventsSHA3256)
	fmt.Fprintf(w, "members:  %d\n", len(r.Members))
	for _, m := range r.Members {
		n := "?"
		if a := byID[m.ID]; a != nil {
			n = a.name
		}
		fmt.Fprintf(w, "  %-6s %-9s %-6s %s\n", clean(n), m.Role, m.Status, m.ID)
	}
	fmt.Fprintf(w, "types:    %d room-defined in force; records by type:\n", r.Definitions)
	names := r.TypeNames()
	sort.Strings(names)
	for _, t := range names {
		fmt.Fprintf(w, "  %-24s %d\n", t, r.Types[t])
	}
	fmt.Fprintf(w, "sse:      the follower delivered each of the %d records exactly once, in order (+%d transient notices)\n", len(res.delivered), res.notices)
	if h := res.held; h != nil {
		fmt.Fprintf(w, "conflict: a write on head %d was refused (room_head_mismatch, current head %d); the connector held it as %s, revised, accepted at seq %d\n",
			h.base, h.current, h.draftID, h.revised)
	}
	fmt.Fprintf(w, "written:  %s\n", res.outDir)
	fmt.Fprintf(w, "again:    go run ./cmd/adpverify archive %s %s\n",
		shellQuote(res.outDir+"/manifest.json"), shellQuote(res.outDir+"/records.jsonl"))
}

// unmarshal reads a verified payload into a view; the payload already
// passed its schema, so a failure only leaves fields empty.
func unmarshal(v jsontext.Value, out any) {
	_ = strictjson.UnmarshalOpen(v, out)
}

// clean makes untrusted text safe for one terminal line: control,
// format (bidirectional overrides among them) and line-breaking characters
// become U+FFFD or a space, and long text is cut.
func clean(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxShown {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n' || r == '\t':
			r = ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			r = '\uFFFD'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// shellQuote quotes a path for a copy-and-paste command line.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
