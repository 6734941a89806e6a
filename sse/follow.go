package sse

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	gosse "github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
)

// Follow subscribes to the room's live stream and returns an iterator of
// its items: every accepted record after opts.Start exactly once, in seq
// order, verified, interleaved with the notices and recoverable errors
// (KindError) as they happen.
//
// The iterator yields a non-nil error once, as its last value, when the
// subscription ends: the host's *identity.Error for a permanent refusal
// (401, 403, 404 or another 4xx), the verification error when the history
// itself kept failing verification (Options.MaxFailedSyncs), or ctx.Err()
// when ctx is done. Leaving the loop early ends the subscription too.
// Either way every goroutine Follow started has exited when the iterator
// returns.
//
// The iterator may be ranged over once at a time. With Options.Replica,
// others may read and admit into the replica meanwhile (a Client writing
// to the room): the records they admit are delivered too, in order.
func Follow(ctx context.Context, opts *Options) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		f, err := newFollower(opts)
		if err == nil {
			err = f.settleDraft(ctx)
		}
		if err != nil {
			yield(Item{}, err)
			return
		}
		f.yield = yield
		f.run(ctx)
	}
}

// follower is one run of Follow. All fields except lastSeq and prechecked
// belong to the goroutine ranging over the iterator.
type follower struct {
	o     Options
	url   string
	yield func(Item, error) bool

	prev    *adp.Record // the last verified record, or a stub for the start
	lastSeq atomic.Int64
	pending map[int64]held // live records beyond a gap
	// pendingBytes is the wire size of the held records.
	pendingBytes int
	stopped      bool // the consumer left the loop
	// prechecked holds the seqs ahead of lastSeq whose signature the
	// reading goroutine checked (at most MaxPending; that goroutine's).
	prechecked map[int64]struct{}
}

func newFollower(opts *Options) (*follower, error) {
	if opts == nil {
		return nil, errors.New("sse: nil Options")
	}
	f := &follower{o: *opts, pending: map[int64]held{}}
	o := &f.o
	if rep := o.Replica; rep != nil {
		switch {
		case o.RoomID == "":
			o.RoomID = rep.ID()
		case o.RoomID != rep.ID():
			return nil, errors.New("sse: Options.Replica is another room's")
		}
		if c := o.Client; c != nil {
			if own, err := c.Replica(rep.ID()); err != nil || own != rep {
				return nil, errors.New("sse: Options.Replica is not the client's replica of the room (adp.Client.Replica)")
			}
		}
	}
	if c := o.Client; c != nil {
		if o.API == "" {
			o.API = c.Origin().String() + "/v1"
		}
		if o.Signer == nil {
			o.Signer = c.Signer()
		}
		if o.History == nil {
			o.History = HistoryFunc(c.Events)
		}
		if o.HTTPClient == nil {
			o.HTTPClient = c.HTTPClient()
		}
		if o.Origins == nil {
			o.Origins = c.OriginOptions()
		}
		if o.Mint == nil {
			o.Mint = &identity.MintOptions{Now: c.Clock()}
		} else if o.Mint.Now == nil {
			m := *o.Mint
			m.Now = c.Clock()
			o.Mint = &m
		}
	}
	switch {
	case o.RoomID == "":
		return nil, errors.New("sse: Options.RoomID is empty")
	case o.Signer == nil:
		return nil, errors.New("sse: Options.Signer is nil")
	case o.History == nil:
		return nil, errors.New("sse: Options.History is nil")
	}
	if o.RoomID == "." || o.RoomID == ".." {
		return nil, fmt.Errorf("sse: Options.RoomID %q is not a room ID", o.RoomID)
	}
	api := strings.TrimSuffix(o.API, "/")
	u, err := url.Parse(api)
	if err != nil || u.Scheme == "" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("sse: Options.API %q is not an absolute URL without query", o.API)
	}
	// The room ID is one escaped path segment: it cannot climb the path.
	f.url = api + "/rooms/" + url.PathEscape(o.RoomID) + "/events/live"
	// An origin the tokens cannot name would fail every attempt: refuse it
	// now (https, or loopback http when Origins allows it).
	if _, err := identity.OriginOf(u, o.Origins); err != nil {
		return nil, fmt.Errorf("sse: Options.API: %w", err)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxEventSize <= 0 {
		o.MaxEventSize = DefaultMaxEventSize
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if o.MaxFailedSyncs <= 0 {
		o.MaxFailedSyncs = DefaultMaxFailedSyncs
	}
	o.Backoff = o.Backoff.withDefaults()

	start := o.Start
	if o.Replica != nil {
		l := o.Replica.Latest()
		start = adp.RecordRef{Seq: l.Seq, Hash: l.Hash}
	}
	if start.Seq < 0 {
		return nil, errors.New("sse: Options.Start.Seq is negative")
	}
	if start.Seq > 0 {
		// CheckLink needs only these fields of the previous record.
		f.prev = &adp.Record{RoomID: o.RoomID, Seq: start.Seq, Hash: start.Hash}
		f.lastSeq.Store(start.Seq)
	}
	return f, nil
}

// rawKind tells what the connection goroutine reports.
type rawKind uint8

const (
	rawConnected rawKind = iota + 1 // a stream was accepted (200)
	rawEvent                        // an SSE event
	rawRetry                        // an attempt failed and will be retried
)

type raw struct {
	kind rawKind
	typ  string
	data string
	size int // the event's data size
	err  error
	// rec is a room.event's record, parsed on the reading goroutine (or
	// the parse error in err).
	rec *adp.Record
}

// prepare turns an SSE event into a raw item on the reading goroutine,
// parsing a record there, next to the read.
func (f *follower) prepare(typ, data string) raw {
	r := raw{kind: rawEvent, typ: typ, data: data, size: len(data)}
	if typ != EventRecord {
		return r
	}
	r.data = ""
	r.rec, r.err = adp.ParseRecordIn(f.o.Draft, []byte(data))
	return r
}

// settleDraft sets Options.Draft from the replica or the client, refusing
// an explicit one that disagrees.
func (f *follower) settleDraft(ctx context.Context) error {
	o := &f.o
	var d adp.Draft
	var from string
	switch {
	case o.Replica != nil:
		d, from = o.Replica.Draft(), "Options.Replica"
	case o.Client != nil:
		var err error
		if d, err = o.Client.Draft(ctx); err != nil {
			return err
		}
		from = "Options.Client's host"
	default:
		o.Draft = o.Draft.OrDefault()
		return nil
	}
	if o.Draft != 0 && o.Draft.OrDefault() != d {
		return fmt.Errorf("sse: Options.Draft is the %s draft; %s follows the %s draft", o.Draft.OrDefault(), from, d)
	}
	o.Draft = d
	return nil
}

// minPerWorker is the fewest signatures per goroutine: a stream read
// brings a few records (4 KiB), and each costs ~40 µs, far above the cost
// of a goroutine.
const minPerWorker = 2

// checkAhead checks the signatures of a batch's records that are ahead of
// the last delivered one and of the followed room, before the batch goes
// to the ordered stage: on the reading goroutine, and on up to GOMAXPROCS
// goroutines for a large batch (a backlog after a reconnect). An Envelope
// remembers a success, so the ordered stage's own check is then free; a
// failure is repeated, and reported, there. The goroutines end before
// checkAhead returns.
func (f *follower) checkAhead(batch []raw) {
	adp.VerifySignatures(f.ahead(batch), minPerWorker)
}

// ahead returns the records of batch to pre-check: ahead of the last
// delivered one, within MaxPending of it, of the followed room, and not
// a seq already pre-checked. A further copy of a seq (a duplicate ahead of
// a gap, which a hostile stream can repeat at will) is recognised here,
// before any signature check: the ordered stage drops it as a duplicate
// of the held record, or verifies it in full if it is the one held, so
// skipping its pre-check never skips a check. Reading goroutine only.
func (f *follower) ahead(batch []raw) []*adp.Record {
	last := f.lastSeq.Load()
	for seq := range f.prechecked {
		if seq <= last {
			delete(f.prechecked, seq)
		}
	}
	var todo []*adp.Record
	for _, r := range batch {
		rec := r.rec
		if rec == nil || rec.RoomID != f.o.RoomID || rec.Seq <= last || rec.Seq > last+int64(f.o.MaxPending) {
			continue
		}
		if f.o.Replica != nil && f.o.Replica.Known(rec) {
			continue // verified already: the replica matches it instead
		}
		if _, done := f.prechecked[rec.Seq]; done {
			continue
		}
		if f.prechecked == nil {
			f.prechecked = map[int64]struct{}{}
		}
		f.prechecked[rec.Seq] = struct{}{}
		todo = append(todo, rec)
	}
	return todo
}

// Batches between the reading goroutine and the ordered stage: with two
// batches queued, what a stream can make the subscriber hold there stays
// within a few MiB.
const (
	maxBatch      = 64
	maxBatchBytes = 1 << 20
)

// errStopped ends a sync because the consumer left the loop.
var errStopped = errors.New("sse: consumer stopped")

// verifyError marks a failed verification of a record the history served.
type verifyError struct{ err error }

func (e *verifyError) Error() string { return e.err.Error() }
func (e *verifyError) Unwrap() error { return e.err }

func (f *follower) run(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	events := make(chan []raw, 2)
	done := make(chan error, 1)
	go func() { done <- f.connect(ctx, events) }()
	finished := false
	defer func() {
		cancel()
		if !finished {
			<-done
		}
	}()

	b := newBackoff(f.o.Backoff)
	var timer *time.Timer
	var timerC <-chan time.Time
	arm := func(d time.Duration) {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		timerC = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var lastSync time.Time
	failed := 0

	// syncNow backfills from the history; it reports false when the
	// iterator must end (the final value already yielded, if any).
	syncNow := func() bool {
		timerC = nil
		lastSync = time.Now()
		gap, err := f.sync(ctx)
		switch {
		case f.stopped:
			return false
		case ctx.Err() != nil:
			f.yield(Item{}, ctx.Err())
			return false
		case err == nil:
			failed = 0
			b.reset()
			if gap {
				arm(b.next())
			}
			return true
		case permanent(err):
			f.yield(Item{}, fmt.Errorf("sse: history: %w", err))
			return false
		}
		var ve *verifyError
		if errors.As(err, &ve) {
			if failed++; failed >= f.o.MaxFailedSyncs {
				f.yield(Item{}, fmt.Errorf("sse: history failed verification %d times: %w", failed, ve.err))
				return false
			}
		}
		if !f.emit(fmt.Errorf("sse: history: %w", err)) {
			return false
		}
		arm(b.next())
		return true
	}
	// requestSync syncs now unless one is scheduled, or one ran too
	// recently: a hostile stream cannot turn every bad line into a
	// history request.
	requestSync := func() bool {
		if timerC != nil {
			return true
		}
		if wait := f.o.Backoff.Initial - time.Since(lastSync); wait > 0 {
			arm(wait)
			return true
		}
		return syncNow()
	}

	for {
		select {
		case <-ctx.Done():
			f.yield(Item{}, ctx.Err())
			return
		case err := <-done:
			finished = true
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			f.yield(Item{}, connectError(err))
			return
		case <-timerC:
			if !syncNow() {
				return
			}
		case batch := <-events:
			for _, ev := range batch {
				if !f.handle(ctx, ev, b, syncNow, requestSync) {
					return
				}
			}
		}
	}
}

// handle processes one item from the reading goroutine; it reports false
// when the iterator must end.
func (f *follower) handle(ctx context.Context, ev raw, b *backoff, syncNow, requestSync func() bool) bool {
	switch ev.kind {
	case rawConnected:
		// §17.3: the stream is open; now the history after the last
		// verified record, then the live records.
		b.reset()
		return syncNow()
	case rawRetry:
		return f.emit(fmt.Errorf("sse: reconnecting: %w", ev.err))
	}
	resync, ok := f.onEvent(ctx, ev)
	if ok && resync {
		ok = requestSync()
	}
	return ok
}

// onEvent handles one SSE event. It reports whether a backfill is needed
// and whether to go on.
func (f *follower) onEvent(ctx context.Context, ev raw) (resync, ok bool) {
	typ, data := ev.typ, ev.data
	switch typ {
	case EventRecord:
		return f.onRecord(ctx, ev.rec, ev.size, ev.err)
	case EventAgentStatus:
		st, err := parseAgentStatus(f.o.RoomID, []byte(data))
		if err != nil {
			return false, f.emit(fmt.Errorf("sse: %s: %w", typ, err))
		}
		return false, f.deliverItem(Item{Kind: KindAgentStatus, AgentStatus: st})
	case EventJoinRequest:
		jr, err := parseJoinRequest(f.o.RoomID, []byte(data))
		if err != nil {
			return false, f.emit(fmt.Errorf("sse: %s: %w", typ, err))
		}
		return false, f.deliverItem(Item{Kind: KindJoinRequest, JoinRequest: jr})
	}
	return false, true // other event types are not ADP's: ignore them
}

// onRecord handles a live room.event.
func (f *follower) onRecord(ctx context.Context, rec *adp.Record, size int, err error) (resync, ok bool) {
	if err == nil && rec.RoomID != f.o.RoomID {
		err = identity.Errorf(adp.CodeInvalidRecord, "record %d: room_id is not the followed room", rec.Seq)
	}
	if err != nil {
		return true, f.emit(fmt.Errorf("sse: live record dropped: %w", err))
	}
	if !f.fromReplica() {
		return false, false
	}
	last := f.lastSeq.Load()
	switch {
	case rec.Seq <= last: // a duplicate, or one the history already gave
		return false, true
	case rec.Seq > last+1: // a gap: hold it and fill the gap from history
		// Only records that can follow soon are held: one far ahead
		// cannot take a place (the history brings it when it is due).
		if _, dup := f.pending[rec.Seq]; !dup && rec.Seq <= last+int64(f.o.MaxPending) &&
			len(f.pending) < f.o.MaxPending && f.pendingBytes+size <= f.o.MaxPendingBytes {
			f.pending[rec.Seq] = held{rec, size}
			f.pendingBytes += size
		}
		return true, true
	}
	if err := f.verify(ctx, rec); err != nil {
		return true, f.emit(fmt.Errorf("sse: live record %d dropped: %w", rec.Seq, err))
	}
	if !f.deliver(rec) {
		return false, false
	}
	bad, ok := f.drain(ctx)
	return bad, ok
}

// sync pages the history after the last verified record, delivering each
// record once verified, then drains the held live records. gap reports
// that held records remain beyond a gap the history did not fill yet.
func (f *follower) sync(ctx context.Context) (gap bool, err error) {
	if !f.fromReplica() {
		return false, errStopped
	}
	for rec, err := range f.o.History.Records(ctx, f.o.RoomID, f.lastSeq.Load()) {
		if err != nil {
			var e *identity.Error
			if errors.As(err, &e) && e.Status == 0 && ctx.Err() == nil {
				// A protocol error that did not come over the wire: the
				// History verified a record itself and refused it.
				return false, &verifyError{err}
			}
			return false, err
		}
		last := f.lastSeq.Load()
		if rec.Seq <= last {
			continue
		}
		if rec.Seq != last+1 {
			return false, &verifyError{identity.Errorf(adp.CodeInvalidRecord, "history skips from seq %d to %d", last, rec.Seq)}
		}
		if err := f.verify(ctx, rec); err != nil {
			return false, &verifyError{err}
		}
		if !f.deliver(rec) {
			return false, errStopped
		}
	}
	bad, ok := f.drain(ctx)
	if !ok {
		return false, errStopped
	}
	return bad || len(f.pending) > 0, nil
}

// held is a live record beyond a gap and its wire size.
type held struct {
	rec  *adp.Record
	size int
}

// drain delivers held live records that now follow the last verified one
// and discards those already delivered. bad reports a held record that
// failed verification (reported and dropped).
func (f *follower) drain(ctx context.Context) (bad, ok bool) {
	last := f.lastSeq.Load()
	for seq, h := range f.pending {
		if seq <= last {
			delete(f.pending, seq)
			f.pendingBytes -= h.size
		}
	}
	for {
		h, found := f.pending[f.lastSeq.Load()+1]
		if !found {
			return bad, true
		}
		delete(f.pending, h.rec.Seq)
		f.pendingBytes -= h.size
		if err := f.verify(ctx, h.rec); err != nil {
			// The next record stays missing: the history fills it.
			return true, f.emit(fmt.Errorf("sse: live record %d dropped: %w", h.rec.Seq, err))
		}
		if !f.deliver(h.rec) {
			return bad, false
		}
	}
}

// fromReplica delivers the records others admitted to the replica after
// the last delivered one, while the replica still keeps them (a Client's
// write, its sync), so they are not read from the history again. It
// reports false when the consumer left.
func (f *follower) fromReplica() bool {
	if f.o.Replica == nil {
		return true
	}
	recs, ok := f.o.Replica.Since(f.lastSeq.Load())
	if !ok {
		return true // the history brings them
	}
	for _, rec := range recs {
		if !f.deliver(rec) {
			return false
		}
	}
	return true
}

// verify checks rec as the next record of the chain: with a replica by
// every room rule, otherwise the chain link, the record hash, the envelope
// hash and signature, and that the event belongs to this room.
func (f *follower) verify(ctx context.Context, rec *adp.Record) error {
	if f.o.Replica != nil {
		return f.o.Replica.Admit(ctx, rec)
	}
	if rec.RoomID != f.o.RoomID {
		return identity.Errorf(adp.CodeInvalidRecord, "record %d: room_id is not the followed room", rec.Seq)
	}
	if err := adp.CheckLink(f.prev, rec); err != nil {
		return err
	}
	if err := rec.CheckHash(); err != nil {
		return err
	}
	if err := rec.Envelope.Verify(); err != nil {
		return err
	}
	ev, err := adp.ParseEvent(rec.Envelope)
	if err != nil {
		return err
	}
	if (ev.Type == adp.TypeRoomCreate) != (rec.Seq == 1) {
		return identity.Errorf(adp.CodeInvalidRecord, "record %d: room.create must be exactly the first record", rec.Seq)
	}
	if ev.Type != adp.TypeRoomCreate && ev.RoomID != f.o.RoomID {
		return identity.Errorf(identity.CodeInvalidEvent, "record %d: the event was signed for another room", rec.Seq)
	}
	return nil
}

func (f *follower) deliver(rec *adp.Record) bool {
	f.prev = rec
	f.lastSeq.Store(rec.Seq)
	return f.deliverItem(Item{Kind: KindRecord, Record: rec})
}

func (f *follower) emit(err error) bool { return f.deliverItem(Item{Kind: KindError, Err: err}) }

func (f *follower) deliverItem(it Item) bool {
	if f.stopped {
		return false
	}
	if !f.yield(it, nil) {
		f.stopped = true
	}
	return !f.stopped
}

// permanent reports whether a history error ends the subscription: the
// host answered with a 4xx other than 429.
func permanent(err error) bool {
	var e *identity.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests
}

// connectError is the final error of a connection loop that gave up.
func connectError(err error) error {
	var e *identity.Error
	if errors.As(err, &e) {
		return fmt.Errorf("sse: subscription refused: %w", e)
	}
	return fmt.Errorf("sse: %w", err)
}

// connect runs the go-sse connection loop until ctx is done or the host
// refuses permanently, reporting to the run loop through events.
func (f *follower) connect(ctx context.Context, events chan<- []raw) error {
	// Items travel in batches: the reading goroutine hands over what it
	// parsed when it is about to wait for the network (or the batch is
	// full), so a busy stream costs one hand-off per read, not per event.
	var batch []raw
	var batchBytes int
	flush := func() {
		if len(batch) == 0 {
			return
		}
		f.checkAhead(batch)
		select {
		case events <- batch:
		case <-ctx.Done():
		}
		batch, batchBytes = nil, 0
	}
	send := func(r raw) {
		batch = append(batch, r)
		if batchBytes += r.size; len(batch) >= maxBatch || batchBytes >= maxBatchBytes || r.kind != rawEvent {
			flush()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return err
	}
	var base http.RoundTripper = http.DefaultTransport
	if f.o.HTTPClient != nil && f.o.HTTPClient.Transport != nil {
		base = f.o.HTTPClient.Transport
	}
	tokens := &httpc.Options{Signer: f.o.Signer, Origins: f.o.Origins}
	if f.o.Mint != nil {
		tokens.TokenTTL, tokens.Now = f.o.Mint.TTL, f.o.Mint.Now
	}
	hc := &http.Client{
		Transport: &transport{
			authorize:  httpc.New(tokens).Authorize,
			base:       base,
			idle:       f.o.IdleTimeout,
			lastSeq:    &f.lastSeq,
			beforeRead: flush,
			maxWait:    f.o.Backoff.Max,
		},
		// The SDK's redirect policy (same origin only); a redirect it
		// refuses reaches the validator as a 3xx and ends the
		// subscription instead of being retried.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if httpc.CheckSameOrigin(req, via, f.o.Origins) != nil || len(via) >= 10 {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	b := f.o.Backoff
	c := &gosse.Client{
		HTTPClient: hc,
		ResponseValidator: func(resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				return identity.ReadError(resp)
			}
			mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if err != nil || mt != "text/event-stream" {
				return fmt.Errorf("sse: response Content-Type %q is not text/event-stream", resp.Header.Get("Content-Type"))
			}
			send(raw{kind: rawConnected})
			return nil
		},
		OnRetry: func(err error, _ time.Duration) { send(raw{kind: rawRetry, err: err}) },
		Backoff: gosse.Backoff{
			InitialInterval: b.Initial,
			Multiplier:      b.Multiplier,
			Jitter:          b.Jitter,
			MaxInterval:     b.Max,
		},
	}
	conn := c.NewConnection(req)
	conn.Buffer(nil, f.o.MaxEventSize)
	conn.SubscribeToAll(func(e gosse.Event) { send(f.prepare(e.Type, e.Data)) })
	return conn.Connect()
}

// backoff is the resync schedule (go-sse schedules reconnects itself).
type backoff struct {
	b   Backoff
	cur time.Duration
}

func newBackoff(b Backoff) *backoff { return &backoff{b: b, cur: b.Initial} }

func (b *backoff) reset() { b.cur = b.b.Initial }

func (b *backoff) next() time.Duration {
	d := b.cur
	b.cur = min(time.Duration(float64(b.cur)*b.b.Multiplier), b.b.Max)
	j := b.b.Jitter * float64(d)
	return time.Duration(float64(d) - j + rand.Float64()*2*j)
}
