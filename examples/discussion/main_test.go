package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestDemo runs the whole demo with small numbers: the archive it writes
// verifies, the SSE follower delivered every archived record exactly once,
// the head-mismatch moment happened, and the output says so.
func TestDemo(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	res, err := demo(ctxT(t), &config{agents: 3, messages: 2, out: out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr.String())
	}
	if res.report == nil || !res.report.Valid || res.report.Failure != nil {
		t.Fatalf("report: %+v", res.report)
	}
	n := res.report.Records
	// 1 create, 2×(review, join), opening, 2×(message, reaction), finding,
	// reaction, the winning write, the revised one, poll, 2 votes, close.
	if want := int64(1 + 4 + 1 + 4 + 2 + 2 + 1 + 2 + 1); n != want || res.report.LastSeq != want {
		t.Fatalf("records: %d (last seq %d), want %d", n, res.report.LastSeq, want)
	}
	if int64(len(res.archived)) != n || int64(len(res.delivered)) != n {
		t.Fatalf("archived %d, delivered %d, report %d", len(res.archived), len(res.delivered), n)
	}
	for i, d := range res.delivered {
		if d.Seq != int64(i+1) || d.Hash != res.archived[i] {
			t.Fatalf("the follower's record %d is seq %d %s; the archive's is %s", i+1, d.Seq, d.Hash, res.archived[i])
		}
	}
	h := res.held
	if h == nil || h.base >= h.current || h.revised != h.current+1 || h.changes < 1 || h.draftID == "" {
		t.Fatalf("head-mismatch moment: %+v", h)
	}
	// The files on disk verify on their own, as cmd/adpverify does it.
	rep, err := archive.VerifyFiles(ctxT(t), filepath.Join(out, archive.ManifestFile), filepath.Join(out, archive.RecordsFile), nil)
	if err != nil || !rep.Valid || rep.Records != n {
		t.Fatalf("VerifyFiles: %v %+v", err, rep)
	}
	for _, typ := range []string{"message.create", "reaction.create", "poll.create", "poll.vote", "review.finding", "room.join.review", "room.close"} {
		if rep.Types[typ] == 0 {
			t.Errorf("the archive holds no %s", typ)
		}
	}
	if s := stdout.String(); !strings.Contains(s, "archive:  valid") || !strings.Contains(s, "== Transcript") ||
		!strings.Contains(s, "room_head_mismatch") || !strings.Contains(s, out) {
		t.Errorf("stdout:\n%s", s)
	}
	// The narrative shows the refused draft, says why the head jumped past
	// a signal, and labels the report's per-type table.
	if s := stdout.String(); !strings.Contains(s, `"Retries: let's make it five.", also signed on head`) ||
		!strings.Contains(s, "is a signal: it needs no head and moves none") || !strings.Contains(s, "room-defined in force; records by type:") {
		t.Errorf("stdout:\n%s", s)
	}
	if s := stderr.String(); !strings.Contains(s, `refused Sol's "Retries: let's make it five."`) ||
		!strings.Contains(s, "is a signal: it needs no head and moves none") {
		t.Errorf("stderr:\n%s", s)
	}
	if got := strings.Count(stderr.String(), "/12 "); got != steps {
		t.Errorf("%d progress steps, want %d:\n%s", got, steps, stderr.String())
	}
}

// TestDemoQuietMoreAgents: more agents, --quiet prints only the report.
func TestDemoQuietMoreAgents(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(ctxT(t), []string{"--agents", "4", "--messages", "5", "--quiet", "--out", t.TempDir()}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	if stderr.Len() != 0 || strings.Contains(stdout.String(), "Transcript") || !strings.Contains(stdout.String(), "archive:  valid") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "members:  4") {
		t.Fatalf("want 4 members:\n%s", stdout.String())
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--agents", "2"}, exitUsage},
		{[]string{"--agents", "13"}, exitUsage},
		{[]string{"--messages", "0"}, exitUsage},
		{[]string{"extra"}, exitUsage},
		{[]string{"--nope"}, exitUsage},
		{[]string{"-h"}, exitOK},
	} {
		var stderr bytes.Buffer
		if got := run(ctxT(t), c.args, new(bytes.Buffer), &stderr); got != c.want {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, got, c.want, stderr.String())
		}
	}
}

// TestCheckFollowed: the follower check is not vacuous.
func TestCheckFollowed(t *testing.T) {
	three := []envelope.Hash{{1}, {2}, {3}}
	ref := func(seq int64, h byte) adp.RecordRef { return adp.RecordRef{Seq: seq, Hash: envelope.Hash{h}} }
	for name, c := range map[string]struct {
		delivered []adp.RecordRef
		ok        bool
	}{
		"all once":     {[]adp.RecordRef{ref(1, 1), ref(2, 2), ref(3, 3)}, true},
		"twice":        {[]adp.RecordRef{ref(1, 1), ref(2, 2), ref(2, 2), ref(3, 3)}, false},
		"missing":      {[]adp.RecordRef{ref(1, 1), ref(3, 3)}, false},
		"extra":        {[]adp.RecordRef{ref(1, 1), ref(2, 2), ref(3, 3), ref(4, 4)}, false},
		"seq zero":     {[]adp.RecordRef{ref(0, 9), ref(1, 1), ref(2, 2)}, false},
		"out of order": {[]adp.RecordRef{ref(2, 2), ref(1, 1), ref(3, 3)}, false},
		"none":         {nil, false},
		"other hash":   {[]adp.RecordRef{ref(1, 1), ref(2, 7), ref(3, 3)}, false},
	} {
		err := checkFollowed(&result{archived: three, delivered: c.delivered})
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", name, err)
		}
	}
}
