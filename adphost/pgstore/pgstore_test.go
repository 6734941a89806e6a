package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestConformance: the PostgreSQL store passes the Store suite, on a real
// server.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) adphost.Store { return open(t, pgtest.Database(t)) })
}

// TestMigrations: opening twice applies the schema once; a database at a
// newer version than the code knows is refused with ErrSchemaTooNew.
func TestMigrations(t *testing.T) {
	url := pgtest.Database(t)
	open(t, url)
	open(t, url) // idempotent
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, v int
	if err := conn.QueryRow(t.Context(), "SELECT count(*), max(version) FROM adp_schema").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != pgstore.SchemaVersion() || v != pgstore.SchemaVersion() {
		t.Fatalf("%d migrations recorded up to %d, want %d", n, v, pgstore.SchemaVersion())
	}
	if _, err := conn.Exec(t.Context(), "INSERT INTO adp_schema (version) VALUES ($1)", pgstore.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Open(t.Context(), url, nil); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Fatalf("a newer schema: %v", err)
	}
}

// TestListen: an append on one Store is announced to the Listen of
// another Store on the same database, as "room seq".
func TestListen(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url), open(t, url)
	got := make(chan string, 4)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go b.Listen(ctx, func(room string, seq int64) { got <- fmt.Sprintf("%s %d", room, seq) }, nil)
	recs := storetest.Chain(t, "listen", 50)
	for i, rec := range recs {
		// The listener may not be connected yet: append until heard.
		if err := a.Append(t.Context(), storetest.Commit(rec)); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			room, seq, _ := strings.Cut(s, " ")
			if n, _ := strconv.Atoi(seq); room != "listen" || n < 1 || n > i+1 {
				t.Fatalf("notification %q after %d appends", s, i+1)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("no notification in 50 appends")
}

// The store implements the optional join-request index, so the Host never
// lists a room's whole history of applicants for one applicant's read.
var _ adphost.JoinRequestIndex = (*pgstore.Store)(nil)

// TestWriteState: the one-read write state answers what RecordByEvent,
// MaxNonce and Head answer, for known and unknown envelopes, actors and
// rooms.
func TestWriteState(t *testing.T) {
	s := open(t, pgtest.Database(t))
	ctx := t.Context()
	recs := storetest.Chain(t, "ws", 3)
	for _, rec := range recs {
		if err := s.Append(ctx, storetest.Commit(rec)); err != nil {
			t.Fatal(err)
		}
	}
	last := recs[len(recs)-1]
	ev, err := adp.ParseEvent(last.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.WriteState(ctx, "ws", ev.Actor, last.Envelope.Hash())
	if err != nil {
		t.Fatal(err)
	}
	n, exp, _ := s.MaxNonce(ctx, ev.Actor)
	if st.Record == nil || st.Record.Seq != last.Seq || st.Record.Hash != last.Hash || st.Head != 3 || st.Nonce != n || st.NonceExpiresAt != exp || n == 0 {
		t.Fatalf("write state %+v; want record 3, head 3, nonce %d until %d", st, n, exp)
	}
	other := storetest.Author("nobody").Signer.AgentID()
	st, err = s.WriteState(ctx, "no such room", other, envelope.Hash{1})
	if err != nil {
		t.Fatal(err)
	}
	if st != (adphost.WriteState{}) {
		t.Fatalf("write state of nothing: %+v", st)
	}
}

// TestPendingIndexMigration: the schema step that indexes pending join
// requests finds the pending ones among the rows written before it,
// whatever text they hold (U+0000 included, which jsonb refuses).
func TestPendingIndexMigration(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url)
	ctx := t.Context()
	who := storetest.Author("applicant").AgentID()
	for i, c := range []struct {
		status adp.JoinRequestStatus
		reason string
	}{
		{adp.JoinPending, "nul \x00 here"},
		{adp.JoinPending, `an escaped backslash before u0000: \u0000`},
		{adp.JoinApproved, "\x00"},
		{adp.JoinPending, "plain"},
	} {
		jr := &adp.JoinRequestResource{Request: adp.JoinRequest{ID: fmt.Sprintf("jr_%d", i), RoomID: "room", Applicant: who,
			Role: adp.RoleSpeaker, Reason: &c.reason, CreatedAt: int64(i), ExpiresAt: 1000 + int64(i)}, Status: c.status}
		if err := s.PutJoinRequest(ctx, jr); err != nil {
			t.Fatal(err)
		}
	}
	// Back to the schema before the step, rows and all (a later step
	// must be undone here too).
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `DROP TABLE adp_invites;
		ALTER TABLE adp_join_requests DROP COLUMN pending_until;
		DROP INDEX adp_join_requests_by_key;
		CREATE INDEX adp_join_requests_by_time ON adp_join_requests (room_id, created_at);
		DELETE FROM adp_schema WHERE version >= 4`); err != nil {
		t.Fatal(err)
	}
	s = open(t, url)
	list, err := s.PendingJoinRequests(ctx, "room", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, jr := range list {
		ids = append(ids, jr.Request.ID)
	}
	if n, err := s.CountPendingJoinRequests(ctx, "room", 1000); err != nil || n != 2 || strings.Join(ids, " ") != "jr_1 jr_3" {
		t.Fatalf("pending after the migration: %v (%d counted, %v)", ids, n, err)
	}
	if n, _ := s.CountPendingJoinRequests(ctx, "room", 0); n != 3 {
		t.Fatalf("%d pending at 0, want 3", n)
	}
}

// TestReadCost: one history page over records of 256 KiB costs the host
// memory in proportion to its byte budget, not to its limit, and an
// archive in proportion to the budget, not to the room.
func TestReadCost(t *testing.T) {
	adphosttest.CheckReadCost(t, open(t, pgtest.Database(t)), 300)
}

// TestMigrationsHostileText: a database of the schema before join
// requests were indexed (version 2), holding the join requests a host
// accepts from anyone — text with U+0000, which jsonb refuses, escaped
// backslashes, an extra object nested as deep as a request body allows —
// is migrated to the current schema, and every request keeps its
// created_at and its pending state.
func TestMigrationsHostileText(t *testing.T) {
	url := pgtest.Database(t)
	ctx := t.Context()
	s := open(t, url)
	_, srv := adphosttest.NewServer(t, &adphost.Options{Store: s, RateLimits: adphost.Unlimited(), Heartbeat: -1})
	client := func(name string) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: storetest.Author(name).Signer, HTTPClient: srv.Client(), AllowLoopbackHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creator := client("creator")
	now := time.Now()
	cr, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "hostile text", Visibility: adp.VisibilityPrivate,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	room := cr.RoomID
	str := func(s string) *string { return &s }
	deep := `{"a":` + strings.Repeat("[", 8000) + strings.Repeat("]", 8000) + `}`
	inputs := []adp.JoinRequestInput{
		{Role: adp.RoleSpeaker, Reason: str("hi\x00there")},
		{Role: adp.RoleObserver, Perspective: str("\x00"), Reason: str(`\u0000 and \\u0000, as text`)},
		{Role: adp.RoleSpeaker, Extra: []byte(`{"nul":"\u0000","escaped":"\\u0000","key\u0000":1}`)},
		{Role: adp.RoleSpeaker, Extra: []byte(deep)},
		{Role: adp.RoleModerator, Reason: str("rejected below, with U+0000 in the review's reason")},
	}
	var ids []string
	for i, in := range inputs {
		jr, err := client(fmt.Sprint("applicant ", i)).RequestJoin(ctx, room, in)
		if err != nil {
			t.Fatalf("join request %d: %v", i, err)
		}
		ids = append(ids, jr.Request.ID)
	}
	last, err := creator.JoinRequest(ctx, room, ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creator.ReviewJoin(ctx, room, adp.JoinReview{Request: last.Request, Decision: adp.DecisionReject, Reason: "no\x00"}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	columns := func() string {
		var b strings.Builder
		rows, err := conn.Query(ctx, `SELECT id, created_at, pending_until FROM adp_join_requests WHERE room_id = $1 ORDER BY id`, room)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var created int64
			var pending *int64
			if err := rows.Scan(&id, &created, &pending); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d %v\n", id, created, pending != nil)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := columns()
	if n := strings.Count(want, "true"); n != 4 {
		t.Fatalf("%d pending requests before the migration, want 4:\n%s", n, want)
	}
	// Back to version 2: undo the later steps (a new step must be undone
	// here too), keeping the rows.
	if v := pgstore.SchemaVersion(); v != 5 {
		t.Fatalf("schema version %d: undo its steps here", v)
	}
	if _, err := conn.Exec(ctx, `DROP TABLE adp_invites;
		ALTER TABLE adp_join_requests DROP COLUMN pending_until, DROP COLUMN created_at;
		DROP INDEX adp_join_requests_by_applicant;
		DELETE FROM adp_schema WHERE version > 2`); err != nil {
		t.Fatal(err)
	}
	s2, err := pgstore.Open(ctx, url, nil)
	if err != nil {
		t.Fatalf("migrating from version 2: %v", err)
	}
	s2.Close()
	if got := columns(); got != want {
		t.Fatalf("after the migration:\n%swant\n%s", got, want)
	}
}

// TestLaterDraft: a host of the 2026-09-24 draft on PostgreSQL passes the
// wire-level check.
func TestLaterDraft(t *testing.T) {
	adphosttest.CheckLaterDraft(t, open(t, pgtest.Database(t)))
}
