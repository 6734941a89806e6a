// Package pgstore is an [adphost.Store] on PostgreSQL (through pgx's
// pgxpool), so that several host processes on one database serve as one
// host: same chains, same nonces, same quotas, same live streams.
//
// # Schema
//
// [Open] applies the embedded, versioned migrations (migrations/*.sql) in
// order, under an advisory lock so that processes starting together apply
// each once; a database whose schema is newer than this code knows is
// refused with [ErrSchemaTooNew] rather than written to.
//
// # Appends
//
// [Store.Append] is one transaction sent as one pipeline: the room row's
// head is advanced only if it still is the record's predecessor (else
// [adphost.ErrHeadMoved]); the record goes in under the primary key
// (room_id, seq) and a unique index on the envelope hash (else
// [adphost.ErrDuplicateEvent]); the actor's nonce is checked and advanced
// in one statement on its row (else nonce_not_greater); the quota window
// is trimmed, checked and extended in one statement (else rate_limited);
// and the room's index entry and members are replaced. The common append
// (no index entry) is one statement: data-modifying CTEs for the head, the
// record and the nonce, and assertions evaluated in that order.
// [Store.AppendBatch] is the group commit of [adphost.BatchAppender]:
// consecutive records of one room with one multi-row statement each for
// the records and the nonces. Commits are as durable as the server's
// synchronous_commit makes them. [Store.WriteState] is the one-read
// [adphost.WriteStateReader].
//
// Once the commit has returned, the record is announced as "room seq" on
// the channel [Channel], from a background sender that coalesces the
// announcements made meanwhile into one NOTIFY transaction, on its own
// connection with synchronous_commit off (it has nothing to make
// durable). NOTIFY is not in the append's transaction because PostgreSQL
// serializes the commits of notifying transactions on one lock, held
// through the commit's WAL flush: with it there, no two appends of a
// database could share a flush, and the appends of different rooms would
// queue behind each other. A process that dies between a commit and its
// announcement loses the notification, which the listeners' periodic
// check repairs.
//
// # Quotas
//
// Quota windows live in the database, shared by every process: a host of
// N processes behind one origin grants an agent the quota of §21 once, not
// N times (a per-process reading would let a client multiply its quota by
// spreading requests, which is what the quota exists to prevent).
//
// # Live streams
//
// [Store.Listen] keeps a dedicated connection on LISTEN [Channel] and
// reports every "room R has seq N" notification; the records themselves
// are read from the store by the host. Notifications carry no record, so
// a lost one is repaired by the next, or by the host's periodic check.
//
// A Store is safe for concurrent use.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Channel is the LISTEN/NOTIFY channel of appended records; a payload is
// "<room_id> <seq>".
const Channel = "adp_records"

// ErrSchemaTooNew is returned by Open when the database's schema version
// is newer than the migrations this package embeds: a newer host wrote
// it, and this one must not.
var ErrSchemaTooNew = errors.New("pgstore: the database schema is newer than this code knows")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step.
type migration struct {
	version int
	sql     string
}

// migrations returns the embedded steps in version order; their names are
// NNNN_name.sql, numbered from 1 without gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []migration
	for i, name := range names {
		base := path.Base(name)
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("pgstore: migration %s is out of sequence", base)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, string(b)})
	}
	return out, nil
}

// SchemaVersion is the schema version this package migrates to.
func SchemaVersion() int {
	m, _ := migrations()
	return len(m)
}

// Options configures Open. A nil *Options means defaults.
type Options struct {
	// MaxConns bounds the pool; 0 means the URL's pool_max_conns, or
	// DefaultMaxConns.
	MaxConns int32
}

// DefaultMaxConns is the pool size when neither Options nor the URL set
// one.
const DefaultMaxConns = 16

// Store is the PostgreSQL adphost.Store.
type Store struct {
	pool *pgxpool.Pool
	cfg  *pgx.ConnConfig

	// The announcements not yet sent (room → greatest seq); wake has
	// room for one signal to the sender.
	noteMu  sync.Mutex
	pending map[string]int64
	wake    chan struct{}
	stop    context.CancelFunc
	sender  sync.WaitGroup
}

var (
	_ adphost.Store            = (*Store)(nil)
	_ adphost.WriteStateReader = (*Store)(nil)
	_ adphost.BatchAppender    = (*Store)(nil)
)

// Open connects to the database at url (a PostgreSQL connection URL or
// DSN), applies the schema migrations it lacks and returns the Store.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	switch {
	case opts != nil && opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		// pgxpool's default (4 on this machine) queues a host's requests:
		// each takes a connection for its reads and its append.
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s := &Store{pool: pool, cfg: cfg.ConnConfig, pending: map[string]int64{}, wake: make(chan struct{}, 1)}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	s.sender.Add(1)
	go s.send(sctx)
	return s, nil
}

// Close sends the announcements still pending, then closes the pool.
func (s *Store) Close() {
	s.stop()
	s.sender.Wait()
	s.pool.Close()
}

// announce queues "room seq" for the sender: appended and committed.
func (s *Store) announce(roomID string, seq int64) {
	s.noteMu.Lock()
	if s.pending[roomID] < seq {
		s.pending[roomID] = seq
	}
	s.noteMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // a signal is already waiting
	}
}

// send is the announcement sender: each round NOTIFYs everything queued
// since the last, in one transaction, so that announcements made while
// one is in flight share the next. On ctx's end it sends what is left,
// once.
func (s *Store) send(ctx context.Context) {
	defer s.sender.Done()
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		done := false
		select {
		case <-s.wake:
		case <-ctx.Done():
			done = true
		}
		s.noteMu.Lock()
		notes := make([]string, 0, len(s.pending))
		for room, seq := range s.pending {
			notes = append(notes, room+" "+strconv.FormatInt(seq, 10))
		}
		clear(s.pending)
		s.noteMu.Unlock()
		if len(notes) > 0 {
			// Bounded, also at Close: a lost announcement is repaired by
			// the listeners' periodic check.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if conn == nil || conn.IsClosed() {
				cfg := s.cfg.Copy()
				cfg.RuntimeParams["synchronous_commit"] = "off"
				conn, _ = pgx.ConnectConfig(sctx, cfg)
			}
			if conn != nil {
				if _, err := conn.Exec(sctx, `SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n`, Channel, notes); err != nil {
					conn.Close(context.Background())
					conn = nil
				}
			}
			cancel()
		}
		if done {
			return
		}
	}
}

// migrateLock is the advisory lock key held while migrating.
const migrateLock = 0x61647068 // "adph"

// migrate applies the missing migrations, each in its own transaction.
func (s *Store) migrate(ctx context.Context) error {
	steps, err := migrations()
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS adp_schema (
		version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM adp_schema").Scan(&have); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	if have > len(steps) {
		return fmt.Errorf("%w: the database is at version %d, this code knows %d", ErrSchemaTooNew, have, len(steps))
	}
	for _, m := range steps[have:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO adp_schema (version) VALUES ($1)", m.version)
			return err
		})
		if err != nil {
			return fmt.Errorf("pgstore: migration %d: %w", m.version, err)
		}
	}
	return nil
}

// indexRow is the stored form of a room's index entry (summary column).
type indexRow struct {
	Summary adp.RoomSummary `json:"summary"`
	Agenda  string          `json:"agenda,omitzero"`
}

func encodeIndex(ix *adphost.RoomIndex) ([]byte, error) {
	return json.Marshal(indexRow{ix.Summary, ix.Agenda}, json.Deterministic(true))
}

// decodeIndex reads a summary column, with the seq and activity of the
// room's last record from their own columns (a message does not rewrite
// the summary).
func decodeIndex(b []byte, seq, activity int64) (adphost.RoomIndex, error) {
	var r indexRow
	if err := strictjson.Unmarshal(b, &r); err != nil {
		return adphost.RoomIndex{}, fmt.Errorf("pgstore: stored room summary: %w", err)
	}
	r.Summary.Seq, r.Summary.LastActivity = seq, activity
	return adphost.RoomIndex{Summary: r.Summary, Agenda: r.Agenda}, nil
}

// Append implements adphost.Store.
func (s *Store) Append(ctx context.Context, c *adphost.Commit) error {
	rec := c.Record
	if rec.Seq == 1 && c.Index == nil {
		return errors.New("pgstore: a room's first record needs its index entry")
	}
	var summary []byte
	if c.Index != nil {
		var err error
		if summary, err = encodeIndex(c.Index); err != nil {
			return err
		}
	}
	evHash := rec.Envelope.Hash()
	// One pipeline, one Sync: PostgreSQL runs it as one implicit
	// transaction, and the first failed adp_assert rolls it all back. The
	// append costs one round trip and one commit.
	b := &pgx.Batch{}
	if rec.Seq == 1 {
		b.Queue(`WITH w AS (INSERT INTO adp_rooms (room_id, last_seq, last_hash, last_activity, visibility, creator, summary)
			VALUES ($1, 1, $2, $6, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1)
			SELECT adp_assert(count(*) = 1, 'head') FROM w`,
			rec.RoomID, rec.Hash[:], string(c.Index.Summary.Visibility), c.Index.Summary.Creator.String(), summary, rec.ReceivedAt)
	} else if c.Index != nil {
		b.Queue(`WITH w AS (UPDATE adp_rooms SET last_seq = $2, last_hash = $3, last_activity = $8, visibility = $5, creator = $6, summary = $7
			WHERE room_id = $1 AND last_seq = $2 - 1 AND last_hash = $4 RETURNING 1)
			SELECT adp_assert(count(*) = 1, 'head') FROM w`,
			rec.RoomID, rec.Seq, rec.Hash[:], rec.PreHash[:],
			string(c.Index.Summary.Visibility), c.Index.Summary.Creator.String(), summary, rec.ReceivedAt)
	}
	n := c.Nonce
	if c.Index == nil {
		// The common write (no index entry): head, record and nonce in
		// one statement, the record inserted only once the head moved.
		// The assertions run in order, so a moved head is reported as
		// such whatever else fails.
		b.Queue(`WITH h AS (UPDATE adp_rooms SET last_seq = $2, last_hash = $3, last_activity = $5
				WHERE room_id = $1 AND last_seq = $2 - 1 AND last_hash = $4 RETURNING 1),
			r AS (INSERT INTO adp_records (room_id, seq, event_hash, body) SELECT $1, $2, $6, $7 FROM h ON CONFLICT DO NOTHING RETURNING 1),
			n AS (INSERT INTO adp_nonces AS n (actor, nonce, expires_at) VALUES ($8, $9, $11)
				ON CONFLICT (actor) DO UPDATE SET nonce = excluded.nonce, expires_at = excluded.expires_at
				WHERE n.expires_at <= $10 OR excluded.nonce > n.nonce RETURNING 1)
			SELECT adp_assert((SELECT count(*) FROM h) = 1, 'head'), adp_assert((SELECT count(*) FROM r) = 1, 'event'),
				adp_assert((SELECT count(*) FROM n) = 1, 'nonce')`,
			rec.RoomID, rec.Seq, rec.Hash[:], rec.PreHash[:], rec.ReceivedAt, evHash[:], rec.AppendJSON(nil),
			n.Actor.String(), n.Nonce, n.Now, n.ExpiresAt)
	} else {
		// The room row is locked now: (room_id, seq) cannot collide, so a
		// conflict here is the envelope hash.
		b.Queue(`WITH w AS (INSERT INTO adp_records (room_id, seq, event_hash, body) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1)
			SELECT adp_assert(count(*) = 1, 'event') FROM w`,
			rec.RoomID, rec.Seq, evHash[:], rec.AppendJSON(nil))
		queueNonce(b, n)
	}
	if q := c.Quota; q != nil {
		queueQuota(b, *q, true)
	}
	if c.Index != nil && c.Index.Members != nil {
		agents, roles, statuses := memberColumns(c.Index.Members)
		b.Queue(`DELETE FROM adp_members WHERE room_id = $1`, rec.RoomID)
		b.Queue(`INSERT INTO adp_members (room_id, agent, role, status)
			SELECT $1, a, r, s FROM unnest($2::text[], $3::text[], $4::text[]) AS m(a, r, s)`,
			rec.RoomID, agents, roles, statuses)
		var invited, invitedAs []string
		for _, in := range c.Index.Invites {
			invited, invitedAs = append(invited, in.Agent.String()), append(invitedAs, string(in.Role))
		}
		b.Queue(`DELETE FROM adp_invites WHERE room_id = $1`, rec.RoomID)
		if len(invited) > 0 {
			b.Queue(`INSERT INTO adp_invites (room_id, agent, role) SELECT $1, a, r FROM unnest($2::text[], $3::text[]) AS i(a, r)`,
				rec.RoomID, invited, invitedAs)
		}
	}
	err := s.pool.SendBatch(ctx, b).Close()
	if err == nil {
		s.announce(rec.RoomID, rec.Seq)
		return nil
	}
	return appendError(err, func() error {
		// The refusal carries the actor's nonce: one more read, on the
		// refusal path only.
		max, _, rerr := s.MaxNonce(ctx, c.Nonce.Actor)
		if rerr != nil {
			return rerr
		}
		return adphost.NonceError(max)
	}, func() error { return adphost.QuotaError(*c.Quota) })
}

// appendError maps the failure of an append's transaction to the Store's
// errors: the head or an event assertion, a unique violation, or the
// nonce or quota assertion, whose errors nonce and quota build.
func appendError(err error, nonce, quota func() error) error {
	switch what := assertion(err); {
	case what == "head":
		return adphost.ErrHeadMoved
	case what == "event" || isUnique(err):
		return adphost.ErrDuplicateEvent
	case what == "nonce":
		return nonce()
	case what == "quota":
		return quota()
	}
	return fmt.Errorf("pgstore: %w", err)
}

// AppendBatch implements adphost.BatchAppender: the records of cs, which
// follow each other in one room, in one transaction sent as one pipeline
// (group commit): the room's head moves from the first record's
// predecessor to the last record, the records go in with one multi-row
// statement, the actors' nonces with another (each actor checked against
// its first nonce of the batch and advanced to its last), and the quota
// windows one statement each. Any failed check rolls it all back.
func (s *Store) AppendBatch(ctx context.Context, cs []*adphost.Commit) error {
	if len(cs) == 0 {
		return nil
	}
	if len(cs) == 1 {
		return s.Append(ctx, cs[0])
	}
	n := len(cs)
	seqs, events, bodies := make([]int64, n), make([][]byte, n), make([][]byte, n)
	type nonceRow struct {
		first, last, now, exp int64
	}
	byActor := map[string]*nonceRow{}
	for i, c := range cs {
		rec := c.Record
		if c.Index != nil || rec.Seq == 1 || rec.RoomID != cs[0].Record.RoomID ||
			(i > 0 && (rec.Seq != cs[i-1].Record.Seq+1 || rec.PreHash != cs[i-1].Record.Hash)) {
			return errors.New("pgstore: a batch is consecutive records of one room, without index entries")
		}
		ev := rec.Envelope.Hash()
		seqs[i], events[i], bodies[i] = rec.Seq, ev[:], rec.AppendJSON(nil)
		a := c.Nonce
		if r := byActor[a.Actor.String()]; r == nil {
			byActor[a.Actor.String()] = &nonceRow{a.Nonce, a.Nonce, a.Now, a.ExpiresAt}
		} else if a.Nonce <= r.last {
			return adphost.NonceError(r.last)
		} else {
			r.last, r.exp = a.Nonce, a.ExpiresAt
		}
	}
	// Nonce rows are locked in actor order, so that batches of two
	// processes sharing actors cannot deadlock.
	actors := slices.Sorted(maps.Keys(byActor))
	firsts, lasts, nows, exps := make([]int64, len(actors)), make([]int64, len(actors)), make([]int64, len(actors)), make([]int64, len(actors))
	for i, a := range actors {
		r := byActor[a]
		firsts[i], lasts[i], nows[i], exps[i] = r.first, r.last, r.now, r.exp
	}
	first, last := cs[0].Record, cs[n-1].Record
	b := &pgx.Batch{}
	b.Queue(`WITH w AS (UPDATE adp_rooms SET last_seq = $2, last_hash = $3, last_activity = $5
			WHERE room_id = $1 AND last_seq = $6 - 1 AND last_hash = $4 RETURNING 1)
		SELECT adp_assert(count(*) = 1, 'head') FROM w`,
		first.RoomID, last.Seq, last.Hash[:], first.PreHash[:], last.ReceivedAt, first.Seq)
	b.Queue(`WITH w AS (INSERT INTO adp_records (room_id, seq, event_hash, body)
			SELECT $1, * FROM unnest($2::bigint[], $3::bytea[], $4::bytea[]) ON CONFLICT DO NOTHING RETURNING 1)
		SELECT adp_assert(count(*) = $5, 'event') FROM w`, first.RoomID, seqs, events, bodies, n)
	b.Queue(`WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS v(actor, first, last, now, exp)),
		w AS (INSERT INTO adp_nonces AS n (actor, nonce, expires_at) SELECT actor, last, exp FROM v
			ON CONFLICT (actor) DO UPDATE SET nonce = excluded.nonce, expires_at = excluded.expires_at
			WHERE EXISTS (SELECT 1 FROM v WHERE v.actor = n.actor AND (n.expires_at <= v.now OR v.first > n.nonce)) RETURNING 1)
		SELECT adp_assert(count(*) = $6, 'nonce') FROM w`, actors, firsts, lasts, nows, exps, len(actors))
	for _, c := range cs {
		if c.Quota != nil {
			queueQuota(b, *c.Quota, true)
		}
	}
	err := s.pool.SendBatch(ctx, b).Close()
	if err == nil {
		s.announce(last.RoomID, last.Seq)
		return nil
	}
	return appendError(err, func() error {
		return &identity.Error{Code: identity.CodeNonceNotGreater, Message: "a nonce of the batch is not greater than its actor's greatest accepted nonce"}
	}, func() error { return identity.NewError(identity.CodeRateLimited, "a quota of the batch is used up") })
}

// assertion names the adp_assert that failed err, or "".
func assertion(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "P0001" {
		if what, ok := strings.CutPrefix(pe.Message, "adp_assert:"); ok {
			return what
		}
	}
	return ""
}

// queueNonce queues the check-and-advance statement of an actor's nonce
// entry, which fails the pipeline (adp_assert 'nonce') when n does not
// advance a live entry.
func queueNonce(b *pgx.Batch, n adphost.NonceAdvance) {
	b.Queue(`WITH w AS (INSERT INTO adp_nonces AS n (actor, nonce, expires_at) VALUES ($1, $2, $4)
		ON CONFLICT (actor) DO UPDATE SET nonce = excluded.nonce, expires_at = excluded.expires_at
		WHERE n.expires_at <= $3 OR excluded.nonce > n.nonce RETURNING 1)
		SELECT adp_assert(count(*) = 1, 'nonce') FROM w`,
		n.Actor.String(), n.Nonce, n.Now, n.ExpiresAt)
}

// queueQuota queues the check-and-extend statement of a quota window: it
// changes no row when the window is full (and fails the pipeline then,
// with assert).
func queueQuota(b *pgx.Batch, q adphost.Quota, assert bool) {
	sql := `INSERT INTO adp_quotas AS q (key, uses) VALUES ($1, ARRAY[$2::bigint])
		ON CONFLICT (key) DO UPDATE
		SET uses = array(SELECT u FROM unnest(q.uses) AS u WHERE u > $2::bigint - $3::bigint ORDER BY u) || $2::bigint
		WHERE (SELECT count(*) FROM unnest(q.uses) AS u WHERE u > $2::bigint - $3::bigint) < $4`
	if assert {
		sql = `WITH w AS (` + sql + ` RETURNING 1) SELECT adp_assert(count(*) = 1, 'quota') FROM w`
	}
	b.Queue(sql, q.Key, q.Now, q.Window, q.Limit)
}

func memberColumns(ms []adphost.MemberIndex) (agents, roles, statuses []string) {
	for _, m := range ms {
		agents = append(agents, m.Agent.String())
		roles = append(roles, string(m.Role))
		statuses = append(statuses, string(m.Status))
	}
	return
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Records implements adphost.Store. Records are parsed strictly on the way
// out: the database is not trusted more than a network answer. The byte
// budget is applied by the server, on the sizes of the stored bodies
// (octet_length reads a TOASTed body's size from its pointer), so that
// the bodies beyond it are neither sent nor read.
func (s *Store) Records(ctx context.Context, roomID string, afterSeq int64, limit, maxBytes int) ([]*adp.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT body FROM (
			SELECT seq, body, sum(octet_length(body)) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) - octet_length(body) AS before
			FROM adp_records WHERE room_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
		) page WHERE before < $4 ORDER BY seq`,
		roomID, afterSeq, limit, max(maxBytes, 1))
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	var out []*adp.Record
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("pgstore: %w", err)
		}
		rec, err := adphost.ParseStoredRecord(body)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: stored record: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return out, nil
}

// Head implements adphost.Store.
func (s *Store) Head(ctx context.Context, roomID string) (int64, error) {
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT last_seq FROM adp_rooms WHERE room_id = $1`, roomID).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: %w", err)
	}
	return seq, nil
}

// RecordByEvent implements adphost.Store.
func (s *Store) RecordByEvent(ctx context.Context, h envelope.Hash) (*adp.Record, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM adp_records WHERE event_hash = $1`, h[:]).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	rec, err := adphost.ParseStoredRecord(body)
	if err != nil {
		return nil, fmt.Errorf("pgstore: stored record: %w", err)
	}
	return rec, nil
}

// WriteState implements adphost.WriteStateReader: the three reads a
// write needs, in one statement and one round trip.
func (s *Store) WriteState(ctx context.Context, roomID string, actor identity.AgentID, event envelope.Hash) (adphost.WriteState, error) {
	var body []byte
	var nonce, exp, head *int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT body FROM adp_records WHERE event_hash = $1), n.nonce, n.expires_at,
			(SELECT last_seq FROM adp_rooms WHERE room_id = $3)
		FROM (SELECT 1) AS one LEFT JOIN adp_nonces n ON n.actor = $2`,
		event[:], actor.String(), roomID).Scan(&body, &nonce, &exp, &head)
	if err != nil {
		return adphost.WriteState{}, fmt.Errorf("pgstore: %w", err)
	}
	var st adphost.WriteState
	if body != nil {
		if st.Record, err = adphost.ParseStoredRecord(body); err != nil {
			return adphost.WriteState{}, fmt.Errorf("pgstore: stored record: %w", err)
		}
	}
	if nonce != nil && exp != nil {
		st.Nonce, st.NonceExpiresAt = *nonce, *exp
	}
	if head != nil {
		st.Head = *head
	}
	return st, nil
}

// PutSnapshot implements adphost.Store.
func (s *Store) PutSnapshot(ctx context.Context, roomID string, seq int64, snap []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO adp_snapshots AS s (room_id, seq, body) VALUES ($1, $2, $3)
		ON CONFLICT (room_id) DO UPDATE SET seq = excluded.seq, body = excluded.body WHERE s.seq <= excluded.seq`,
		roomID, seq, snap)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// Snapshot implements adphost.Store.
func (s *Store) Snapshot(ctx context.Context, roomID string) (int64, []byte, error) {
	var seq int64
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT seq, body FROM adp_snapshots WHERE room_id = $1`, roomID).Scan(&seq, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("pgstore: %w", err)
	}
	return seq, body, nil
}

// PublicRooms implements adphost.Store.
func (s *Store) PublicRooms(ctx context.Context) ([]adphost.RoomIndex, error) {
	rows, err := s.pool.Query(ctx, `SELECT summary, last_seq, last_activity FROM adp_rooms WHERE visibility <> $1 ORDER BY room_id`,
		string(adp.VisibilityPrivate))
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, func(r pgx.CollectableRow) (adphost.RoomIndex, error) {
		var b []byte
		var seq, at int64
		if err := r.Scan(&b, &seq, &at); err != nil {
			return adphost.RoomIndex{}, err
		}
		return decodeIndex(b, seq, at)
	})
}

// AgentRooms implements adphost.Store.
func (s *Store) AgentRooms(ctx context.Context, agent identity.AgentID) ([]adphost.RoomIndex, error) {
	a := agent.String()
	rows, err := s.pool.Query(ctx, `SELECT r.summary, r.last_seq, r.last_activity, m.role, m.status, i.role FROM adp_rooms r
		LEFT JOIN adp_members m ON m.room_id = r.room_id AND m.agent = $1
		LEFT JOIN adp_invites i ON i.room_id = r.room_id AND i.agent = $1
		WHERE r.creator = $1 OR m.agent IS NOT NULL OR i.agent IS NOT NULL
		   OR EXISTS (SELECT 1 FROM adp_join_requests j WHERE j.room_id = r.room_id AND j.applicant = $1)
		ORDER BY r.room_id`, a)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, func(r pgx.CollectableRow) (adphost.RoomIndex, error) {
		var b []byte
		var seq, at int64
		var role, status, invited *string
		if err := r.Scan(&b, &seq, &at, &role, &status, &invited); err != nil {
			return adphost.RoomIndex{}, err
		}
		ix, err := decodeIndex(b, seq, at)
		if err == nil && role != nil && status != nil {
			ix.Members = []adphost.MemberIndex{{Agent: agent, Role: adp.Role(*role), Status: adp.MemberStatus(*status)}}
		}
		if err == nil && invited != nil {
			ix.Invites = []adphost.InviteIndex{{Agent: agent, Role: adp.Role(*invited)}}
		}
		return ix, err
	})
}

func collect[T any](rows pgx.Rows, f pgx.RowToFunc[T]) ([]T, error) {
	out, err := pgx.CollectRows(rows, f)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return out, nil
}

// PutJoinRequest implements adphost.Store.
func (s *Store) PutJoinRequest(ctx context.Context, jr *adp.JoinRequestResource) error {
	b, err := json.Marshal(jr, json.Deterministic(true))
	if err != nil {
		return err
	}
	var pendingUntil *int64 // the pending index holds only the pending
	if jr.Status == adp.JoinPending {
		pendingUntil = &jr.Request.ExpiresAt
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO adp_join_requests (room_id, id, applicant, created_at, pending_until, body) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (room_id, id) DO UPDATE SET body = excluded.body, pending_until = excluded.pending_until`,
		jr.Request.RoomID, jr.Request.ID, jr.Request.Applicant.String(), jr.Request.CreatedAt, pendingUntil, b)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// HoldJoinRequest implements adphost.Store: the applicant's nonce entry
// and the request in one pipelined transaction, which the nonce's
// assertion rolls back.
func (s *Store) HoldJoinRequest(ctx context.Context, jr *adp.JoinRequestResource, n adphost.NonceAdvance) error {
	body, err := json.Marshal(jr, json.Deterministic(true))
	if err != nil {
		return err
	}
	var pendingUntil *int64
	if jr.Status == adp.JoinPending {
		pendingUntil = &jr.Request.ExpiresAt
	}
	b := &pgx.Batch{}
	queueNonce(b, n)
	b.Queue(`INSERT INTO adp_join_requests (room_id, id, applicant, created_at, pending_until, body) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (room_id, id) DO UPDATE SET body = excluded.body, pending_until = excluded.pending_until`,
		jr.Request.RoomID, jr.Request.ID, jr.Request.Applicant.String(), jr.Request.CreatedAt, pendingUntil, body)
	err = s.pool.SendBatch(ctx, b).Close()
	if err == nil {
		return nil
	}
	if assertion(err) == "nonce" {
		max, _, rerr := s.MaxNonce(ctx, n.Actor)
		if rerr != nil {
			return rerr
		}
		return adphost.NonceError(max)
	}
	return fmt.Errorf("pgstore: %w", err)
}

// JoinRequest implements adphost.Store.
func (s *Store) JoinRequest(ctx context.Context, roomID, id string) (*adp.JoinRequestResource, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM adp_join_requests WHERE room_id = $1 AND id = $2`, roomID, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return decode[adp.JoinRequestResource](b)
}

// JoinRequests implements adphost.Store.
func (s *Store) JoinRequests(ctx context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	rows, err := s.pool.Query(ctx, `SELECT body FROM adp_join_requests WHERE room_id = $1 ORDER BY created`, roomID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, bodyRow[adp.JoinRequestResource])
}

// ApplicantJoinRequests implements adphost.JoinRequestIndex, through an
// index on (room, applicant).
func (s *Store) ApplicantJoinRequests(ctx context.Context, roomID string, applicant identity.AgentID) ([]*adp.JoinRequestResource, error) {
	rows, err := s.pool.Query(ctx, `SELECT body FROM adp_join_requests WHERE room_id = $1 AND applicant = $2 ORDER BY created`,
		roomID, applicant.String())
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, bodyRow[adp.JoinRequestResource])
}

// CountPendingJoinRequests implements adphost.JoinRequestIndex, through a
// partial index on the pending requests' expiry.
func (s *Store) CountPendingJoinRequests(ctx context.Context, roomID string, now int64) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM adp_join_requests WHERE room_id = $1 AND pending_until > $2`, roomID, now).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgstore: %w", err)
	}
	return n, nil
}

// PendingJoinRequests implements adphost.JoinRequestIndex, through a
// partial index on the pending requests' expiry.
func (s *Store) PendingJoinRequests(ctx context.Context, roomID string, now int64) ([]*adp.JoinRequestResource, error) {
	rows, err := s.pool.Query(ctx, `SELECT body FROM adp_join_requests WHERE room_id = $1 AND pending_until > $2 ORDER BY created_at, id`,
		roomID, now)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, bodyRow[adp.JoinRequestResource])
}

// JoinRequestsAfter implements adphost.JoinRequestIndex, through an index
// on (room, created_at, id).
func (s *Store) JoinRequestsAfter(ctx context.Context, roomID string, after adphost.JoinRequestKey, limit int) ([]*adp.JoinRequestResource, error) {
	rows, err := s.pool.Query(ctx, `SELECT body FROM adp_join_requests WHERE room_id = $1 AND (created_at, id) > ($2, $3)
		ORDER BY created_at, id LIMIT $4`, roomID, after.CreatedAt, after.ID, max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, bodyRow[adp.JoinRequestResource])
}

// PutStatus implements adphost.Store.
func (s *Store) PutStatus(ctx context.Context, st *adp.AgentStatus) error {
	b, err := json.Marshal(st, json.Deterministic(true))
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO adp_statuses (room_id, agent, body) VALUES ($1, $2, $3)
		ON CONFLICT (room_id, agent) DO UPDATE SET body = excluded.body`, st.RoomID, st.AgentID.String(), b)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// DeleteStatus implements adphost.Store.
func (s *Store) DeleteStatus(ctx context.Context, roomID string, agent identity.AgentID) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM adp_statuses WHERE room_id = $1 AND agent = $2`, roomID, agent.String()); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// Statuses implements adphost.Store.
func (s *Store) Statuses(ctx context.Context, roomID string) ([]*adp.AgentStatus, error) {
	rows, err := s.pool.Query(ctx, `SELECT body FROM adp_statuses WHERE room_id = $1 ORDER BY agent`, roomID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return collect(rows, bodyRow[adp.AgentStatus])
}

func bodyRow[T any](r pgx.CollectableRow) (*T, error) {
	var b []byte
	if err := r.Scan(&b); err != nil {
		return nil, err
	}
	return decode[T](b)
}

func decode[T any](b []byte) (*T, error) {
	t := new(T)
	if err := strictjson.Unmarshal(b, t); err != nil {
		return nil, fmt.Errorf("pgstore: stored value: %w", err)
	}
	return t, nil
}

// MaxNonce implements adphost.Store.
func (s *Store) MaxNonce(ctx context.Context, actor identity.AgentID) (int64, int64, error) {
	var n, exp int64
	err := s.pool.QueryRow(ctx, `SELECT nonce, expires_at FROM adp_nonces WHERE actor = $1`, actor.String()).Scan(&n, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("pgstore: %w", err)
	}
	return n, exp, nil
}

// QuotaUsed implements adphost.Store.
func (s *Store) QuotaUsed(ctx context.Context, q adphost.Quota) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM adp_quotas, unnest(uses) AS u WHERE key = $1 AND u > $2::bigint - $3::bigint`,
		q.Key, q.Now, q.Window).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgstore: %w", err)
	}
	return n, nil
}

// TakeQuota implements adphost.Store.
func (s *Store) TakeQuota(ctx context.Context, q adphost.Quota) error {
	b := &pgx.Batch{}
	queueQuota(b, q, false)
	br := s.pool.SendBatch(ctx, b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return adphost.QuotaError(q)
	}
	return nil
}

// Listen reports every appended record's room and seq, from any process
// on the database, until ctx ends. It holds its own connection, and
// reconnects with backoff when it is lost (calling lost, if not nil, so
// that the caller checks its rooms for what it missed meanwhile). It
// returns ctx's error.
func (s *Store) Listen(ctx context.Context, notify func(roomID string, seq int64), lost func()) error {
	wait := 50 * time.Millisecond
	for {
		err := s.listenOnce(ctx, notify, func() { wait = 50 * time.Millisecond })
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err
		if lost != nil {
			lost()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, notify func(string, int64), connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		room, seqText, ok := strings.Cut(n.Payload, " ")
		seq, err := strconv.ParseInt(seqText, 10, 64)
		if ok && err == nil {
			notify(room, seq)
		}
	}
}
