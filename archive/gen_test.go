package archive_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha3"
	"encoding/base64"
	"strconv"
	"sync"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// The generator writes a realistic room — a creator and eight speakers
// exchanging small messages, reactions, review findings, polls and votes
// — as canonical JSONL, written by hand from the specification rather
// than through the SDK's builders (so it doubles as "another
// implementation"). Everything is deterministic: keys from fixed seeds,
// a fixed clock, Ed25519's deterministic signatures.
//
// Only signing is expensive, and the record chain does not depend on
// signatures (record hashes cover the event hash, not the signature), so
// records are prepared in chunks in order and each chunk is signed in
// parallel.

const genRoomID = "d8genbenchroom000001"

type genAgent struct {
	priv ed25519.PrivateKey
	id   string
}

var genAgents = sync.OnceValue(func() []genAgent {
	out := make([]genAgent, 9)
	for i := range out {
		seed := bytes.Repeat([]byte{byte(0x40 + i)}, 32)
		priv := ed25519.NewKeyFromSeed(seed)
		id, _ := identity.AgentIDFromPublicKey(priv.Public().(ed25519.PublicKey))
		out[i] = genAgent{priv, id.String()}
	}
	return out
})

// genRec is one prepared record awaiting its signature.
type genRec struct {
	agent                  int
	seq, receivedAt        int64
	canon                  []byte // JCS(event)
	evHash, preHash, rHash envelope.Hash
	sig                    []byte
}

type generator struct {
	later    bool // the 2026-09-24 draft: accepted_at, host, open roles, bases on the latest record
	n        int
	seq      int64
	now      int64
	head     envelope.Hash
	headSeq  int64
	latest   envelope.Hash
	lastMsg  envelope.Hash
	lastPoll envelope.Hash
	buf      []byte
}

var b64 = base64.RawURLEncoding

const genT0 = 1779753600000

// generate produces n records and calls emit with each canonical line
// (without its line feed, valid only during the call), signing on
// `workers` goroutines; it returns the manifest.
func generate(n, workers int, emit func(line []byte)) *archive.Manifest {
	return generateIn(adp.Draft20260704, n, workers, emit)
}

// generateIn is generate in draft d. In the 2026-09-24 draft the room
// names its host and opens the speaker role, every write is based on the
// latest record (which every class's rule admits), the head stays at the
// room.create (nothing after it is a contract or control write), and the
// manifest is §18's.
func generateIn(d adp.Draft, n, workers int, emit func(line []byte)) *archive.Manifest {
	g := &generator{n: n, now: genT0, later: d == adp.Draft20260924}
	agents := genAgents()
	dg := sha3.New256()
	dg.Write([]byte{'['})
	const chunk = 1024
	recs := make([]genRec, 0, chunk)
	var line []byte
	var last envelope.Hash
	for done := 0; done < n; {
		recs = recs[:0]
		for len(recs) < chunk && done < n {
			recs = append(recs, g.next(agents))
			done++
		}
		var wg sync.WaitGroup
		per := (len(recs) + workers - 1) / workers
		for w := 0; w < len(recs); w += per {
			wg.Add(1)
			go func(part []genRec) {
				defer wg.Done()
				for i := range part {
					part[i].sig = ed25519.Sign(agents[part[i].agent].priv, part[i].evHash[:])
				}
			}(recs[w:min(w+per, len(recs))])
		}
		wg.Wait()
		for i := range recs {
			r := &recs[i]
			line = line[:0]
			if g.later {
				line = append(line, `{"accepted_at":`...)
				line = strconv.AppendInt(line, r.receivedAt, 10)
				line = append(line, `,"envelope":{"event":`...)
			} else {
				line = append(line, `{"envelope":{"event":`...)
			}
			line = append(line, r.canon...)
			line = append(line, `,"hash":"`...)
			line = b64.AppendEncode(line, r.evHash[:])
			line = append(line, `","signature":"`...)
			line = b64.AppendEncode(line, r.sig)
			line = append(line, `"},"hash":"`...)
			line = b64.AppendEncode(line, r.rHash[:])
			line = append(line, `","pre_hash":`...)
			if r.seq == 1 {
				line = append(line, "null"...)
			} else {
				line = append(b64.AppendEncode(append(line, '"'), r.preHash[:]), '"')
			}
			if !g.later {
				line = append(line, `,"received_at":`...)
				line = strconv.AppendInt(line, r.receivedAt, 10)
			}
			line = append(line, `,"room_id":"`+genRoomID+`","seq":`...)
			line = strconv.AppendInt(line, r.seq, 10)
			line = append(line, '}')
			if r.seq > 1 {
				dg.Write([]byte{','})
			}
			dg.Write(line)
			emit(line)
			last = r.rHash
		}
	}
	dg.Write([]byte{']'})
	if g.later {
		url := "https://api.example.com/v1/rooms/" + genRoomID
		return &archive.Manifest{
			Draft: d, Protocol: adp.Protocol, Type: archive.ManifestType, RoomID: genRoomID, URL: url,
			GeneratedAt: g.now + 1000, LastSeq: int64(n), LastHash: last, Formats: map[string]string{"jsonl": url + "/archive.jsonl"},
		}
	}
	m := &archive.Manifest{
		Protocol: adp.Protocol, Type: archive.ManifestType, RoomID: genRoomID,
		GeneratedAt: g.now + 1000, EventCount: int64(n), FirstSeq: 1, LastSeq: int64(n), LastHash: last,
	}
	dg.Sum(m.EventsSHA3256[:0])
	m.ArchiveRoot = m.EventsSHA3256
	return m
}

const findingDef = `{"kind":"message","schema":{"additionalProperties":false,"properties":{"severity":{"enum":["low","medium","high"]},"summary":{"minLength":1,"type":"string"}},"required":["severity","summary"],"type":"object"},"title":"Review finding","type":"review.finding"}`

// next prepares the next record of the script.
func (g *generator) next(agents []genAgent) genRec {
	g.seq++
	g.now++
	seq := g.seq
	var typ, payload string
	agent := 1 + int(seq%8)
	signal := false
	switch {
	case seq == 1:
		agent, typ = 0, adp.TypeRoomCreate
		payload = `{"end_time":` + strconv.FormatInt(genT0+7*24*3600*1000, 10)
		if g.later {
			payload += `,"host":"https://api.example.com","policy":{"open_roles":["speaker"]}`
		}
		payload += `,"start_time":` + strconv.FormatInt(genT0, 10) +
			`,"topic":"Generated benchmark room","types":[{"use":"adp:reactions/1.0"},{"use":"adp:deliberation/1.0"},` + findingDef + `],"visibility":"public"}`
	case seq <= 9:
		agent, typ, signal = int(seq-1), adp.TypeRoomJoin, true
		payload = `{"role":"speaker"}`
	default:
		i := seq - 10
		switch i % 10 {
		case 0, 3, 6:
			typ = adp.TypeMessageCreate
			payload = `{"content":"Point ` + strconv.FormatInt(i, 10) + `: the retry loop can starve the writer queue under sustained load; back off with jitter.","content_type":"text/plain"}`
		case 1, 4, 7, 8:
			typ, signal = "reaction.create", true
			payload = `{"event_id":"` + g.lastMsg.String() + `","reaction":"agree"}`
		case 2:
			typ = "review.finding"
			payload = `{"severity":"medium","summary":"Finding ` + strconv.FormatInt(i, 10) + `: unbounded queue growth."}`
		case 5:
			typ = "poll.create"
			payload = `{"options":[{"id":"y","label":"Yes"},{"id":"n","label":"No"}],"poll_id":"p` + strconv.FormatInt(i, 10) + `","question":"Ship the fix?"}`
		case 9:
			typ, signal = "poll.vote", true
			payload = `{"option_ids":["y"],"poll_event_id":"` + g.lastPoll.String() + `"}`
		}
	}
	b := g.buf[:0]
	b = append(b, `{"actor":"`...)
	b = append(b, agents[agent].id...)
	if seq > 1 {
		baseSeq, baseHash := g.headSeq, g.head
		if signal || g.later {
			baseSeq, baseHash = seq-1, g.latest
		}
		b = append(b, `","base_hash":"`...)
		b = b64.AppendEncode(b, baseHash[:])
		b = append(b, `","base_seq":`...)
		b = strconv.AppendInt(b, baseSeq, 10)
		b = append(b, `,"created_at":`...)
	} else {
		b = append(b, `","created_at":`...)
	}
	b = strconv.AppendInt(b, g.now-1, 10)
	b = append(b, `,"nonce":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	b = append(b, `,"protocol":"agent-discourse/1.0"`...)
	if seq > 1 {
		b = append(b, `,"room_id":"`+genRoomID+`"`...)
	}
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `"}`...)
	g.buf = b
	r := genRec{agent: agent, seq: seq, receivedAt: g.now, canon: bytes.Clone(b), evHash: sha3.Sum256(b), preHash: g.latest}
	var rb []byte
	if g.later {
		rb = append(rb, `{"accepted_at":`...)
		rb = strconv.AppendInt(rb, g.now, 10)
		rb = append(rb, `,"envelope_hash":"`...)
	} else {
		rb = append(rb, `{"envelope_hash":"`...)
	}
	rb = b64.AppendEncode(rb, r.evHash[:])
	rb = append(rb, `","pre_hash":`...)
	if seq == 1 {
		rb = append(rb, "null"...)
	} else {
		rb = append(b64.AppendEncode(append(rb, '"'), g.latest[:]), '"')
	}
	if !g.later {
		rb = append(rb, `,"received_at":`...)
		rb = strconv.AppendInt(rb, g.now, 10)
	}
	rb = append(rb, `,"room_id":"`+genRoomID+`","seq":`...)
	rb = strconv.AppendInt(rb, seq, 10)
	rb = append(rb, '}')
	r.rHash = sha3.Sum256(rb)
	g.latest = r.rHash
	if !signal && (!g.later || seq == 1) {
		g.head, g.headSeq = r.rHash, seq
	}
	switch typ {
	case adp.TypeMessageCreate:
		g.lastMsg = r.evHash
	case "poll.create":
		g.lastPoll = r.evHash
	}
	return r
}
